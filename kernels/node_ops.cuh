/*
 * node_ops.cuh: per-atom operations on feature vectors held in shared memory, written for one
 * thread block working on one atom: e3nn linears (and their transposes), the RMS layer norm,
 * the gate, forward and backward. Every output element has one owning thread and a fixed
 * summation order, so results do not depend on scheduling.
 */
#pragma once

#include "common.cuh"
#include "model_dev.cuh"

namespace fnqcu {

__device__ __forceinline__ int block_of(const Irreps &ir, int o)
{
    int b = 0;
    while (b + 1 < ir.n && o >= ir.off[b + 1])
        b++;
    return b;
}

/* y = linear(x) (accumulate: y += ...). x, y in shared memory; t = species. */
template <typename REAL>
__device__ void linear_fwd(const Linear<REAL> &lin, const Irreps &in, const Irreps &out, int t,
                           const REAL *x, REAL *y, bool accumulate)
{
    const REAL *W = lin.w + (lin.species_indexed ? (int64_t)t * lin.n_w : 0);
    for (int o = threadIdx.x; o < out.dim; o += blockDim.x) {
        const int b = block_of(out, o), mo = out.mul[b];
        const int rel = o - out.off[b], m = rel / mo, w = rel % mo;
        REAL acc = 0;
        for (int k = 0; k < lin.n_instr; k++) {
            const LinInstr ins = lin.instr[k];
            if (ins.out_block != b)
                continue;
            const int mi = in.mul[ins.in_block];
            const REAL *xr = x + in.off[ins.in_block] + m * mi;
            const REAL *wc = W + ins.w_off + w;
            REAL s = 0;
            for (int u = 0; u < mi; u++)
                s += xr[u] * wc[(int64_t)u * mo];
            acc += REAL(ins.alpha) * s;
        }
        y[o] = accumulate ? y[o] + acc : acc;
    }
}

/* dx = linear^T(dy) (accumulate: dx += ...) */
template <typename REAL>
__device__ void linear_bwd(const Linear<REAL> &lin, const Irreps &in, const Irreps &out, int t,
                           const REAL *dy, REAL *dx, bool accumulate)
{
    const REAL *Wt = lin.wt + (lin.species_indexed ? (int64_t)t * lin.n_w : 0);
    for (int o = threadIdx.x; o < in.dim; o += blockDim.x) {
        const int b = block_of(in, o), mi = in.mul[b];
        const int rel = o - in.off[b], m = rel / mi, u = rel % mi;
        REAL acc = 0;
        for (int k = 0; k < lin.n_instr; k++) {
            const LinInstr ins = lin.instr[k];
            if (ins.in_block != b)
                continue;
            const int mo = out.mul[ins.out_block];
            const REAL *gr = dy + out.off[ins.out_block] + m * mo;
            const REAL *wc = Wt + ins.w_off + u;
            REAL s = 0;
            for (int w = 0; w < mo; w++)
                s += gr[w] * wc[(int64_t)w * mi];
            acc += REAL(ins.alpha) * s;
        }
        dx[o] = accumulate ? dx[o] + acc : acc;
    }
}

/* Deterministic block sum: each thread's value, tree-reduced in a fixed order. red has
 * blockDim.x doubles. Every thread gets the result. */
__device__ __forceinline__ double block_sum(double v, double *red)
{
    red[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    double r = red[0];
    __syncthreads();
    return r;
}

/* RMS layer norm factor rho = (sum_b 1/(d_b^2 B) sum y_b^2 + eps)^-1/2 */
template <typename REAL>
__device__ REAL norm_rho(const Layer<REAL> &L, const REAL *y, double *red)
{
    double part = 0.0;
    for (int o = threadIdx.x; o < L.conv.dim; o += blockDim.x) {
        const int b = block_of(L.conv, o);
        const double d = 2 * L.conv.l[b] + 1;
        part += (double)y[o] * (double)y[o] / (d * d * L.conv.n);
    }
    const double N = block_sum(part, red);
    return REAL(1.0 / sqrt(N + L.norm_eps));
}

template <typename REAL>
__device__ void norm_apply(const Layer<REAL> &L, const REAL *y, REAL rho, REAL *yn)
{
    for (int o = threadIdx.x; o < L.conv.dim; o += blockDim.x) {
        const int b = block_of(L.conv, o);
        const int u = (o - L.conv.off[b]) % L.conv.mul[b];
        yn[o] = y[o] * L.norm_w[L.norm_off[b] + u] * rho;
    }
}

/* gy = gamma rho gyn - rho^3 S w_b y, S = sum gyn gamma y */
template <typename REAL>
__device__ void norm_bwd(const Layer<REAL> &L, const REAL *y, REAL rho, const REAL *gyn, REAL *gy,
                         double *red)
{
    double part = 0.0;
    for (int o = threadIdx.x; o < L.conv.dim; o += blockDim.x) {
        const int b = block_of(L.conv, o);
        const int u = (o - L.conv.off[b]) % L.conv.mul[b];
        part += (double)gyn[o] * (double)L.norm_w[L.norm_off[b] + u] * (double)y[o];
    }
    const double S = block_sum(part, red);
    const double r3 = (double)rho * rho * rho;
    for (int o = threadIdx.x; o < L.conv.dim; o += blockDim.x) {
        const int b = block_of(L.conv, o);
        const int u = (o - L.conv.off[b]) % L.conv.mul[b];
        const double d = 2 * L.conv.l[b] + 1;
        const REAL c = REAL(r3 * S / (d * d * L.conv.n));
        gy[o] = L.norm_w[L.norm_off[b] + u] * rho * gyn[o] - c * y[o];
    }
}

template <typename REAL> __device__ void gate_fwd(const Layer<REAL> &L, const REAL *yn, REAL *h)
{
    for (int o = threadIdx.x; o < L.out.dim; o += blockDim.x) {
        const int k = block_of(L.out, o), mo = L.out.mul[k];
        const int rel = o - L.out.off[k], m = rel / mo, u = rel % mo;
        const GateOut g = L.gate[k];
        REAL v = act_apply<REAL>(g.act.kind, REAL(g.act.scale),
                                 yn[g.src_off + m * g.src_mul + g.src_chan + u]);
        if (g.gate_off >= 0)
            v *= act_apply<REAL>(g.gate_act.kind, REAL(g.gate_act.scale), yn[g.gate_off + u]);
        h[o] = v;
    }
}

/* gyn = gate^T(gh): each conv element has one owner (sources and gate scalars are disjoint) */
template <typename REAL>
__device__ void gate_bwd(const Layer<REAL> &L, const REAL *yn, const REAL *gh, REAL *gyn)
{
    for (int o = threadIdx.x; o < L.conv.dim; o += blockDim.x)
        gyn[o] = 0;
    __syncthreads();
    /* gated and scalar sources: one thread per output element */
    for (int o = threadIdx.x; o < L.out.dim; o += blockDim.x) {
        const int k = block_of(L.out, o), mo = L.out.mul[k];
        const int rel = o - L.out.off[k], m = rel / mo, u = rel % mo;
        const GateOut g = L.gate[k];
        const int si = g.src_off + m * g.src_mul + g.src_chan + u;
        REAL gv = 1;
        if (g.gate_off >= 0)
            gv = act_apply<REAL>(g.gate_act.kind, REAL(g.gate_act.scale), yn[g.gate_off + u]);
        gyn[si] = gh[o] * gv * act_deriv<REAL>(g.act.kind, REAL(g.act.scale), yn[si]);
    }
    /* gate scalars: one thread per (out block, channel), summing over m in order */
    for (int k = 0; k < L.out.n; k++) {
        const GateOut g = L.gate[k];
        if (g.gate_off < 0)
            continue;
        const int mo = L.out.mul[k], d = 2 * L.out.l[k] + 1;
        for (int u = threadIdx.x; u < mo; u += blockDim.x) {
            REAL s = 0;
            for (int m = 0; m < d; m++) {
                const int si = g.src_off + m * g.src_mul + g.src_chan + u;
                s += gh[L.out.off[k] + m * mo + u] *
                     act_apply<REAL>(g.act.kind, REAL(g.act.scale), yn[si]);
            }
            gyn[g.gate_off + u] =
                s * act_deriv<REAL>(g.gate_act.kind, REAL(g.gate_act.scale), yn[g.gate_off + u]);
        }
    }
    __syncthreads();
}

} // namespace fnqcu
