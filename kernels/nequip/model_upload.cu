/*
 * model_upload.cu: flatten the host model (core/src/model/model.h) into the device structs of
 * model_dev.cuh, in the kernels' precision, once per context. Also precomputes two per-species
 * tables on the host in float64: the layer-0 sender features (they depend on the species only)
 * and dE/dh of the last layer output (the readout is linear, so it depends on the species only).
 */
#include <algorithm>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "nequip/model_upload.cuh"
#include "nequip/quad_plan.h"

static_assert(fnqcu::kTile == FNQ_TILE, "one tile width for the core and the kernels");
#include "tp_code_host.inc"

extern "C" {
#include "math/radial_table.h"
}

namespace fnqcu {

struct Allocations {
    std::vector<void *> ptrs;
};

template <typename T>
static enum fnq_status upload(Allocations *al, const T *host, size_t count, const T **out)
{
    void *d = nullptr;
    size_t bytes = sizeof(T) * (count > 0 ? count : 1);
    FNQ_CUDA_CHECK(cudaMalloc(&d, bytes));
    al->ptrs.push_back(d);
    if (count > 0)
        FNQ_CUDA_CHECK(cudaMemcpy(d, host, sizeof(T) * count, cudaMemcpyHostToDevice));
    *out = static_cast<const T *>(d);
    return FNQ_STATUS_OK;
}

template <typename REAL>
static enum fnq_status upload_real(Allocations *al, const double *host, size_t count,
                                   const REAL **out)
{
    std::vector<REAL> tmp(count);
    for (size_t k = 0; k < count; k++)
        tmp[k] = (REAL)host[k];
    return upload<REAL>(al, tmp.data(), count, out);
}

static Irreps convert_irreps(const struct fnq_irreps &h)
{
    Irreps d;
    memset(&d, 0, sizeof(d));
    d.n = h.n_blocks;
    d.dim = (int)h.dim;
    for (int b = 0; b < h.n_blocks; b++) {
        d.mul[b] = h.block[b].mul;
        d.l[b] = h.block[b].l;
        d.off[b] = (int)h.block[b].offset;
        d.tile_off[b] = d.tile_dim;
        d.tile_dim += (int)fnq__tiled_block_dim(&h.block[b]);
    }
    return d;
}


template <typename REAL>
static enum fnq_status convert_linear(Allocations *al, const struct fnq_linear &h,
                                      const struct fnq_irreps &in, const struct fnq_irreps &out,
                                      int n_species, bool quads, Linear<REAL> *d)
{
    memset(d, 0, sizeof(*d));
    d->n_instr = h.n_instr;
    d->species_indexed = h.species_indexed;
    d->n_w = h.n_w;
    std::vector<LinInstr> ins(h.n_instr > 0 ? h.n_instr : 1);
    for (int k = 0; k < h.n_instr; k++)
        ins[k] = {h.instr[k].in_block, h.instr[k].out_block, (int)h.instr[k].w_offset,
                  h.instr[k].alpha};
    FNQ_CHECK(upload<LinInstr>(al, ins.data(), (size_t)h.n_instr, &d->instr));
    const int64_t sets = h.species_indexed ? n_species : 1;
    const size_t total = (size_t)(h.n_w * sets);
    FNQ_CHECK(upload_real<REAL>(al, h.w, total, &d->w));
    /* transposed copy, instruction by instruction */
    std::vector<double> wt(total);
    for (int64_t s = 0; s < sets; s++)
        for (int k = 0; k < h.n_instr; k++) {
            const int mi = in.block[h.instr[k].in_block].mul, mo = out.block[h.instr[k].out_block].mul;
            const double *w = h.w + s * h.n_w + h.instr[k].w_offset;
            double *t = wt.data() + s * h.n_w + h.instr[k].w_offset;
            for (int u = 0; u < mi; u++)
                for (int v = 0; v < mo; v++)
                    t[(int64_t)v * mi + u] = w[(int64_t)u * mo + v];
        }
    FNQ_CHECK(upload_real<REAL>(al, wt.data(), total, &d->wt));
    /* FNQ_NO_QUADS=1: one output element per thread everywhere (to compare, bench/NOTES.md) */
    if (!quads)
        return FNQ_STATUS_OK;
    const std::vector<QuadBlock> plan = quad_plan(h, in, out, false, kThreads, &d->quad_units);
    const std::vector<QuadBlock> plan_t = quad_plan(h, out, in, true, kThreads, &d->quad_units_t);
    if (!plan.empty())
        FNQ_CHECK(upload<QuadBlock>(al, plan.data(), plan.size(), &d->quads));
    if (!plan_t.empty())
        FNQ_CHECK(upload<QuadBlock>(al, plan_t.data(), plan_t.size(), &d->quads_t));
    return FNQ_STATUS_OK;
}

/* The radial weight (column of the MLP's last layer) that padded column j holds in task
 * order (task j / 32, lane j % 32; tasks: (path, first channel, lanes, ...)), or -1 for
 * padding. */
static int task_column_source(const struct fnq_layer &h, const std::vector<int4> &tasks, int j)
{
    const int t = j / 32, lane = j % 32;
    if (t >= (int)tasks.size() || lane >= tasks[t].z)
        return -1;
    return h.paths[tasks[t].x].w_offset + tasks[t].y + lane;
}

/* What a column task of path p costs per edge, roughly: its terms, its sender-feature and
 * message-gradient loads and sums */
static int path_cost(const struct fnq_tp_path &p)
{
    return p.n_terms + 2 * (2 * p.l1 + 1) + 3 * (2 * p.l3 + 1);
}

/* The work of a layer in radial table mode (Layer::units, utasks): per input block, the paths
 * that make up a generated group (tp_group.cuh; every path of the group present once) run as
 * that group, one unit per tile of 32 channels; the group's first path collects the group's
 * sender-feature gradients (dx_read of the others: 0). Every other path runs alone. Units are
 * sorted by cost (the two warps of an atom take every other one). */
static void build_units(const struct fnq_layer &h, bool use_groups, std::vector<Path> *paths,
                        std::vector<int4> *units, std::vector<int4> *utasks)
{
    struct Unit {
        std::vector<int> path;
        int u0, lanes, group, cost;
    };
    std::vector<Unit> list;
    std::vector<int> grouped(h.n_paths, 0);
    const int n_groups = (int)(sizeof(fnq_tp_groups) / sizeof(fnq_tp_groups[0]));
    for (int b = 0; use_groups && b < h.in.n_blocks; b++) {
        const int mul = h.in.block[b].mul;
        for (int g = 0; g < n_groups; g++) {
            const auto &G = fnq_tp_groups[g];
            if (G.l1 != h.in.block[b].l)
                continue;
            std::vector<int> slot(G.n, -1);
            bool ok = true;
            for (int p = 0; p < h.n_paths; p++) {
                const struct fnq_tp_path &hp = h.paths[p];
                if (hp.in_block != b || hp.l2 < G.lo || hp.l2 > G.hi)
                    continue;
                int k = 0;
                while (k < G.n && !(G.l2[k] == hp.l2 && G.l3[k] == hp.l3))
                    k++;
                /* a path runs in one unit: the first group that takes it (the l <= 3 groups
                 * come first, and an l <= 3 model's paths of l2 <= 2 fit an l = 4 group too) */
                if (k == G.n || slot[k] >= 0 || hp.mul != mul || grouped[p])
                    ok = false;
                else
                    slot[k] = p;
            }
            for (int k = 0; k < G.n; k++)
                ok = ok && slot[k] >= 0;
            if (!ok)
                continue;
            int cost = 0;
            for (int p : slot) {
                cost += path_cost(h.paths[p]);
                grouped[p] = 1;
                (*paths)[p].dx_read = p == slot[0];
            }
            for (int u0 = 0; u0 < mul; u0 += 32)
                list.push_back({slot, u0, std::min(32, mul - u0), g, cost});
        }
    }
    for (int p = 0; p < h.n_paths; p++)
        for (int u0 = 0; !grouped[p] && u0 < h.paths[p].mul; u0 += 32)
            list.push_back({{p}, u0, std::min(32, h.paths[p].mul - u0), -1, path_cost(h.paths[p])});
    std::stable_sort(list.begin(), list.end(),
                     [](const Unit &x, const Unit &y) { return x.cost > y.cost; });
    for (const Unit &un : list) {
        units->push_back(make_int4((int)utasks->size(), (int)un.path.size(), un.group, 0));
        for (int p : un.path)
            utasks->push_back(make_int4(p, un.u0, un.lanes, 32 * (int)utasks->size()));
    }
}

/* The forward pass's 12-byte copy of the table (Layer::rtab_wd, rtab_ab) from its 16-byte
 * rows (w, m0, dw, m1): (w, dw) in float32, (a, b) = (m0 - dw, m1 - dw) in float16 scaled by
 * a power of two that puts the largest near 2^14 (float16's normal range starts at 2^-14). */
template <typename REAL>
static enum fnq_status upload_forward_table(Allocations *al, const std::vector<double> &tab,
                                            Layer<REAL> *d)
{
    const size_t n = tab.size() / 4;
    double largest = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double *q = &tab[4 * i];
        largest = std::max(largest, std::max(fabs(q[1] - q[2]), fabs(q[3] - q[2])));
    }
    int shift = 0;
    if (largest > 0.0)
        shift = std::min(60, std::max(-60, 14 - (int)ceil(log2(largest))));
    std::vector<float2> wd(n);
    std::vector<__half2> ab(n);
    for (size_t i = 0; i < n; i++) {
        const double *q = &tab[4 * i];
        wd[i] = make_float2((float)q[0], (float)q[2]);
        ab[i] = __floats2half2_rn((float)ldexp(q[1] - q[2], shift),
                                  (float)ldexp(q[3] - q[2], shift));
    }
    d->rtab_ab_unit = (float)ldexp(1.0, -shift);
    FNQ_CHECK(upload<float2>(al, wd.data(), n, &d->rtab_wd));
    return upload<__half2>(al, ab.data(), n, &d->rtab_ab);
}

/* The layer's radial weights tabulated over |r| (radial_table.h), columns in task order
 * (tasks: Layer::utasks, task t owning columns 32 t .. 32 t + 31). */
template <typename REAL>
static enum fnq_status upload_radial_table(Allocations *al, const struct fnq_model *m,
                                           const struct fnq_layer &h, int layer, int intervals,
                                           bool verbose, const std::vector<int4> &tasks,
                                           Layer<REAL> *d, int *rejected)
{
    struct fnq_radial_table t;
    FNQ_CHECK(fnq__radial_table_build(m, &h.radial, 0.0, intervals, &t));
    if (verbose)
        fprintf(stderr, "fusednequip cuda: layer %d radial table, %d intervals of %.4g A: max "
                        "interpolation error %.2g (weights) %.2g (derivatives), relative\n",
                layer, intervals, t.h, t.err_val, t.err_slope);
    if (!fnq__radial_table_accurate(&t)) {
        const double ev = t.err_val, es = t.err_slope;
        fnq__radial_table_free(&t);
        *rejected = 1;
        return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                         "layer %d: the radial table's interpolation error %.2g (weights) / %.2g "
                         "(derivatives) is above the bound %.0e / %.0e",
                         layer, ev, es, FNQ_TABLE_MAX_ERR_VAL, FNQ_TABLE_MAX_ERR_SLOPE);
    }
    /* per knot and column, 4 consecutive values (one 16-byte load in float32): w, h dw/dr,
     * the difference to the next knot's w, and the next knot's h dw/dr. The difference is
     * rounded on its own: dw/dt from w1 - w0 of two float32 values would lose ~|w| / |h dw/dr|
     * of its precision (forces off by 2e-5 relative on the NequIP fixtures); from the rounded
     * difference it keeps float32's */
    const int ld = d->ld_last;
    std::vector<double> tab((size_t)t.n_knots * ld * 4, 0.0);
    for (int j = 0; j < ld; j++) {
        const int src = task_column_source(h, tasks, j);
        if (src < 0)
            continue;
        for (int k = 0; k < t.n_knots; k++) {
            const double w0 = t.val[(size_t)k * t.n_w + src];
            const double w1 = k + 1 < t.n_knots ? t.val[(size_t)(k + 1) * t.n_w + src] : w0;
            const size_t next = k + 1 < t.n_knots ? k + 1 : k;
            double *q = &tab[((size_t)k * ld + j) * 4];
            q[0] = w0;
            q[1] = t.slope[(size_t)k * t.n_w + src];
            q[2] = w1 - w0;
            q[3] = t.slope[next * t.n_w + src];
        }
    }
    fnq__radial_table_free(&t);
    FNQ_CHECK(upload_forward_table(al, tab, d));
    return upload_real<REAL>(al, tab.data(), tab.size(), &d->rtab);
}

template <typename REAL>
static enum fnq_status convert_layer(Allocations *al, const struct fnq_model *m,
                                     const struct fnq_layer &h, int layer, const UploadChoices &c,
                                     Layer<REAL> *d, int *table_rejected)
{
    memset(d, 0, sizeof(*d));
    d->in = convert_irreps(h.in);
    d->mid = convert_irreps(h.mid);
    d->conv = convert_irreps(h.conv);
    d->out = convert_irreps(h.out);
    FNQ_CHECK(convert_linear<REAL>(al, h.linear_1, h.in, h.in, m->n_species, c.quads, &d->linear_1));
    FNQ_CHECK(convert_linear<REAL>(al, h.linear_2, h.mid, h.conv, m->n_species, c.quads, &d->linear_2));
    FNQ_CHECK(convert_linear<REAL>(al, h.self_conn, h.in, h.conv, m->n_species, c.quads, &d->self_conn));
    FNQ_CHECK(upload_real<REAL>(al, h.sender_scale, (size_t)m->n_species, &d->sender_scale));
    if (h.linear_1.bias)
        FNQ_CHECK(upload_real<REAL>(al, h.linear_1.bias, (size_t)h.in.dim, &d->bias_1));
    if (h.linear_2.bias)
        FNQ_CHECK(upload_real<REAL>(al, h.linear_2.bias, (size_t)h.conv.dim, &d->bias_2));

    d->n_mlp = h.radial.n_layers;
    for (int k = 0; k <= h.radial.n_layers; k++)
        d->size[k] = h.radial.size[k];
    for (int k = 0; k < h.radial.n_layers; k++) {
        const int a = h.radial.size[k], b = h.radial.size[k + 1];
        FNQ_CHECK(upload_real<REAL>(al, h.radial.w[k], (size_t)a * b, &d->mlp_w[k]));
        std::vector<double> t((size_t)a * b);
        for (int i = 0; i < a; i++)
            for (int j = 0; j < b; j++)
                t[(size_t)j * a + i] = h.radial.w[k][(size_t)i * b + j];
        FNQ_CHECK(upload_real<REAL>(al, t.data(), t.size(), &d->mlp_wt[k]));
    }
    d->mlp_act = {(int)h.radial.act.kind, h.radial.act.scale};

    /* paths: pairs sorted by (m3, m1) for the forward pass, plus an index ordered by m1 */
    std::vector<Path> paths(h.n_paths);
    std::vector<Pair<REAL>> pairs;
    std::vector<Term<REAL>> terms;
    std::vector<int> by_m1;
    d->max_pairs = 1;
    for (int p = 0; p < h.n_paths; p++) {
        const struct fnq_tp_path &hp = h.paths[p];
        Path &P = paths[p];
        memset(&P, 0, sizeof(P));
        P.l1 = hp.l1, P.l2 = hp.l2, P.l3 = hp.l3, P.mul = hp.mul;
        P.in_off = (int)h.in.block[hp.in_block].offset;
        P.in_tile = d->in.tile_off[hp.in_block];
        P.mid_off = (int)h.mid.block[hp.out_block].offset;
        P.mid_tile = d->mid.tile_off[hp.out_block];
        P.mid_mul = h.mid.block[hp.out_block].mul;
        P.out_chan = hp.out_chan;
        P.w_off = hp.w_offset;
        P.dx_off = d->dx_dim;
        P.dx_read = 1;
        d->dx_dim += (2 * hp.l1 + 1) * hp.mul;
        P.pair0 = (int)pairs.size();
        P.npair = hp.n_pairs;
        d->max_pairs = std::max(d->max_pairs, hp.n_pairs);
        std::vector<int> order(hp.n_pairs);
        for (int q = 0; q < hp.n_pairs; q++)
            order[q] = q;
        std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
            return hp.pairs[x].m3 < hp.pairs[y].m3;
        });
        for (int q : order) {
            const struct fnq_cg_pair &hq = hp.pairs[q];
            Pair<REAL> pr{hq.m1, hq.m3, (int)terms.size(), hq.count};
            for (int t = hq.first; t < hq.first + hq.count; t++)
                terms.push_back({hp.terms[t].m2, (REAL)hp.terms[t].c});
            pairs.push_back(pr);
        }
        const int d1 = 2 * hp.l1 + 1, d3 = 2 * hp.l3 + 1;
        for (int m3 = 0, q = 0; m3 <= d3; m3++) {
            while (q < hp.n_pairs && pairs[P.pair0 + q].m3 < m3)
                q++;
            P.m3_start[m3] = q;
        }
        std::vector<int> bm(hp.n_pairs);
        for (int q = 0; q < hp.n_pairs; q++)
            bm[q] = P.pair0 + q;
        std::stable_sort(bm.begin(), bm.end(), [&](int x, int y) { return pairs[x].m1 < pairs[y].m1; });
        for (int m1 = 0, q = 0; m1 <= d1; m1++) {
            while (q < hp.n_pairs && pairs[bm[q]].m1 < m1)
                q++;
            P.m1_start[m1] = q;
        }
        by_m1.insert(by_m1.end(), bm.begin(), bm.end());
    }
    d->n_paths = h.n_paths;

    /* column tasks: 32 channels of one path each, sorted by cost (most terms first) so that
     * a round's tasks take similar time; rounds of kWarps tasks */
    std::vector<int4> tasks;
    std::vector<int> cost;
    for (int p = 0; p < h.n_paths; p++)
        for (int u0 = 0; u0 < h.paths[p].mul; u0 += 32) {
            tasks.push_back(make_int4(p, u0, std::min(32, h.paths[p].mul - u0), 0));
            cost.push_back(path_cost(h.paths[p]));
        }
    std::vector<int> ord(tasks.size());
    for (size_t t = 0; t < ord.size(); t++)
        ord[t] = (int)t;
    std::stable_sort(ord.begin(), ord.end(), [&](int x, int y) { return cost[x] > cost[y]; });
    std::vector<int4> sorted(tasks.size());
    for (size_t t = 0; t < ord.size(); t++) {
        sorted[t] = tasks[ord[t]];
        sorted[t].w = 32 * (int)t;
    }
    std::vector<int2> rounds;
    for (size_t t = 0; t < sorted.size(); t += kWarps)
        rounds.push_back(make_int2((int)t, 32 * (int)t));
    d->n_tasks = (int)sorted.size();
    d->n_rounds = (int)rounds.size();
    FNQ_CHECK(upload<int4>(al, sorted.data(), sorted.size(), &d->tasks));
    FNQ_CHECK(upload<int2>(al, rounds.data(), rounds.size(), &d->rounds));

    /* the radial MLP padded for block_gemm; the last layer's columns in task order */
    const int K = h.radial.n_layers;
    for (int k = 0; k <= K; k++)
        d->pad[k] = (h.radial.size[k] + 15) / 16 * 16;
    d->ld_last = (int)rounds.size() * kRoundSpan;
    for (int k = 0; k < K; k++) {
        const int a = h.radial.size[k], b = h.radial.size[k + 1];
        const int pa = d->pad[k], ld = (k == K - 1) ? d->ld_last : d->pad[k + 1];
        std::vector<double> wp((size_t)pa * ld, 0.0), wtp((size_t)ld * pa, 0.0);
        for (int i = 0; i < a; i++)
            for (int j = 0; j < ld; j++) {
                int src = j; /* original column of padded column j */
                if (k == K - 1) {
                    src = task_column_source(h, sorted, j);
                } else if (j >= b) {
                    src = -1;
                }
                const double v = src >= 0 ? h.radial.w[k][(size_t)i * b + src] : 0.0;
                wp[(size_t)i * ld + j] = v;
                wtp[(size_t)j * pa + i] = v;
            }
        FNQ_CHECK(upload_real<REAL>(al, wp.data(), wp.size(), &d->mlp_wp[k]));
        FNQ_CHECK(upload_real<REAL>(al, wtp.data(), wtp.size(), &d->mlp_wtp[k]));
    }
    if (c.table_intervals > 0) {
        std::vector<int4> units, utasks;
        /* FNQ_NO_GROUPS=1: every path alone (to compare, bench/NOTES.md) */
        build_units(h, c.groups, &paths, &units, &utasks);
        d->n_units = (int)units.size();
        FNQ_CHECK(upload<int4>(al, units.data(), units.size(), &d->units));
        FNQ_CHECK(upload<int4>(al, utasks.data(), utasks.size(), &d->utasks));
        FNQ_CHECK(upload_radial_table<REAL>(al, m, h, layer, c.table_intervals, c.verbose, utasks, d,
                                            table_rejected));
    }
    FNQ_CHECK(upload<Path>(al, paths.data(), paths.size(), &d->paths)); /* dx_read set above */

    /* the kernels' tensor-product code is generated (tp_code.inc); check the model's terms
     * are those, path by path */
    for (int p = 0; p < h.n_paths; p++) {
        const struct fnq_tp_path &hp = h.paths[p];
        if (hp.l1 > FNQ_TP_LMAX_HOST || hp.l2 > FNQ_TP_LMAX_HOST || hp.l3 > FNQ_TP_LMAX_HOST)
            return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                             "the CUDA backend supports irreps up to l = %d; this model has a "
                             "path %d x %d -> %d (use device 'cpu')",
                             FNQ_TP_LMAX_HOST, hp.l1, hp.l2, hp.l3);
        int found = 0, mism = 0;
        for (const auto &gt : fnq_tp_generated_terms) {
            if (gt.l1 != hp.l1 || gt.l2 != hp.l2 || gt.l3 != hp.l3)
                continue;
            found++;
            bool hit = false;
            for (int q = 0; q < hp.n_pairs; q++)
                if (hp.pairs[q].m1 == gt.m1 && hp.pairs[q].m3 == gt.m3)
                    for (int t = hp.pairs[q].first; t < hp.pairs[q].first + hp.pairs[q].count; t++)
                        if (hp.terms[t].m2 == gt.m2 && hp.terms[t].c == gt.c)
                            hit = true;
            mism += !hit;
        }
        if (found != hp.n_terms || mism)
            return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                             "path %d (%d x %d -> %d) has Clebsch-Gordan terms that differ from "
                             "the CUDA kernels' generated ones",
                             p, hp.l1, hp.l2, hp.l3);
    }
    FNQ_CHECK(upload<Pair<REAL>>(al, pairs.data(), pairs.size(), &d->pairs));
    FNQ_CHECK(upload<Term<REAL>>(al, terms.data(), terms.size(), &d->terms));
    FNQ_CHECK(upload<int>(al, by_m1.data(), by_m1.size(), &d->by_m1));

    d->norm = (int)h.norm;
    d->norm_eps = h.norm_eps;
    if (h.norm != FNQ_NORM_NONE) {
        std::vector<double> nw;
        for (int b = 0; b < h.conv.n_blocks; b++) {
            d->norm_off[b] = (int)nw.size();
            nw.insert(nw.end(), h.norm_weight[b], h.norm_weight[b] + h.conv.block[b].mul);
        }
        FNQ_CHECK(upload_real<REAL>(al, nw.data(), nw.size(), &d->norm_w));
    }
    for (int k = 0; k < h.out.n_blocks; k++) {
        const struct fnq_gate_out &g = h.gate[k];
        GateOut &o = d->gate[k];
        o.src_off = (int)h.conv.block[g.src_block].offset;
        o.src_mul = h.conv.block[g.src_block].mul;
        o.src_chan = g.src_chan;
        o.act = {(int)g.act.kind, g.act.scale};
        o.gate_off = g.gate_block >= 0 ? (int)h.conv.block[g.gate_block].offset + g.gate_chan : -1;
        o.gate_act = {(int)g.gate_act.kind, g.gate_act.scale};
    }
    d->resnet = h.resnet;
    return FNQ_STATUS_OK;
}

/* ZBL's per-species-pair constants (pair_term.cuh), from the host model's Z and k_e */
static enum fnq_status upload_pair_term(Allocations *al, const struct fnq_model *m,
                                        PairTerm *p)
{
    memset(p, 0, sizeof(*p));
    if (m->pair.kind == FNQ_PAIR_NONE)
        return FNQ_STATUS_OK;
    std::vector<double> screen, charges;
    pair_term_tables(m, &screen, &charges);
    p->on = 1;
    p->n_species = m->n_species;
    p->cutoff = m->pair.cutoff;
    p->poly_p = m->pair.poly_p;
    if (m->pair.cutoff_by_type)
        FNQ_CHECK(upload<double>(al, m->pair.cutoff_by_type, screen.size(), &p->cutoff_by_type));
    FNQ_CHECK(upload<double>(al, screen.data(), screen.size(), &p->screen));
    return upload<double>(al, charges.data(), charges.size(), &p->charges);
}

template <typename REAL>
enum fnq_status model_upload(const struct fnq_model *m, const UploadChoices &c, DeviceModel<REAL> *dm)
{
    const int table_intervals = c.table_intervals;
    memset(dm, 0, sizeof(*dm));
    Allocations *al = new Allocations();
    dm->allocations = al;
    dm->n_layers = m->n_layers;
    dm->n_species = m->n_species;
    dm->layers = new Layer<REAL>[m->n_layers];
    for (int i = 0; i < m->n_layers; i++) {
        FNQ_CHECK(convert_layer<REAL>(al, m, m->layers[i], i, c, &dm->layers[i],
                                      &dm->table_rejected));
        const struct fnq_layer &L = m->layers[i];
        dm->max_in = std::max(dm->max_in, (int)L.in.dim);
        dm->max_mid = std::max(dm->max_mid, (int)L.mid.dim);
        dm->max_mid_tiled = std::max(dm->max_mid_tiled, dm->layers[i].mid.tile_dim);
        dm->max_conv = std::max(dm->max_conv, (int)L.conv.dim);
        dm->max_out = std::max(dm->max_out, (int)L.out.dim);
    }
    dm->max_width = std::max(dm->max_in, dm->max_out);

    /* geometry */
    Geometry &g = dm->geo;
    memset(&g, 0, sizeof(g));
    g.lmax = m->sh.lmax;
    g.nsh = (m->sh.lmax + 1) * (m->sh.lmax + 1);
    for (int l = 0; l <= m->sh.lmax; l++) {
        g.l1[l] = m->sh.l1[l];
        g.l2[l] = m->sh.l2[l];
    }
    for (int l = 0; l <= m->sh.lmax + 1; l++)
        g.first[l] = m->sh.first[l];
    std::vector<ShTerm> st(m->sh.n_terms);
    for (int k = 0; k < m->sh.n_terms; k++)
        st[k] = {m->sh.terms[k].i, m->sh.terms[k].j, m->sh.terms[k].k, m->sh.terms[k].coef};
    FNQ_CHECK(upload<ShTerm>(al, st.data(), st.size(), &g.terms));
    g.n_basis = m->n_basis;
    g.cutoff = m->cutoff;
    g.poly_p = m->poly_p;
    g.xplor_r_on = m->xplor_r_on;
    g.sh_raw = m->sh_raw;
    FNQ_CHECK(upload<double>(al, m->bessel_freq, (size_t)m->n_basis, &g.bessel_freq));
    g.sh_generic = c.sh_generic;
    g.table = table_intervals > 0;
    g.n_intervals = table_intervals;
    g.n_rfeat = g.table ? 2 : g.n_basis;
    g.inv_h = g.table ? table_intervals / m->cutoff : 0.0;

    /* per-species tables, computed in float64 */
    const struct fnq_layer &L0 = m->layers[0];
    const struct fnq_layer &LL = m->layers[m->n_layers - 1];
    const int T = m->n_species, d0 = (int)L0.in.dim, dL = (int)LL.out.dim;
    std::vector<double> h1((size_t)T * d0, 0.0), top((size_t)T * dL, 0.0);
    for (int t = 0; t < T; t++) {
        const double *x = m->embed + (size_t)t * d0;
        double *y = h1.data() + (size_t)t * d0;
        fnq__linear_apply_f64(&L0.linear_1, &L0.in, &L0.in, t, x, y);
        for (int k = 0; k < d0; k++)
            y[k] = (y[k] + (L0.linear_1.bias ? L0.linear_1.bias[k] : 0.0)) * L0.sender_scale[t];
        /* dE/dh_L: back through the readout chain from dE/de = energy_scale[t] */
        std::vector<double> cur(1, m->energy_scale[t]);
        for (int r = m->n_readout - 1; r >= 0; r--) {
            std::vector<double> nx(m->readout_irreps[r].dim, 0.0);
            fnq__linear_apply_t_f64(&m->readout[r], &m->readout_irreps[r], &m->readout_irreps[r + 1],
                                    t, cur.data(), nx.data());
            cur.swap(nx);
        }
        std::copy(cur.begin(), cur.end(), top.begin() + (size_t)t * dL);
    }
    /* the sender features in the layout the column passes gather (model_dev.cuh) */
    const Irreps &in0 = dm->layers[0].in;
    std::vector<double> h1t((size_t)T * in0.tile_dim, 0.0);
    for (int t = 0; t < T; t++)
        for (int b = 0; b < in0.n; b++)
            for (int m = 0; m < 2 * in0.l[b] + 1; m++)
                for (int u = 0; u < in0.mul[b]; u++)
                    h1t[(size_t)t * in0.tile_dim + tiled_index(in0, b, m, u)] =
                        h1[(size_t)t * d0 + in0.off[b] + m * in0.mul[b] + u];
    FNQ_CHECK(upload_real<REAL>(al, h1t.data(), h1t.size(), &dm->h1_table));
    FNQ_CHECK(upload_real<REAL>(al, m->embed, (size_t)T * d0, &dm->embed));
    FNQ_CHECK(upload_real<REAL>(al, top.data(), top.size(), &dm->grad_top));
    FNQ_CHECK(upload_pair_term(al, m, &dm->pair));
    dm->n_readout = m->n_readout;
    for (int r = 0; r <= m->n_readout; r++)
        dm->readout_irreps[r] = convert_irreps(m->readout_irreps[r]);
    for (int r = 0; r < m->n_readout; r++)
        FNQ_CHECK(convert_linear<REAL>(al, m->readout[r], m->readout_irreps[r],
                                       m->readout_irreps[r + 1], T, c.quads, &dm->readout[r]));
    FNQ_CHECK(upload<double>(al, m->energy_scale, (size_t)T, &dm->energy_scale));
    FNQ_CHECK(upload<double>(al, m->energy_shift, (size_t)T, &dm->energy_shift));
    return FNQ_STATUS_OK;
}

template <typename REAL> void model_release(DeviceModel<REAL> *dm)
{
    Allocations *al = static_cast<Allocations *>(dm->allocations);
    if (al) {
        for (void *p : al->ptrs)
            cudaFree(p);
        delete al;
    }
    delete[] dm->layers;
    memset(dm, 0, sizeof(*dm));
}

template enum fnq_status model_upload<float>(const struct fnq_model *, const UploadChoices &, DeviceModel<float> *);
template enum fnq_status model_upload<double>(const struct fnq_model *, const UploadChoices &, DeviceModel<double> *);
template void model_release<float>(DeviceModel<float> *);
template void model_release<double>(DeviceModel<double> *);

} // namespace fnqcu
