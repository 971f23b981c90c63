/*
 * tp_column.cuh: the tensor product by columns. A warp owns 32 consecutive channels ("lanes")
 * of one path (l1, l2 -> l3); each lane walks the edges of a super-chunk in order, with the
 * path's Clebsch-Gordan terms compiled in (tp_code.inc, generated at build time), so the
 * lane's sender features, spherical harmonics and accumulators are registers.
 *
 * Forward: the lane sums its channel's messages over each receiver's edges and writes them to
 *   the receiver's message vector A (it is the only writer of those elements).
 * Backward: per edge, dE/d(radial weight) of the lane's channel (into shared memory, for the
 *   MLP-gradient GEMM; y . v, from the dE/dY sums below), dE/dY (summed over the warp in a
 *   fixed order, warp_sum_spread, then one write per value), and the
 *   gradient of the receiver's own sender features through the reverse edge, summed per
 *   receiver into a per-path scratch row.
 * Radial table mode (TAB): the lane interpolates its weight (and dw/dt) per edge from the
 *   layer's table instead of reading the round's weight tile, and dE/dw . dw/dt joins the dE/dY
 *   warp sum as dE/dt; the kernels then run each warp's tasks without rounds.
 */
#pragma once

#include "runtime/common.cuh"
#include "nequip/model_dev.cuh"
#include "nequip/radial_table.cuh"
#include "tp_code.inc"

namespace fnqcu {

/* A column pass may be a separate (noinline) function, where a pointer into shared memory would
 * be a 64-bit generic address (two registers, generic loads); the passes address the kernel's
 * dynamic shared memory by 32-bit byte offsets instead. */
template <typename T> __device__ __forceinline__ T &shared_at(uint32_t byte_off)
{
    extern __shared__ __align__(32) unsigned char fnq_dynamic_smem[];
    return *reinterpret_cast<T *>(fnq_dynamic_smem + byte_off);
}

__device__ __forceinline__ uint32_t shared_offset(const void *p)
{
    extern __shared__ __align__(32) unsigned char fnq_dynamic_smem[];
    return (uint32_t)((const unsigned char *)p - fnq_dynamic_smem);
}

/* 4 consecutive values at a 4-value-aligned byte offset of shared memory */
__device__ __forceinline__ void shared_quad(uint32_t byte_off, float (&h)[4])
{
    const float4 v = shared_at<float4>(byte_off);
    h[0] = v.x, h[1] = v.y, h[2] = v.z, h[3] = v.w;
}
__device__ __forceinline__ void shared_quad(uint32_t byte_off, double (&h)[4])
{
    const double2 a = shared_at<double2>(byte_off), b = shared_at<double2>(byte_off + 16);
    h[0] = a.x, h[1] = a.y, h[2] = b.x, h[3] = b.y;
}

/* Per staged edge: the sender, and the receiver with this bit set when the edge is the first
 * of the receiver's list (its sums start from zero rather than add to the previous chunk's). */
constexpr int kFirstEdge = int(0x80000000u);

/* What a column pass needs besides the path itself. */
template <typename REAL> struct ColumnArgs {
    int e_first, n;          /* the pass walks staged edges e_first .. n-1 (all: 0 .. n-1) */
    /* shared-memory offsets: per edge the sender's row of h1 (the sender; in layer 0, whose
     * sender features depend on the species only, its species), receiver | kFirstEdge */
    uint32_t src, recv;
    uint32_t y;              /* Y of edge e at y + (e * nsh + m) * sizeof(REAL) */
    int nsh;
    uint32_t r;              /* radial weights of this round: [edge][ldr] */
    int ldr;
    /* sender features: h1[j * din], or the per-species table for layer 0 (tiled rows of din
     * values, model_dev.cuh) */
    const REAL *h1;
    int din;
    /* radial table mode: the layer's table (radial_table.cuh) and, per staged edge, where
     * its interval starts in the table (int) and its Hermite coefficients (4 REAL each:
     * weights; d/dt) */
    const REAL *tab;
    uint32_t knot, coef, dcoef;
    /* the forward pass reads the table's 12-byte copy instead (Layer::rtab_wd, rtab_ab) */
    const float2 *tab_wd;
    const __half2 *tab_ab;
    int dx_row0; /* backward: the block's first atom, row 0 of its dxpart slot */
};

/* The per-kernel part of ColumnArgs: staged edges in shared memory (lay: the kernel's shared
 * memory layout) and the layer's sender features (a: the kernel's arguments). n is set per
 * super-chunk. */
template <typename REAL, typename Args, typename Layout>
__device__ __forceinline__ ColumnArgs<REAL> column_args(const Args &a, const Layout &lay,
                                                        const int *sSrc, const int *sRecv,
                                                        const REAL *sY, const REAL *sR, int din)
{
    ColumnArgs<REAL> ca;
    ca.e_first = ca.n = 0;
    ca.src = shared_offset(sSrc);
    ca.recv = shared_offset(sRecv);
    ca.y = shared_offset(sY);
    ca.nsh = lay.nsh;
    ca.r = shared_offset(sR);
    ca.ldr = lay.ldr;
    ca.h1 = a.layer == 0 ? a.h1_table : a.h1;
    ca.din = din;
    ca.tab = nullptr;
    ca.knot = ca.coef = ca.dcoef = 0;
    ca.tab_wd = nullptr;
    ca.tab_ab = nullptr;
    ca.dx_row0 = 0;
    return ca;
}

/* What an edge sent by atom j stages as its sender (ColumnArgs::src): j's row of h1. Layer 0's
 * rows are per species; layer 0 uses the sender for nothing else (no reverse-edge term), so
 * the passes need no per-edge branch on the layer. */
template <typename Args> __device__ __forceinline__ int staged_sender(const Args &a, int j)
{
    return a.layer == 0 ? a.species[j] : j;
}

/* D values at p + m * kTile (a lane's values of a tiled row, model_dev.cuh) */
template <int D, typename REAL>
__device__ __forceinline__ void tiled_values(const REAL *p, REAL *out)
{
#pragma unroll
    for (int m = 0; m < D; m++)
        out[m] = __ldg(p + m * kTile);
}

/* w and dw/dt: the 4 table values f combined with their Hermite coefficients h
 * (radial_table.cuh), whose first is 1 for w and 0 for dw/dt: left out, one instruction less
 * each (the compiler may fuse the products in another order than before: float32 results
 * moved by up to 1.1e-9 relative, bench/results/2026-12-02-h200-l0-tile-pairs-s53.md) */
template <typename REAL>
__device__ __forceinline__ REAL table_weight(const REAL (&h)[4], const REAL (&f)[4])
{
    REAL s = f[0];
#pragma unroll
    for (int j = 1; j < 4; j++)
        s += h[j] * f[j];
    return s;
}
template <typename REAL>
__device__ __forceinline__ REAL table_slope(const REAL (&h)[4], const REAL (&f)[4])
{
    REAL s = h[1] * f[1];
#pragma unroll
    for (int j = 2; j < 4; j++)
        s += h[j] * f[j];
    return s;
}

/* What a column pass reads in its edge loop, copied into registers once: the pass stores
 * through generic pointers, so fields read through the ColumnArgs and Path references would be
 * reloaded after every store. */
template <typename REAL> struct ColumnView {
    int e_first, n;
    uint32_t src, recv, y, r; /* shared memory: y and r already at the lane's Y block, column */
    uint32_t y_stride, r_stride; /* bytes per edge */
    const REAL *h1;
    int din;
    /* Gathered rows are tiled (model_dev.cuh): the lane's values are kTile apart, so a row
     * costs one wide multiply-add (64-bit: a million atoms' rows of 5,472 values pass 2^32),
     * and its loads use constant offsets (with the ir_mul layout's stride of mul, each load
     * needed two more instructions) */
    uint32_t in_lane; /* the lane's first sender feature in an h1 row */
    uint32_t ga_lane; /* its first message gradient in a dE/dA row */
    int mid_off, mid_mul; /* its messages: A row + mid_off + m3 * mid_mul (u included) */
    const REAL *tab; /* table mode: the table at the lane's column (4 values per column) */
    uint32_t knot, coef, dcoef;
    const float2 *tab_wd; /* the forward's copy at the lane's column */
    const __half2 *tab_ab;

    __device__ __forceinline__ ColumnView(const ColumnArgs<REAL> &c, const Path &P, int u, int col,
                                          int l2)
        : e_first(c.e_first), n(c.n), src(c.src), recv(c.recv), y(c.y + l2 * l2 * (int)sizeof(REAL)),
          r(c.r + col * (int)sizeof(REAL)), y_stride(c.nsh * sizeof(REAL)),
          r_stride(c.ldr * sizeof(REAL)), h1(c.h1), din(c.din),
          in_lane((uint32_t)(P.in_tile + (u / kTile) * kTile * (2 * P.l1 + 1) + u % kTile)),
          ga_lane((uint32_t)(P.mid_tile + ((P.out_chan + u) / kTile) * kTile * (2 * P.l3 + 1) +
                             (P.out_chan + u) % kTile)),
          mid_off(P.mid_off + P.out_chan + u), mid_mul(P.mid_mul),
          tab(c.tab ? c.tab + 4 * col : nullptr), knot(c.knot), coef(c.coef),
          dcoef(c.dcoef), tab_wd(c.tab_wd ? c.tab_wd + col : nullptr),
          tab_ab(c.tab_ab ? c.tab_ab + col : nullptr)
    {
    }
    /* table mode: the lane's column of the table at edge e's interval (radial_table.cuh);
     * the column 32 k further is k * 4 * kTile values on */
    __device__ __forceinline__ const REAL *table_at(int e) const
    {
        return tab + (uint32_t)shared_at<int>(knot + 4 * e);
    }
    /* its 4 table values */
    __device__ __forceinline__ void table_rows(int e, REAL (&f)[4]) const
    {
        load_quad(table_at(e), f);
    }
    /* the forward's 4 table values (w, dw, a, b) of edge e's interval at the column 32 k on
     * (stage_forward_table_coefs) */
    __device__ __forceinline__ void forward_table_rows(int e, int k, REAL (&f)[4]) const
    {
        const uint32_t i = (uint32_t)shared_at<int>(knot + 4 * e) + (uint32_t)(k * kTile);
        const float2 wd = __ldg(tab_wd + i), ab = __half22float2(__ldg(tab_ab + i));
        f[0] = wd.x, f[1] = wd.y, f[2] = ab.x, f[3] = ab.y;
    }
    /* edge e's 4 Hermite coefficients at `coefs` (coef: of w, dcoef: of dw/dt), one vector
     * load */
    __device__ __forceinline__ void hermite_coefs(uint32_t coefs, int e, REAL (&h)[4]) const
    {
        shared_quad(coefs + 4 * e * (int)sizeof(REAL), h);
    }
    /* the lane's D message gradients of row `row` of a tiled dE/dA array with `stride` values
     * per row */
    template <int D>
    __device__ __forceinline__ void msg_row(const REAL *base, uint32_t row, uint32_t stride,
                                            REAL (&g)[D]) const
    {
        tiled_values<D>(base + ga_lane + (size_t)row * stride, g);
    }
    /* the lane's D sender features of h1 row `row` (sender_of) */
    template <int D> __device__ __forceinline__ void x_row(uint32_t row, REAL (&x)[D]) const
    {
        tiled_values<D>(h1 + in_lane + (size_t)row * (uint32_t)din, x);
    }
    /* w and dw/dt of edge e from its table values f (radial_table.cuh) */
    __device__ __forceinline__ REAL weight_from(int e, const REAL (&f)[4]) const
    {
        REAL h[4];
        hermite_coefs(coef, e, h);
        return table_weight(h, f);
    }
    __device__ __forceinline__ REAL slope_from(int e, const REAL (&f)[4]) const
    {
        REAL h[4];
        hermite_coefs(dcoef, e, h);
        return table_slope(h, f);
    }
    __device__ __forceinline__ int sender_of(int e) const { return shared_at<int>(src + 4 * e); }
    __device__ __forceinline__ int receiver_of(int e) const { return shared_at<int>(recv + 4 * e); }
    __device__ __forceinline__ REAL Y(int e, int m) const
    {
        return shared_at<REAL>(y + e * y_stride + m * (int)sizeof(REAL));
    }
    __device__ __forceinline__ REAL weight(int e) const { return shared_at<REAL>(r + e * r_stride); }
};

/* A column pass's per-lane state lives in register arrays. Every such array is zeroed before
 * the edge loop: one first written inside a branch of the loop was kept in local memory by the
 * compiler (loads and stores every edge; bench/NOTES.md v2.5). */
template <int D, typename REAL> __device__ __forceinline__ void zero_values(REAL *a)
{
#pragma unroll
    for (int m = 0; m < D; m++)
        a[m] = 0;
}

/* Which row of dE/dA a backward pass reads (rows of the tiled array; row n_local is zeros).
 * For the reverse edge of an edge sent by j: j's own row when j is owned and the sender-feature
 * gradient is wanted, or always in the ghost pass (its edges are used as they are), else the
 * zero row (loads without predicates or selects). For the receiver i: i's row (a ghost has
 * none: the zero row). */
struct GradRows {
    int zero_row, rev_limit;
    bool ghost;
    __device__ __forceinline__ GradRows(bool ghost_pass, bool need_dx, int n_local)
        : zero_row(n_local),
          rev_limit(ghost_pass ? 0x7fffffff : need_dx ? n_local : 0), ghost(ghost_pass)
    {
    }
    __device__ __forceinline__ uint32_t reverse(int j) const
    {
        return (uint32_t)(j < rev_limit ? j : zero_row);
    }
    __device__ __forceinline__ uint32_t receiver(int i) const
    {
        return (uint32_t)(ghost ? zero_row : i);
    }
};

/* Write (first edge of the receiver's list) or add the lane's D sums at row[m * mul]. */
template <int D, typename REAL>
__device__ __forceinline__ void flush_sums(REAL *row, int mul, bool first, const REAL (&acc)[D])
{
#pragma unroll
    for (int m = 0; m < D; m++)
        row[m * mul] = first ? acc[m] : row[m * mul] + acc[m];
}

/* The forward pass is inlined into the kernel's path switch: it keeps its arrays in registers
 * (as a separate ABI function it spilled them every edge; bench/NOTES.md v2.4). The backward
 * pass is inlined in radial table mode (no MLP GEMMs in that kernel: inlined, its loads no
 * longer move the global-memory descriptor into uniform registers before each one, ~30
 * instructions per edge; v5) and a separate function with the exact MLP (inlined there, the
 * GEMM part of the kernel got slower; v2.4). */
/* TAB (radial table mode): col is the lane's column of the table, and the lane computes its
 * weight per edge from the table; else col is its column in the round's tile of weights.
 * Neither pass prefetches the next edge's rows: the copies between prefetch and compute
 * registers cost more than the latency they hid once the rows were tiled (bench/NOTES.md v6);
 * the other warps hide it. */
template <int L1, int L2, int L3, bool TAB, typename REAL>
__device__ __forceinline__ void column_forward(const ColumnArgs<REAL> &ca, const Path &P, int u, int col,
                               REAL *A, int a_stride)
{
    using T = tpgen::Path<L1, L2, L3>;
    const ColumnView<REAL> c(ca, P, u, col, L2);
    REAL acc[T::D3];
    int cur = -1;
    bool first = false;
    /* not unrolled: one copy of the body keeps the pass inside the instruction cache */
#pragma unroll 1
    for (int e = c.e_first; e < c.n; e++) {
        const int ri = c.receiver_of(e), i = ri & ~kFirstEdge;
        if (i != cur) {
            if (cur >= 0)
                flush_sums<T::D3>(A + (int64_t)cur * a_stride + c.mid_off, c.mid_mul, first, acc);
            cur = i;
            first = (ri & kFirstEdge) != 0;
#pragma unroll
            for (int m3 = 0; m3 < T::D3; m3++)
                acc[m3] = 0;
        }
        REAL x[T::D1], y[T::D2], t[T::D3], f[4] = {0, 0, 0, 0};
        c.x_row((uint32_t)c.sender_of(e), x);
        if constexpr (TAB)
            c.forward_table_rows(e, 0, f);
#pragma unroll
        for (int m2 = 0; m2 < T::D2; m2++)
            y[m2] = c.Y(e, m2);
#pragma unroll
        for (int m3 = 0; m3 < T::D3; m3++)
            t[m3] = 0;
        T::fwd(x, y, t);
        const REAL r = TAB ? c.weight_from(e, f) : c.weight(e);
#pragma unroll
        for (int m3 = 0; m3 < T::D3; m3++)
            acc[m3] += r * t[m3];
    }
    if (cur >= 0)
        flush_sums<T::D3>(A + (int64_t)cur * a_stride + c.mid_off, c.mid_mul, first, acc);
}

/* One halving step of warp_sum_spread: CNT values -> CNT / 2, exchanged with lane ^ OFF. */
template <int CNT, int OFF, typename REAL>
__device__ __forceinline__ void spread_step(REAL *w, int lane, int &base)
{
    if constexpr (CNT > 1) {
        constexpr int half = CNT / 2;
        const bool upper = (lane & OFF) != 0;
#pragma unroll
        for (int j = 0; j < half; j++) {
            const REAL send = upper ? w[j] : w[j + half];
            const REAL keep = upper ? w[j + half] : w[j];
            w[j] = keep + __shfl_xor_sync(0xffffffffu, send, OFF);
        }
        base += upper ? half : 0;
        spread_step<half, OFF / 2, REAL>(w, lane, base);
    } else {
#pragma unroll
        for (int off = OFF; off > 0; off >>= 1)
            w[0] += __shfl_xor_sync(0xffffffffu, w[0], off);
    }
}

/* Sum D values over the 32 lanes of a warp in about D + 5 shuffles instead of 5 D: while more
 * than one value is left, each lane keeps half of its values and sends the other half to its
 * partner (lane ^ off), which adds it to its own; then a butterfly sums the last value. Lanes
 * whose bits 5 - log2(P2) .. 4 agree end with the same sum, of value number *idx (< P2, the
 * values padded to a power of two with zeros; idx >= D are padding). Fixed order, so
 * reproducible. The steps are a template recursion: as a loop over the step, the compiler
 * kept the values of a 16-value sum in local memory. */
template <int D, typename REAL>
__device__ __forceinline__ REAL warp_sum_spread(const REAL (&v)[D], int lane, int *idx)
{
    constexpr int P2 = D <= 1 ? 1 : D <= 2 ? 2 : D <= 4 ? 4 : D <= 8 ? 8 : 16;
    static_assert(D <= 16, "at most 16 values");
    REAL w[P2];
#pragma unroll
    for (int m = 0; m < P2; m++)
        w[m] = m < D ? v[m] : REAL(0);
    int base = 0;
    spread_step<P2, 16, REAL>(w, lane, base);
    *idx = base;
    return w[0];
}

/* dE/dY of one edge (NY values: the pass's Y from its first l2 on) and, with DT, its dE/dt,
 * summed over the warp in a fixed order and added to the warp's row of the edge: dy (its first
 * Y) and dt_at (slot nsh). Up to 8 values: one spread sum, one writer lane per value; more
 * (l2 = 4 alone is 9): a 16-value spread sum (lane pairs hold each value) and a butterfly for
 * dE/dt, written by lane 1. */
template <int NY, bool DT, typename REAL>
__device__ __forceinline__ void warp_sum_dy(const REAL *vy, REAL dt, int lane, uint32_t dy,
                                            uint32_t dt_at)
{
    constexpr int NV = NY + (DT ? 1 : 0);
    int idx;
    /* the previous call's writer lanes (another lane may write a slot this time, dE/dt's
     * above all) have written before this call reads: the shuffles below synchronise the
     * warp's execution but not its shared-memory accesses (compute-sanitizer racecheck) */
    __syncwarp();
    if constexpr (NV <= 8) {
        REAL v[NV];
#pragma unroll
        for (int m = 0; m < NY; m++)
            v[m] = vy[m];
        if constexpr (DT)
            v[NY] = dt;
        constexpr int P2 = NV <= 1 ? 1 : NV <= 2 ? 2 : NV <= 4 ? 4 : 8;
        const REAL s = warp_sum_spread<NV>(v, lane, &idx);
        if ((lane & (32 / P2 - 1)) == 0 && idx < NV)
            shared_at<REAL>(idx < NY ? dy + idx * (int)sizeof(REAL) : dt_at) += s;
    } else {
        static_assert(NY <= 16, "more than 8 values: dE/dY of up to 16 (and dE/dt)");
        REAL v[NY];
#pragma unroll
        for (int m = 0; m < NY; m++)
            v[m] = vy[m];
        const REAL s = warp_sum_spread<NY>(v, lane, &idx);
        if constexpr (DT) {
#pragma unroll
            for (int off = 16; off > 0; off >>= 1)
                dt += __shfl_xor_sync(0xffffffffu, dt, off);
        }
        /* the even lane of each pair writes its value of dE/dY, lane 1 dE/dt */
        const bool odd = (lane & 1) != 0;
        if (odd ? DT && lane == 1 : idx < NY)
            shared_at<REAL>(odd ? dt_at : dy + idx * (int)sizeof(REAL)) += odd ? dt : s;
    }
}

/* Backward of one warp task; every lane runs the edge loop because of the warp reduction.
 * Inactive lanes (channels past the path's mul) read the zero padding of the tiled rows, so
 * their contributions are zeros without a branch; only their dE/dh1 sums are not written.
 * dYw: this warp's dE/dY accumulator rows [edge][dyw_ld]. */
/* ghost: the super-chunk holds edges sent by ghost atoms (sRecv = the ghost, sSrc = the
 * receiver): only the sender-feature gradient is wanted, through the edge itself (no flip). */
/* What the backward pass reads per edge e from global memory: the sender's features x, its
 * message gradients gj when the reverse edge is used (else the zero row of GA: loads without
 * predicates or selects) and, in table mode, the edge's 4 table values f. */
template <bool TAB, int D1, int D3, typename REAL>
__device__ __forceinline__ void fetch_sender(const ColumnView<REAL> &c, int e, const REAL *GA,
                                             int ga_stride, const GradRows &rows,
                                             REAL (&x)[D1], REAL (&gj)[D3], REAL (&f)[4])
{
    const int j = c.sender_of(e);
    c.x_row((uint32_t)j, x);
    c.msg_row(GA, rows.reverse(j), (uint32_t)ga_stride, gj);
    if constexpr (TAB)
        c.table_rows(e, f);
}

/* TAB (radial table mode): col is the lane's table column; the lane computes its weight and
 * dw/dt per edge from the table, and dE/dw . dw/dt joins the warp sum of dE/dY as one more
 * value, written to slot nsh of the warp's row: dE/dt of the edge (dr_tile is not used). */
template <int L1, int L2, int L3, bool TAB, typename REAL>
__device__ __forceinline__ void column_backward_body(const ColumnArgs<REAL> &ca, const Path &P, int u, int col,
                                bool active, const REAL *GA, int ga_stride, int n_local,
                                bool need_dx, bool ghost, uint32_t dr_tile, uint32_t dyw,
                                int dyw_ld, REAL *dxpart, int dx_stride)
{
    using T = tpgen::Path<L1, L2, L3>;
    const ColumnView<REAL> c(ca, P, u, col, L2);
    const int lane = threadIdx.x & 31;
    const REAL flip = (!ghost && (L2 & 1)) ? REAL(-1) : REAL(1);
    const int dx_off = P.dx_off + u, dx_mul = P.mul;
    /* dE/d(radial weight) of edge e at dr_out + e * r_stride (the round's tile of them has the
     * layout of the weights' tile) */
    const uint32_t dr_out = dr_tile + col * (int)sizeof(REAL);
    /* where dE/dY (and dE/dt) of edge e go, + e * dyw_ld values */
    const uint32_t dy_out = dyw + L2 * L2 * (int)sizeof(REAL);
    const uint32_t dt_out = dyw + c.y_stride; /* slot nsh */
    /* per edge: the sender's features x, its message gradients gj (reverse edge) and, in
     * table mode, the 4 table values (fetch_sender); the receiver's own message gradients g
     * once per receiver */
    REAL dxacc[T::D1], g[T::D3];
    zero_values<T::D1>(dxacc);
    zero_values<T::D3>(g);
    int cur = -1;
    bool first = false;
    const GradRows rows(ghost, need_dx, n_local);
#pragma unroll 1
    for (int e = c.e_first; e < c.n; e++) {
        const int ri = c.receiver_of(e), i = ri & ~kFirstEdge;
        if (i != cur) {
            if (cur >= 0 && active && need_dx)
                flush_sums<T::D1>(dxpart + (int64_t)(cur - ca.dx_row0) * dx_stride + dx_off, dx_mul, first,
                                  dxacc);
            cur = i;
            first = (ri & kFirstEdge) != 0;
            zero_values<T::D1>(dxacc);
            /* the receiver's message gradients, in registers for all its edges */
            c.msg_row(GA, rows.receiver(i), (uint32_t)ga_stride, g);
        }
        REAL v[T::D2], dt = 0;
        zero_values<T::D2>(v);
        {
            REAL x[T::D1], y[T::D2], gj[T::D3], dxr[T::D1], f[4] = {0, 0, 0, 0}, dr = 0;
            fetch_sender<TAB>(c, e, GA, ga_stride, rows, x, gj, f);
#pragma unroll
            for (int m1 = 0; m1 < T::D1; m1++)
                dxr[m1] = 0;
#pragma unroll
            for (int m2 = 0; m2 < T::D2; m2++)
                y[m2] = c.Y(e, m2);
            T::bwd(x, y, g, gj, v, dxr);
            /* the ghost pass wants only dE/dh1 (group_backward) */
            if (!ghost) {
#pragma unroll
                for (int m2 = 0; m2 < T::D2; m2++)
                    dr += y[m2] * v[m2];
            }
            REAL r;
            if constexpr (TAB) {
                r = c.weight_from(e, f);
                if (!ghost)
                    dt = dr * c.slope_from(e, f);
            } else {
                r = c.weight(e);
                if (!ghost)
                    shared_at<REAL>(dr_out + e * c.r_stride) = dr;
            }
            const REAL fr = flip * r;
#pragma unroll
            for (int m1 = 0; m1 < T::D1; m1++)
                dxacc[m1] += fr * dxr[m1];
            if (!ghost) {
#pragma unroll
                for (int m2 = 0; m2 < T::D2; m2++)
                    v[m2] *= r;
            }
        }
        /* dE/dY (and dE/dt) of this edge: summed over the warp (fixed order) */
        if (!ghost)
            warp_sum_dy<T::D2, TAB>(v, dt, lane, dy_out + e * dyw_ld * (int)sizeof(REAL),
                                    dt_out + e * dyw_ld * (int)sizeof(REAL));
    }
    if (cur >= 0 && active && need_dx)
        flush_sums<T::D1>(dxpart + (int64_t)(cur - ca.dx_row0) * dx_stride + dx_off, dx_mul, first, dxacc);
}

/* The backward pass as a separate function (exact-MLP kernel; see above). */
template <int L1, int L2, int L3, bool TAB, typename REAL>
__device__ __noinline__ void column_backward(const ColumnArgs<REAL> &ca, const Path &P, int u, int col,
                                bool active, const REAL *GA, int ga_stride, int n_local,
                                bool need_dx, bool ghost, uint32_t dr_tile, uint32_t dyw,
                                int dyw_ld, REAL *dxpart, int dx_stride)
{
    column_backward_body<L1, L2, L3, TAB, REAL>(ca, P, u, col, active, GA, ga_stride, n_local,
                                                need_dx, ghost, dr_tile, dyw, dyw_ld, dxpart,
                                                dx_stride);
}

template <bool TAB, typename REAL>
__device__ __forceinline__ void column_forward_dispatch(const ColumnArgs<REAL> &c, const Path &P, int u, int col,
                                        REAL *A, int a_stride)
{
    switch (FNQ_TP_CODE(P.l1, P.l2, P.l3)) {
#define FNQ_CASE(a, b, d)                                                                       \
    case FNQ_TP_CODE(a, b, d):                                                                  \
        column_forward<a, b, d, TAB, REAL>(c, P, u, col, A, a_stride);                          \
        break;
        FNQ_TP_PATHS(FNQ_CASE)
#undef FNQ_CASE
    default: break;
    }
}

/* TAB: the inlined body (table mode), else the separate function */
template <bool TAB, typename REAL>
__device__ __forceinline__ void column_backward_dispatch(const ColumnArgs<REAL> &c, const Path &P, int u, int col,
                                         bool active, const REAL *GA, int ga_stride, int n_local,
                                         bool need_dx, bool ghost, uint32_t dr_tile, uint32_t dyw,
                                         int dyw_ld, REAL *dxpart, int dx_stride)
{
    switch (FNQ_TP_CODE(P.l1, P.l2, P.l3)) {
#define FNQ_CASE(a, b, d)                                                                       \
    case FNQ_TP_CODE(a, b, d):                                                                  \
        if constexpr (TAB)                                                                      \
            column_backward_body<a, b, d, TAB, REAL>(c, P, u, col, active, GA, ga_stride,       \
                                                     n_local, need_dx, ghost, dr_tile, dyw,     \
                                                     dyw_ld, dxpart, dx_stride);                \
        else                                                                                    \
            column_backward<a, b, d, TAB, REAL>(c, P, u, col, active, GA, ga_stride, n_local,   \
                                                need_dx, ghost, dr_tile, dyw, dyw_ld, dxpart,   \
                                                dx_stride);                                     \
        break;
        FNQ_TP_PATHS(FNQ_CASE)
#undef FNQ_CASE
    default: break;
    }
}

} // namespace fnqcu
