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
 */
#pragma once

#include "common.cuh"
#include "model_dev.cuh"
#include "tp_code.inc"

namespace fnqcu {

/* What a column pass needs besides the path itself. */
template <typename REAL> struct ColumnArgs {
    int n;                  /* edges in the super-chunk */
    int64_t e_base;         /* global index of edge 0 of the super-chunk */
    const int64_t *recv_start;
    const int *sSrc, *sRecv; /* per edge: sender, receiver */
    const REAL *sY;
    int nsh;
    const REAL *sR; /* radial weights of this round: [edge][ldr] */
    int ldr;
    /* sender features: h1[j * din], or the per-species table for layer 0 */
    const REAL *h1;
    const int *species;
    int by_species, din;
    int skip; /* FNQ_SKIP bits (kSkipGather*): timing only */
};

/* The per-kernel part of ColumnArgs: staged edges in shared memory (lay: the kernel's shared
 * memory layout) and the layer's sender features (a: the kernel's arguments). n and e_base are
 * set per super-chunk. */
template <typename REAL, typename Args, typename Layout>
__device__ __forceinline__ ColumnArgs<REAL> column_args(const Args &a, const Layout &lay,
                                                        const int64_t *recv_start,
                                                        const int *sSrc, const int *sRecv,
                                                        const REAL *sY, const REAL *sR, int din)
{
    ColumnArgs<REAL> ca;
    ca.n = 0;
    ca.e_base = 0;
    ca.recv_start = recv_start;
    ca.sSrc = sSrc;
    ca.sRecv = sRecv;
    ca.sY = sY;
    ca.nsh = lay.nsh;
    ca.sR = sR;
    ca.ldr = lay.ldr;
    ca.h1 = a.layer == 0 ? a.h1_table : a.h1;
    ca.species = a.species;
    ca.by_species = a.layer == 0;
    ca.din = din;
    ca.skip = a.skip;
    return ca;
}

/* What a column pass reads in its edge loop, copied into registers once: the pass stores
 * through generic pointers, so fields read through the ColumnArgs and Path references would be
 * reloaded after every store. */
template <typename REAL> struct ColumnView {
    int n, nsh, ldr, din, skip;
    int64_t e_base;
    const int64_t *recv_start;
    const int *sSrc, *sRecv, *species;
    const REAL *sY, *sR, *h1;
    bool by_species;
    int in_off, in_mul; /* the path's sender features: h1 row + in_off + m1 * in_mul + u */
    int mid_off, mid_mul; /* its messages: A row + mid_off + m3 * mid_mul (u included) */

    __device__ __forceinline__ ColumnView(const ColumnArgs<REAL> &c, const Path &P, int u, int col,
                                          int l2)
        : n(c.n), nsh(c.nsh), ldr(c.ldr), din(c.din), skip(c.skip), e_base(c.e_base), recv_start(c.recv_start),
          sSrc(c.sSrc), sRecv(c.sRecv), species(c.species), sY(c.sY + l2 * l2), sR(c.sR + col),
          h1(c.h1), by_species(c.by_species != 0), in_off(P.in_off + u), in_mul(P.in_mul),
          mid_off(P.mid_off + P.out_chan + u), mid_mul(P.mid_mul)
    {
    }
    /* the lane's sender features of atom j, element m1 at [m1 * in_mul] */
    __device__ __forceinline__ const REAL *sender(int j) const
    {
        return (by_species ? h1 + (int64_t)species[j] * din : h1 + (int64_t)j * din) + in_off;
    }
};

template <int L1, int L2, int L3, typename REAL>
__device__ __noinline__ void column_forward(const ColumnArgs<REAL> &ca, const Path &P, int u, int col,
                               REAL *A, int a_stride)
{
    using T = tpgen::Path<L1, L2, L3>;
    const ColumnView<REAL> c(ca, P, u, col, L2);
    REAL acc[T::D3];
    int cur = -1;
    bool first = false;
    auto flush = [&](int i) {
        REAL *a = A + (int64_t)i * a_stride + c.mid_off;
#pragma unroll
        for (int m3 = 0; m3 < T::D3; m3++)
            a[m3 * c.mid_mul] = first ? acc[m3] : a[m3 * c.mid_mul] + acc[m3];
    };
    /* the next edge's sender features are loaded while this edge is computed */
    REAL xn[T::D1];
    if (c.n > 0) {
        const REAL *xr = c.sender(c.sSrc[0]);
#pragma unroll
        for (int m1 = 0; m1 < T::D1; m1++)
            xn[m1] = xr[m1 * c.in_mul];
    }
    for (int e = 0; e < c.n; e++) {
        const int i = c.sRecv[e];
        if (i != cur) {
            if (cur >= 0)
                flush(cur);
            cur = i;
            first = c.e_base + e == c.recv_start[i];
#pragma unroll
            for (int m3 = 0; m3 < T::D3; m3++)
                acc[m3] = 0;
        }
        REAL x[T::D1], y[T::D2], t[T::D3];
#pragma unroll
        for (int m1 = 0; m1 < T::D1; m1++)
            x[m1] = xn[m1];
        const int en = e + 1 < c.n ? e + 1 : e;
        const REAL *xr = c.sender((c.skip & kSkipGatherX) ? c.sRecv[en] : c.sSrc[en]);
#pragma unroll
        for (int m1 = 0; m1 < T::D1; m1++)
            xn[m1] = xr[m1 * c.in_mul];
#pragma unroll
        for (int m2 = 0; m2 < T::D2; m2++)
            y[m2] = c.sY[e * c.nsh + m2];
#pragma unroll
        for (int m3 = 0; m3 < T::D3; m3++)
            t[m3] = 0;
        T::fwd(x, y, t);
        const REAL r = c.sR[e * c.ldr];
#pragma unroll
        for (int m3 = 0; m3 < T::D3; m3++)
            acc[m3] += r * t[m3];
    }
    if (cur >= 0)
        flush(cur);
}

/* Sum D values over the 32 lanes of a warp in about D + 5 shuffles instead of 5 D: while more
 * than one value is left, each lane keeps half of its values and sends the other half to its
 * partner (lane ^ off), which adds it to its own; then a butterfly sums the last value. Lanes
 * whose bits 4.. agree end with the same sum, of value number *idx (< P2, the values padded to
 * a power of two with zeros; idx >= D are padding). Fixed order, so reproducible. */
template <int D, typename REAL>
__device__ __forceinline__ REAL warp_sum_spread(const REAL (&v)[D], int lane, int *idx)
{
    constexpr int P2 = D <= 1 ? 1 : D <= 2 ? 2 : D <= 4 ? 4 : 8;
    static_assert(D <= 8, "at most 8 values");
    REAL w[P2];
#pragma unroll
    for (int m = 0; m < P2; m++)
        w[m] = m < D ? v[m] : REAL(0);
    int base = 0, off = 16;
#pragma unroll
    for (int cnt = P2; cnt > 1; cnt >>= 1, off >>= 1) {
        const int half = cnt >> 1;
        const bool upper = (lane & off) != 0;
#pragma unroll
        for (int j = 0; j < half; j++) {
            const REAL send = upper ? w[j] : w[j + half];
            const REAL keep = upper ? w[j + half] : w[j];
            w[j] = keep + __shfl_xor_sync(0xffffffffu, send, off);
        }
        base += upper ? half : 0;
    }
#pragma unroll
    for (; off > 0; off >>= 1)
        w[0] += __shfl_xor_sync(0xffffffffu, w[0], off);
    *idx = base;
    return w[0];
}

/* Backward of one warp task; every lane runs the edge loop (inactive lanes contribute zeros)
 * because of the warp reduction. dYw: this warp's dE/dY accumulator rows [edge][dyw_ld]. */
/* ghost: the super-chunk holds edges sent by ghost atoms (sRecv = the ghost, sSrc = the
 * receiver): only the sender-feature gradient is wanted, through the edge itself (no flip). */
template <int L1, int L2, int L3, typename REAL>
__device__ __noinline__ void column_backward(const ColumnArgs<REAL> &ca, const Path &P, int u, int col,
                                bool active, const REAL *GA, int ga_stride, int n_local,
                                bool need_dx, bool ghost, REAL *sDR, int lddr, REAL *dYw,
                                int dyw_ld, REAL *dxpart, int dx_stride)
{
    using T = tpgen::Path<L1, L2, L3>;
    constexpr int P2 = T::D2 <= 1 ? 1 : T::D2 <= 2 ? 2 : T::D2 <= 4 ? 4 : 8;
    const ColumnView<REAL> c(ca, P, u, col, L2);
    const int lane = threadIdx.x & 31;
    const REAL flip = (!ghost && (L2 & 1)) ? REAL(-1) : REAL(1);
    const int dx_off = P.dx_off + u, dx_mul = P.mul;
    REAL *dr_out = sDR + col;
    /* the lanes that write dE/dY after the reduction: one per value */
    REAL *dy_out = dYw + L2 * L2;
    const bool dy_writer = (lane & (32 / P2 - 1)) == 0;
    REAL g[T::D3], dxacc[T::D1];
    int cur = -1;
    bool first = false;
    auto flush = [&](int i) {
        REAL *d = dxpart + (int64_t)i * dx_stride + dx_off;
#pragma unroll
        for (int m1 = 0; m1 < T::D1; m1++)
            d[m1 * dx_mul] = first ? dxacc[m1] : d[m1 * dx_mul] + dxacc[m1];
    };
    /* the next edge's sender features and reverse-edge gradients are loaded ahead */
    REAL xn[T::D1], gjn[T::D3];
    bool revn = false;
    auto load_next = [&](int e) {
        const int j = c.sSrc[e];
        const REAL *xr = c.sender((c.skip & kSkipGatherX) ? c.sRecv[e] : j);
#pragma unroll
        for (int m1 = 0; m1 < T::D1; m1++)
            xn[m1] = xr[m1 * c.in_mul];
        revn = ghost || (need_dx && j < n_local);
        const int jg = (c.skip & kSkipGatherGrad) ? c.sRecv[e] : j;
        const REAL *gr = GA + (int64_t)jg * ga_stride + c.mid_off;
#pragma unroll
        for (int m3 = 0; m3 < T::D3; m3++)
            gjn[m3] = revn ? gr[m3 * c.mid_mul] : REAL(0);
    };
    if (c.n > 0 && active)
        load_next(0);
    for (int e = 0; e < c.n; e++) {
        const int i = c.sRecv[e];
        if (i != cur) {
            if (cur >= 0 && active && need_dx)
                flush(cur);
            cur = i;
            first = c.e_base + e == c.recv_start[i];
            const REAL *gi = GA + (int64_t)i * ga_stride + c.mid_off;
#pragma unroll
            for (int m3 = 0; m3 < T::D3; m3++)
                g[m3] = (active && !ghost) ? gi[m3 * c.mid_mul] : REAL(0);
#pragma unroll
            for (int m1 = 0; m1 < T::D1; m1++)
                dxacc[m1] = 0;
        }
        REAL v[T::D2];
#pragma unroll
        for (int m2 = 0; m2 < T::D2; m2++)
            v[m2] = 0;
        if (active) {
            REAL x[T::D1], y[T::D2], gj[T::D3], dxr[T::D1], dr = 0;
            const bool rev = revn;
#pragma unroll
            for (int m1 = 0; m1 < T::D1; m1++) {
                x[m1] = xn[m1];
                dxr[m1] = 0;
            }
#pragma unroll
            for (int m3 = 0; m3 < T::D3; m3++)
                gj[m3] = gjn[m3];
            if (e + 1 < c.n)
                load_next(e + 1);
#pragma unroll
            for (int m2 = 0; m2 < T::D2; m2++)
                y[m2] = c.sY[e * c.nsh + m2];
            T::bwd(x, y, g, gj, v, dxr, rev);
#pragma unroll
            for (int m2 = 0; m2 < T::D2; m2++)
                dr += y[m2] * v[m2];
            const REAL r = c.sR[e * c.ldr];
            dr_out[e * lddr] = dr;
            const REAL fr = flip * r;
#pragma unroll
            for (int m1 = 0; m1 < T::D1; m1++)
                dxacc[m1] += fr * dxr[m1];
#pragma unroll
            for (int m2 = 0; m2 < T::D2; m2++)
                v[m2] *= r;
        }
        /* dE/dY of this edge: summed over the warp (fixed order), one write per value */
        int m2;
        const REAL s = warp_sum_spread<T::D2>(v, lane, &m2);
        if (dy_writer && m2 < T::D2)
            dy_out[e * dyw_ld + m2] += s;
    }
    if (cur >= 0 && active && need_dx)
        flush(cur);
}

#define FNQ_TP_CODE(l1, l2, l3) ((l1) * 16 + (l2) * 4 + (l3))

template <typename REAL>
__device__ void column_forward_dispatch(const ColumnArgs<REAL> &c, const Path &P, int u, int col,
                                        REAL *A, int a_stride)
{
    switch (FNQ_TP_CODE(P.l1, P.l2, P.l3)) {
#define FNQ_CASE(a, b, d)                                                                       \
    case FNQ_TP_CODE(a, b, d):                                                                  \
        column_forward<a, b, d, REAL>(c, P, u, col, A, a_stride);                               \
        break;
        FNQ_TP_PATHS(FNQ_CASE)
#undef FNQ_CASE
    default: break;
    }
}

template <typename REAL>
__device__ void column_backward_dispatch(const ColumnArgs<REAL> &c, const Path &P, int u, int col,
                                         bool active, const REAL *GA, int ga_stride, int n_local,
                                         bool need_dx, bool ghost, REAL *sDR, int lddr, REAL *dYw,
                                         int dyw_ld, REAL *dxpart, int dx_stride)
{
    switch (FNQ_TP_CODE(P.l1, P.l2, P.l3)) {
#define FNQ_CASE(a, b, d)                                                                       \
    case FNQ_TP_CODE(a, b, d):                                                                  \
        column_backward<a, b, d, REAL>(c, P, u, col, active, GA, ga_stride, n_local, need_dx,   \
                                       ghost, sDR, lddr, dYw, dyw_ld, dxpart, dx_stride);       \
        break;
        FNQ_TP_PATHS(FNQ_CASE)
#undef FNQ_CASE
    default: break;
    }
}

} // namespace fnqcu
