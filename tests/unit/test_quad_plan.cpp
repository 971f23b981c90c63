/*
 * test_quad_plan.cpp: the quads plan of the CUDA node linears (kernels/nequip/quad_plan.cpp) on the
 * linears of a Nequix layer and on ones that must not run by quads: every output quad gets
 * exactly one unit per slice, blocks start aligned and do not overlap, slices partition each
 * sum, and the chosen plan is no slower by its own model than not splitting at all.
 */
#include <stdio.h>
#include <string.h>

#include <vector>

#include "model/model.h"
#include "nequip/quad_plan.h"

using fnqcu::QuadBlock;

static int failures;
#define EXPECT(cond, ...)                                                                       \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                         \
            printf(__VA_ARGS__);                                                                \
            printf("\n");                                                                       \
            failures++;                                                                         \
        }                                                                                       \
    } while (0)

static fnq_irreps irreps(const std::vector<std::pair<int, int>> &mul_l)
{
    fnq_irreps ir;
    memset(&ir, 0, sizeof(ir));
    ir.n_blocks = (int32_t)mul_l.size();
    int64_t off = 0;
    for (size_t b = 0; b < mul_l.size(); b++) {
        ir.block[b].mul = mul_l[b].first;
        ir.block[b].l = mul_l[b].second;
        ir.block[b].parity = mul_l[b].second % 2 ? -1 : 1;
        ir.block[b].offset = off;
        off += (int64_t)mul_l[b].first * (2 * mul_l[b].second + 1);
    }
    ir.dim = off;
    return ir;
}

/* A linear with one instruction per pair of blocks of equal l (e3nn's o3.Linear). */
struct TestLinear {
    std::vector<fnq_linear_instr> instr;
    fnq_linear h;
    TestLinear(const fnq_irreps &in, const fnq_irreps &out)
    {
        int64_t w = 0;
        for (int a = 0; a < in.n_blocks; a++)
            for (int b = 0; b < out.n_blocks; b++)
                if (in.block[a].l == out.block[b].l) {
                    instr.push_back({a, b, w, 1.0});
                    w += (int64_t)in.block[a].mul * out.block[b].mul;
                }
        memset(&h, 0, sizeof(h));
        h.n_instr = (int32_t)instr.size();
        h.instr = instr.data();
        h.n_w = w;
    }
};

static void check_plan(const char *name, const fnq_linear &h, const fnq_irreps &src,
                       const fnq_irreps &dst, bool transpose)
{
    const int threads = 256;
    int n_units = -1;
    std::vector<QuadBlock> plan = fnqcu::quad_plan(h, src, dst, transpose, threads, &n_units);
    EXPECT((int)plan.size() == dst.n_blocks, "%s: %zu blocks planned, %d expected", name,
           plan.size(), dst.n_blocks);
    if ((int)plan.size() != dst.n_blocks)
        return;
    int end = 0;
    std::vector<int> quads;
    for (int b = 0; b < dst.n_blocks; b++) {
        const QuadBlock &q = plan[b];
        const int n_quads = (2 * dst.block[b].l + 1) * dst.block[b].mul / 4;
        quads.push_back(n_quads);
        EXPECT(q.g == 1 || q.g == 2 || q.g == 4 || q.g == 8, "%s block %d: g = %d", name, b, q.g);
        EXPECT(q.first % fnqcu::kQuadMaxSlices == 0 && q.first >= end,
               "%s block %d: starts at %d (previous block ends at %d)", name, b, q.first, end);
        EXPECT(q.units == n_quads * q.g, "%s block %d: %d units for %d quads x %d slices", name,
               b, q.units, n_quads, q.g);
        EXPECT(q.g == 1 || q.K / q.g >= 4, "%s block %d: slices of %d of %d channels", name, b,
               q.K / q.g, q.K);
        /* the instruction feeding this block, and the sum length it implies */
        int k = -1;
        for (int i = 0; i < h.n_instr; i++)
            if ((transpose ? h.instr[i].in_block : h.instr[i].out_block) == b)
                k = i;
        EXPECT(q.k == k, "%s block %d: instruction %d, expected %d", name, b, q.k, k);
        if (k >= 0) {
            const int sb = transpose ? h.instr[k].out_block : h.instr[k].in_block;
            EXPECT(q.K == src.block[sb].mul, "%s block %d: K = %d, expected %d", name, b, q.K,
                   src.block[sb].mul);
        }
        end = q.first + q.units;
    }
    EXPECT(n_units == end, "%s: %d unit slots, the last block ends at %d", name, n_units, end);
    /* not splitting at all is one of the plans it chose from */
    std::vector<QuadBlock> unsplit = plan;
    for (QuadBlock &q : unsplit)
        q.g = 1;
    const int unsplit_end = fnqcu::quad_layout(unsplit, quads);
    const int64_t chosen = fnqcu::quad_makespan(plan, n_units, threads);
    const int64_t plain = fnqcu::quad_makespan(unsplit, unsplit_end, threads);
    EXPECT(chosen <= plain, "%s: chosen plan %lld model steps, unsplit %lld", name,
           (long long)chosen, (long long)plain);
    printf("%s: %d unit slots, slices", name, n_units);
    for (const QuadBlock &q : plan)
        printf(" %d", q.g);
    printf(", %lld model steps (unsplit %lld)\n", (long long)chosen, (long long)plain);
}

int main(void)
{
    /* nequix-mp-1's middle layer */
    const fnq_irreps in = irreps({{128, 0}, {64, 1}, {32, 2}, {32, 3}});
    const fnq_irreps mid = irreps({{256, 0}, {352, 1}, {384, 2}, {320, 3}});
    const fnq_irreps conv = irreps({{256, 0}, {64, 1}, {32, 2}, {32, 3}});
    TestLinear linear_1(in, in), linear_2(mid, conv), self_conn(in, conv);
    check_plan("linear_1", linear_1.h, in, in, false);
    check_plan("linear_1^T", linear_1.h, in, in, true);
    check_plan("linear_2", linear_2.h, mid, conv, false);
    check_plan("linear_2^T", linear_2.h, conv, mid, true);
    check_plan("self_conn", self_conn.h, in, conv, false);
    check_plan("self_conn^T", self_conn.h, conv, in, true);

    /* no quads: a destination multiplicity not a multiple of 4 (Nequix' 89-channel layer 0,
     * the readout's one channel), or two instructions into one destination block */
    int n_units = -1;
    const fnq_irreps species = irreps({{89, 0}}), one = irreps({{1, 0}});
    TestLinear embed(species, species), readout(irreps({{128, 0}}), one);
    EXPECT(fnqcu::quad_plan(embed.h, species, species, false, 256, &n_units).empty(),
           "89 output channels: planned for quads");
    EXPECT(fnqcu::quad_plan(readout.h, irreps({{128, 0}}), one, false, 256, &n_units).empty(),
           "1 output channel: planned for quads");
    const fnq_irreps two_scalars = irreps({{64, 0}, {64, 0}}), scalars = irreps({{64, 0}});
    TestLinear merge(two_scalars, scalars);
    EXPECT(fnqcu::quad_plan(merge.h, two_scalars, scalars, false, 256, &n_units).empty(),
           "two instructions into one block: planned for quads");

    if (failures) {
        printf("quad plan: %d check(s) failed\n", failures);
        return 1;
    }
    printf("quad plan: all checks passed\n");
    return 0;
}
