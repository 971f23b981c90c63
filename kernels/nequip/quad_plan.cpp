/*
 * quad_plan.cpp: which lanes of a layer kernel's block sum which output channels of an e3nn
 * linear run by quads (node_ops.cuh linear_quads), planned on the host at upload. Plain C++ so
 * that the unit tests check it without a GPU (tests/unit/test_quad_plan.cpp).
 */
#include "nequip/quad_plan.h"

#include <algorithm>
#include <climits>
#include <functional>

#include "model/model.h"

namespace fnqcu {

/* Lays out a quads plan whose blocks have their slice counts g set: units (quad x slice) per
 * block, each block starting on a multiple of kQuadMaxSlices units (a quad's lanes aligned
 * within a warp); the total number of unit slots. */
int quad_layout(std::vector<QuadBlock> &plan, const std::vector<int> &quads)
{
    int end = 0;
    for (size_t b = 0; b < plan.size(); b++) {
        QuadBlock &q = plan[b];
        q.units = quads[b] * q.g;
        q.first = (end + kQuadMaxSlices - 1) / kQuadMaxSlices * kQuadMaxSlices;
        end = q.first + q.units;
    }
    return end;
}

/* The time a block of `threads` takes for a laid-out plan, in steps of one input channel, as
 * linear_quads runs it: each warp takes every threads-th group of 32 unit slots, its lanes in
 * lockstep (the group costs its longest slice, a fixed per-unit part and the butterfly's
 * steps), and the block waits for its slowest warp. A step costs more the more slices a quad
 * has: a warp's loads then touch g rows of weights and g inputs instead of one
 * (bench/NOTES.md v8.1: without this term the forward linear_2's sums were split 4-8 ways and
 * its kernels got slower; 50 % per extra slice gave the fastest plans). */
int64_t quad_makespan(const std::vector<QuadBlock> &plan, int n_units, int threads)
{
    constexpr int kUnitCost = 6, kButterflyStepCost = 3; /* in channel steps, rough */
    constexpr int kSliceCostPct = 50;                   /* per slice beyond the first */
    std::vector<int> len(n_units, -1), g(n_units, 1);
    for (const QuadBlock &q : plan)
        for (int u = 0; u < q.units; u++) {
            const int slice = u % q.g;
            len[q.first + u] = (slice + 1) * q.K / q.g - slice * q.K / q.g;
            g[q.first + u] = q.g;
        }
    int64_t slowest = 0;
    for (int w = 0; w < threads / 32; w++) {
        int64_t t = 0;
        for (int base = 32 * w; base < n_units; base += threads) {
            int longest = -1, widest = 1;
            for (int l = base; l < std::min(base + 32, n_units); l++)
                if (len[l] >= 0)
                    longest = std::max(longest, len[l]), widest = std::max(widest, g[l]);
            if (longest >= 0)
                t += longest + (int64_t)longest * (widest - 1) * kSliceCostPct / 100 + kUnitCost +
                     kButterflyStepCost * __builtin_ctz(widest);
        }
        slowest = std::max(slowest, t);
    }
    return slowest;
}

/* The quads plan of a linear in one direction (Linear::quads, node_ops.cuh linear_quads), or
 * an empty one where quads do not fit: a destination multiplicity not a multiple of 4 (one
 * vector load per quad of weights) or two instructions into one destination block. Long sums
 * are split over up to kQuadMaxSlices lanes so that the block's threads finish together: of
 * the plans that split every sum into slices no longer than some length L (L from the sums'
 * lengths halved 0-3 times), the one quad_makespan says is fastest. */
std::vector<QuadBlock> quad_plan(const struct fnq_linear &h, const struct fnq_irreps &src,
                                 const struct fnq_irreps &dst, bool transpose, int threads,
                                 int *n_units)
{
    *n_units = 0;
    std::vector<QuadBlock> plan(dst.n_blocks);
    std::vector<int> quads(dst.n_blocks);
    for (int b = 0; b < dst.n_blocks; b++) {
        if (dst.block[b].mul % 4 != 0)
            return {};
        QuadBlock &q = plan[b];
        q.k = -1, q.K = 0, q.g = 1;
        for (int i = 0; i < h.n_instr; i++) {
            const struct fnq_linear_instr &in = h.instr[i];
            if ((transpose ? in.in_block : in.out_block) != b)
                continue;
            if (q.k >= 0)
                return {};
            q.k = i;
            q.K = src.block[transpose ? in.out_block : in.in_block].mul;
        }
        quads[b] = (2 * dst.block[b].l + 1) * (dst.block[b].mul / 4);
    }
    std::vector<int> lengths;
    for (const QuadBlock &q : plan)
        for (int i = 0; i < 4; i++)
            if ((q.K >> i) >= 4)
                lengths.push_back(q.K >> i);
    std::sort(lengths.begin(), lengths.end(), std::greater<int>());
    std::vector<QuadBlock> best;
    int64_t best_time = INT64_MAX;
    for (int L : lengths) { /* longest first: of equally fast plans the one with fewer units */
        for (QuadBlock &q : plan) {
            q.g = 1;
            while (q.g < kQuadMaxSlices && q.K > L * q.g && q.K / (2 * q.g) >= 4)
                q.g *= 2;
        }
        const int end = quad_layout(plan, quads);
        const int64_t time = quad_makespan(plan, end, threads);
        if (time < best_time)
            best_time = time, best = plan, *n_units = end;
    }
    if (best.empty()) { /* no input reaches any block: one unit per quad writes the zeros */
        *n_units = quad_layout(plan, quads);
        return plan;
    }
    return best;
}

} // namespace fnqcu
