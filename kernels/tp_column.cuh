/*
 * tp_column.cuh: the tensor product by columns. A warp owns 32 consecutive channels ("lanes")
 * of one path (l1, l2 -> l3); each lane walks the edges of a super-chunk in order, with the
 * path's Clebsch-Gordan terms compiled in (tp_code.inc, generated at build time), so the
 * lane's sender features, spherical harmonics and accumulators are registers.
 *
 * Forward: the lane sums its channel's messages over each receiver's edges and writes them to
 *   the receiver's message vector A (it is the only writer of those elements).
 * Backward: per edge, dE/d(radial weight) of the lane's channel (into shared memory, for the
 *   MLP-gradient GEMM), dE/dY (a fixed-order warp butterfly, then one write per warp), and the
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
    return ca;
}

template <typename REAL>
__device__ __forceinline__ const REAL *column_sender(const ColumnArgs<REAL> &c, int j)
{
    return c.by_species ? c.h1 + (int64_t)c.species[j] * c.din : c.h1 + (int64_t)j * c.din;
}

template <int L1, int L2, int L3, typename REAL>
__device__ __noinline__ void column_forward(const ColumnArgs<REAL> &c, const Path &P, int u, int col,
                               REAL *A, int a_stride)
{
    using T = tpgen::Path<L1, L2, L3>;
    REAL acc[T::D3];
    int cur = -1;
    bool first = false;
    auto flush = [&](int i) {
        REAL *a = A + (int64_t)i * a_stride + P.mid_off + P.out_chan + u;
#pragma unroll
        for (int m3 = 0; m3 < T::D3; m3++)
            a[m3 * P.mid_mul] = first ? acc[m3] : a[m3 * P.mid_mul] + acc[m3];
    };
    /* the next edge's sender features are loaded while this edge is computed */
    REAL xn[T::D1];
    if (c.n > 0) {
        const REAL *xr = column_sender(c, c.sSrc[0]) + P.in_off + u;
#pragma unroll
        for (int m1 = 0; m1 < T::D1; m1++)
            xn[m1] = xr[m1 * P.in_mul];
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
        const REAL *xr = column_sender(c, c.sSrc[e + 1 < c.n ? e + 1 : e]) + P.in_off + u;
#pragma unroll
        for (int m1 = 0; m1 < T::D1; m1++)
            xn[m1] = xr[m1 * P.in_mul];
#pragma unroll
        for (int m2 = 0; m2 < T::D2; m2++)
            y[m2] = c.sY[e * c.nsh + L2 * L2 + m2];
#pragma unroll
        for (int m3 = 0; m3 < T::D3; m3++)
            t[m3] = 0;
        T::fwd(x, y, t);
        const REAL r = c.sR[e * c.ldr + col];
#pragma unroll
        for (int m3 = 0; m3 < T::D3; m3++)
            acc[m3] += r * t[m3];
    }
    if (cur >= 0)
        flush(cur);
}

/* Backward of one warp task; every lane runs the edge loop (inactive lanes contribute zeros)
 * because of the warp reduction. dYw: this warp's dE/dY accumulator rows [edge][dyw_ld]. */
/* ghost: the super-chunk holds edges sent by ghost atoms (sRecv = the ghost, sSrc = the
 * receiver): only the sender-feature gradient is wanted, through the edge itself (no flip). */
template <int L1, int L2, int L3, typename REAL>
__device__ __noinline__ void column_backward(const ColumnArgs<REAL> &c, const Path &P, int u, int col,
                                bool active, const REAL *GA, int ga_stride, int n_local,
                                bool need_dx, bool ghost, REAL *sDR, int lddr, REAL *dYw,
                                int dyw_ld, REAL *dxpart, int dx_stride)
{
    using T = tpgen::Path<L1, L2, L3>;
    const int lane = threadIdx.x & 31;
    const REAL flip = (!ghost && (L2 & 1)) ? REAL(-1) : REAL(1);
    REAL g[T::D3], dxacc[T::D1];
    int cur = -1;
    bool first = false;
    auto flush = [&](int i) {
        REAL *d = dxpart + (int64_t)i * dx_stride + P.dx_off + u;
#pragma unroll
        for (int m1 = 0; m1 < T::D1; m1++)
            d[m1 * P.mul] = first ? dxacc[m1] : d[m1 * P.mul] + dxacc[m1];
    };
    /* the next edge's sender features and reverse-edge gradients are loaded ahead */
    REAL xn[T::D1], gjn[T::D3];
    bool revn = false;
    auto load_next = [&](int e) {
        const int j = c.sSrc[e];
        const REAL *xr = column_sender(c, j) + P.in_off + u;
#pragma unroll
        for (int m1 = 0; m1 < T::D1; m1++)
            xn[m1] = xr[m1 * P.in_mul];
        revn = ghost || (need_dx && j < n_local);
        const REAL *gr = GA + (int64_t)j * ga_stride + P.mid_off + P.out_chan + u;
#pragma unroll
        for (int m3 = 0; m3 < T::D3; m3++)
            gjn[m3] = revn ? gr[m3 * P.mid_mul] : REAL(0);
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
            const REAL *gi = GA + (int64_t)i * ga_stride + P.mid_off + P.out_chan + u;
#pragma unroll
            for (int m3 = 0; m3 < T::D3; m3++)
                g[m3] = (active && !ghost) ? gi[m3 * P.mid_mul] : REAL(0);
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
                y[m2] = c.sY[e * c.nsh + L2 * L2 + m2];
            T::bwd(x, y, g, gj, dr, v, dxr, rev);
            const REAL r = c.sR[e * c.ldr + col];
            sDR[e * lddr + col] = dr;
#pragma unroll
            for (int m1 = 0; m1 < T::D1; m1++)
                dxacc[m1] += flip * r * dxr[m1];
#pragma unroll
            for (int m2 = 0; m2 < T::D2; m2++)
                v[m2] *= r;
        }
        /* dE/dY of this edge: butterfly over the warp (fixed order), then one write */
#pragma unroll
        for (int m2 = 0; m2 < T::D2; m2++) {
            REAL s = v[m2];
#pragma unroll
            for (int off = 16; off > 0; off >>= 1)
                s += __shfl_xor_sync(0xffffffffu, s, off);
            v[m2] = s;
        }
        if (lane == 0)
#pragma unroll
            for (int m2 = 0; m2 < T::D2; m2++)
                dYw[e * dyw_ld + L2 * L2 + m2] += v[m2];
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
