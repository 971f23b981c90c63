/*
 * node_ops.cuh: per-atom operations on feature vectors for one thread block working on up to NB
 * atoms at once (atom a's vector at base + a * stride): e3nn linears and their transposes (each
 * weight is loaded once and used for all NB atoms), the RMS layer norm, the gate, forward and
 * backward. Every output element has one owning thread and a fixed summation order, so results
 * do not depend on scheduling. Vectors may live in shared or global memory.
 */
#pragma once

#include "runtime/common.cuh"
#include "nequip/model_dev.cuh"

namespace fnqcu {

__device__ __forceinline__ int block_of(const Irreps &ir, int o)
{
    int b = 0;
    while (b + 1 < ir.n && o >= ir.off[b + 1])
        b++;
    return b;
}

/* linear_apply (below) by quads: one quad is four consecutive output channels (col..col+3) of
 * one component m for all NB atoms, its weights one vector load per input channel, so NB + 1
 * loads feed 4 NB FMAs. The input channels of a quad are split in g slices over g adjacent
 * lanes (more lanes for long sums: every lane gets a similar share of the work, also where a
 * block has few quads), summed by a butterfly in a fixed order; the first lane writes.
 * SHARED: one weight set for all atoms (weights already offset to it); otherwise atom a's set
 * is t[a]. The plan (Linear::quads) guarantees aligned weight quads: every weight offset is a
 * multiple of 4 (all destination multiplicities are) and cudaMalloc aligns the sets. */
template <typename REAL, int NB, bool TRANSPOSE, bool SHARED>
__device__ void linear_quads(const Linear<REAL> &lin, const Irreps &src, const Irreps &dst,
                             const REAL *weights, const int *t, int nb, const REAL *x,
                             int64_t sx, REAL *y, int64_t sy, bool accumulate, bool tiled_y)
{
    const QuadBlock *plan = TRANSPOSE ? lin.quads_t : lin.quads;
    const int n_units = TRANSPOSE ? lin.quad_units_t : lin.quad_units;
    const int lane = threadIdx.x & 31;
    /* x rows as aligned quads (per block of x also its offset and length, below) */
    const bool x_quads = (sx & 3) == 0 && (reinterpret_cast<uintptr_t>(x) & 15) == 0;
    int b = 0;
    QuadBlock q = plan[0];
    /* whole warps step through the units together (the butterfly needs every lane) */
    for (int base = threadIdx.x - lane; base < n_units; base += blockDim.x) {
        const int unit = base + lane;
        while (b + 1 < dst.n && unit >= q.first + q.units)
            q = plan[++b];
        const bool live = unit >= q.first && unit < q.first + q.units;
        const int rel = unit - q.first, quad = rel / q.g, slice = rel % q.g;
        const int md = live ? dst.mul[b] : 4;
        const int m = 4 * quad / md, col = 4 * quad % md;
        REAL s[NB][4];
#pragma unroll
        for (int a = 0; a < NB; a++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                s[a][j] = 0;
        REAL alpha = 0;
        if (live && q.k >= 0) {
            const LinInstr ins = lin.instr[q.k];
            alpha = REAL(ins.alpha);
            const int sb = TRANSPOSE ? ins.out_block : ins.in_block;
            /* atoms past nb compute on atom 0's row and are not written */
            const REAL *xr = x + src.off[sb] + m * q.K;
            const REAL *wr = weights + ins.w_off + col;
            const int u0 = slice * q.K / q.g, u1 = (slice + 1) * q.K / q.g;
            const REAL *xa[NB];
#pragma unroll
            for (int a = 0; a < NB; a++)
                xa[a] = xr + (a < nb ? a : 0) * sx;
            int u = u0;
            /* four input channels at a time where their x are aligned quads: one vector load
             * per atom, two steps in flight (the same sums in the same order) */
            if (SHARED && x_quads && ((src.off[sb] | q.K | u0 | u1) & 3) == 0) {
#pragma unroll 2
                for (; u < u1; u += 4) {
                    REAL w[4][4], xv[NB][4];
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        load_quad(wr + (int64_t)(u + i) * md, w[i]);
#pragma unroll
                    for (int a = 0; a < NB; a++)
                        load_quad_coherent(xa[a] + u, xv[a]);
#pragma unroll
                    for (int i = 0; i < 4; i++)
#pragma unroll
                        for (int a = 0; a < NB; a++)
#pragma unroll
                            for (int j = 0; j < 4; j++)
                                s[a][j] += w[i][j] * xv[a][i];
                }
            }
#pragma unroll 4
            for (; u < u1; u++) {
                REAL w[4];
#pragma unroll
                for (int a = 0; a < NB; a++) {
                    if (a == 0 || !SHARED)
                        load_quad(wr + (SHARED ? 0 : (int64_t)t[a] * lin.n_w) + (int64_t)u * md,
                                  w);
                    const REAL xv = xa[a][u];
#pragma unroll
                    for (int j = 0; j < 4; j++)
                        s[a][j] += w[j] * xv;
                }
            }
        }
        /* butterfly steps up to the warp's largest g (warps of g = 1 units skip it) */
        const int g = live ? q.g : 1, warp_g = __reduce_max_sync(0xffffffffu, g);
#pragma unroll
        for (int step = 1; step < kQuadMaxSlices; step *= 2) {
            if (step >= warp_g)
                break;
#pragma unroll
            for (int a = 0; a < NB; a++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const REAL v = __shfl_xor_sync(0xffffffffu, s[a][j], step);
                    if (step < g)
                        s[a][j] += v;
                }
        }
        if (!live || slice != 0 || (q.k < 0 && accumulate))
            continue;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int yo = tiled_y ? tiled_index(dst, b, m, col + j) : dst.off[b] + 4 * quad + j;
#pragma unroll
            for (int a = 0; a < NB; a++)
                if (a < nb)
                    y[a * sy + yo] = (accumulate ? y[a * sy + yo] : REAL(0)) + alpha * s[a][j];
        }
    }
}

/* linear_apply with one output element per thread: any multiplicities. */
template <typename REAL, int NB, bool TRANSPOSE>
__device__ void linear_elements(const Linear<REAL> &lin, const Irreps &src, const Irreps &dst,
                                const REAL *weights, bool shared, const int *t, int nb,
                                const REAL *x, int64_t sx, REAL *y, int64_t sy, bool accumulate,
                                bool tiled_y)
{
    for (int o = threadIdx.x; o < dst.dim; o += blockDim.x) {
        const int b = block_of(dst, o), md = dst.mul[b];
        const int rel = o - dst.off[b], m = rel / md, col = rel % md;
        REAL acc[NB];
#pragma unroll
        for (int a = 0; a < NB; a++)
            acc[a] = 0;
        for (int k = 0; k < lin.n_instr; k++) {
            const LinInstr ins = lin.instr[k];
            if ((TRANSPOSE ? ins.in_block : ins.out_block) != b)
                continue;
            const int sb = TRANSPOSE ? ins.out_block : ins.in_block;
            const int ms = src.mul[sb];
            const int xo = src.off[sb] + m * ms;
            REAL s[NB];
#pragma unroll
            for (int a = 0; a < NB; a++)
                s[a] = 0;
            if (shared) {
                /* per-atom row pointers: the unrolled loop's loads take constant offsets */
                const REAL *wc = weights + ins.w_off + col;
                const REAL *xa[NB];
#pragma unroll
                for (int a = 0; a < NB; a++)
                    xa[a] = x + (a < nb ? a : 0) * sx + xo;
                for (int u = 0; u < ms; u++, wc += md) {
                    const REAL wv = *wc;
#pragma unroll
                    for (int a = 0; a < NB; a++)
                        if (a < nb)
                            s[a] += wv * xa[a][u];
                }
            } else {
#pragma unroll
                for (int a = 0; a < NB; a++)
                    if (a < nb) {
                        const REAL *wc = weights + (int64_t)t[a] * lin.n_w + ins.w_off + col;
                        for (int u = 0; u < ms; u++)
                            s[a] += wc[(int64_t)u * md] * x[a * sx + xo + u];
                    }
            }
#pragma unroll
            for (int a = 0; a < NB; a++)
                acc[a] += REAL(ins.alpha) * s[a];
        }
        const int yo = tiled_y ? tiled_index(dst, b, m, col) : o;
#pragma unroll
        for (int a = 0; a < NB; a++)
            if (a < nb)
                y[a * sy + yo] = accumulate ? y[a * sy + yo] + acc[a] : acc[a];
    }
}

/* One e3nn linear on nb < NB atoms (t[a]: species of atom a), accumulate: +=.
 * TRANSPOSE false: y = linear(x), from `in` irreps to `out`, weights lin.w;
 * TRANSPOSE true:  y = linear^T(x), from `out` irreps to `in`, weights lin.wt (the transposed
 * copy, so both directions read weights with unit stride across threads).
 * tiled_y: y is written in the tiled layout of its irreps (model_dev.cuh).
 * By quads where the linear has a plan for this direction (Linear::quads, quads_t), else one
 * output element per thread; either way every sum runs in a fixed order. */
template <typename REAL, int NB, bool TRANSPOSE>
__device__ void linear_apply(const Linear<REAL> &lin, const Irreps &in, const Irreps &out,
                             const int *t, int nb, const REAL *x, int64_t sx, REAL *y,
                             int64_t sy, bool accumulate, bool tiled_y)
{
    const Irreps &src = TRANSPOSE ? out : in, &dst = TRANSPOSE ? in : out;
    const REAL *weights = TRANSPOSE ? lin.wt : lin.w;
    /* per-species weights of atoms that are all one species: each weight loaded once for all
     * of them, as for shared weights (same sums, in the same order) */
    bool shared = !lin.species_indexed;
    if (!shared) {
        shared = true;
        for (int a = 1; a < nb; a++)
            shared = shared && t[a] == t[0];
        if (shared)
            weights += (int64_t)t[0] * lin.n_w;
    }
    if (!(TRANSPOSE ? lin.quads_t : lin.quads))
        linear_elements<REAL, NB, TRANSPOSE>(lin, src, dst, weights, shared, t, nb, x, sx, y, sy,
                                             accumulate, tiled_y);
    else if (shared)
        linear_quads<REAL, NB, TRANSPOSE, true>(lin, src, dst, weights, t, nb, x, sx, y, sy,
                                                accumulate, tiled_y);
    else
        linear_quads<REAL, NB, TRANSPOSE, false>(lin, src, dst, weights, t, nb, x, sx, y, sy,
                                                 accumulate, tiled_y);
}

/* y[a] = linear(x[a]) (accumulate: +=), a < nb; t[a] = species of atom a */
template <typename REAL, int NB>
__device__ void linear_fwd(const Linear<REAL> &lin, const Irreps &in, const Irreps &out,
                           const int *t, int nb, const REAL *x, int64_t sx, REAL *y, int64_t sy,
                           bool accumulate)
{
    linear_apply<REAL, NB, false>(lin, in, out, t, nb, x, sx, y, sy, accumulate, false);
}

/* dx[a] = linear^T(dy[a]) (accumulate: +=); tiled_dx: dx in the tiled layout of `in` */
template <typename REAL, int NB>
__device__ void linear_bwd(const Linear<REAL> &lin, const Irreps &in, const Irreps &out,
                           const int *t, int nb, const REAL *dy, int64_t sy, REAL *dx, int64_t sx,
                           bool accumulate, bool tiled_dx = false)
{
    linear_apply<REAL, NB, true>(lin, in, out, t, nb, dy, sy, dx, sx, accumulate, tiled_dx);
}

/* Deterministic block sums of NB values per thread; red has NB * blockDim.x doubles. */
template <int NB> __device__ __forceinline__ void block_sums(double *v, double *red)
{
#pragma unroll
    for (int a = 0; a < NB; a++)
        red[a * blockDim.x + threadIdx.x] = v[a];
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
#pragma unroll
            for (int a = 0; a < NB; a++)
                red[a * blockDim.x + threadIdx.x] += red[a * blockDim.x + threadIdx.x + s];
        __syncthreads();
    }
#pragma unroll
    for (int a = 0; a < NB; a++)
        v[a] = red[a * blockDim.x];
    __syncthreads();
}

/* RMS layer norm factors rho[a] = (sum_b 1/(d_b^2 B) sum y_b^2 + eps)^-1/2 */
template <typename REAL, int NB>
__device__ void norm_rho(const Layer<REAL> &L, int nb, const REAL *y, int sy, REAL *rho,
                         double *red)
{
    double part[NB];
#pragma unroll
    for (int a = 0; a < NB; a++)
        part[a] = 0.0;
    for (int o = threadIdx.x; o < L.conv.dim; o += blockDim.x) {
        const int b = block_of(L.conv, o);
        const double d = 2 * L.conv.l[b] + 1, w = 1.0 / (d * d * L.conv.n);
#pragma unroll
        for (int a = 0; a < NB; a++)
            if (a < nb)
                part[a] += (double)y[a * sy + o] * (double)y[a * sy + o] * w;
    }
    block_sums<NB>(part, red);
    /* every thread has the sums; one writes rho, and the barrier orders that write before the
     * block's reads (norm_apply) */
    if (threadIdx.x == 0)
#pragma unroll
        for (int a = 0; a < NB; a++)
            rho[a] = REAL(1.0 / sqrt(part[a] + L.norm_eps));
    __syncthreads();
}

template <typename REAL, int NB>
__device__ void norm_apply(const Layer<REAL> &L, int nb, const REAL *y, int sy, const REAL *rho,
                           REAL *yn, int sn)
{
    for (int o = threadIdx.x; o < L.conv.dim; o += blockDim.x) {
        const int b = block_of(L.conv, o);
        const REAL g = L.norm_w[L.norm_off[b] + (o - L.conv.off[b]) % L.conv.mul[b]];
#pragma unroll
        for (int a = 0; a < NB; a++)
            if (a < nb)
                yn[a * sn + o] = y[a * sy + o] * g * rho[a];
    }
}

/* gy = gamma rho gyn - rho^3 S w_b y, S = sum gyn gamma y */
template <typename REAL, int NB>
__device__ void norm_bwd(const Layer<REAL> &L, int nb, const REAL *y, int sy, const REAL *rho,
                         const REAL *gyn, int sg, REAL *gy, int sgy, double *red)
{
    double S[NB];
#pragma unroll
    for (int a = 0; a < NB; a++)
        S[a] = 0.0;
    for (int o = threadIdx.x; o < L.conv.dim; o += blockDim.x) {
        const int b = block_of(L.conv, o);
        const double g = L.norm_w[L.norm_off[b] + (o - L.conv.off[b]) % L.conv.mul[b]];
#pragma unroll
        for (int a = 0; a < NB; a++)
            if (a < nb)
                S[a] += (double)gyn[a * sg + o] * g * (double)y[a * sy + o];
    }
    block_sums<NB>(S, red);
    for (int o = threadIdx.x; o < L.conv.dim; o += blockDim.x) {
        const int b = block_of(L.conv, o);
        const REAL g = L.norm_w[L.norm_off[b] + (o - L.conv.off[b]) % L.conv.mul[b]];
        const double d = 2 * L.conv.l[b] + 1;
#pragma unroll
        for (int a = 0; a < NB; a++)
            if (a < nb) {
                const double r3 = (double)rho[a] * rho[a] * rho[a];
                const REAL c = REAL(r3 * S[a] / (d * d * L.conv.n));
                gy[a * sgy + o] = g * rho[a] * gyn[a * sg + o] - c * y[a * sy + o];
            }
    }
}

/* yn = norm(y) with its factors rho (the layer's RMS norm; without one rho = 1, yn = y) */
template <typename REAL, int NB>
__device__ void norm_fwd(const Layer<REAL> &L, int nb, const REAL *y, int sy, REAL *rho, REAL *yn,
                         int sn, double *red)
{
    if (L.norm == 1) {
        norm_rho<REAL, NB>(L, nb, y, sy, rho, red);
        norm_apply<REAL, NB>(L, nb, y, sy, rho, yn, sn);
        return;
    }
    if (threadIdx.x < NB)
        rho[threadIdx.x] = 1;
    for (int a = 0; a < nb; a++)
        for (int o = threadIdx.x; o < L.conv.dim; o += blockDim.x)
            yn[a * sn + o] = y[a * sy + o];
}

template <typename REAL, int NB>
__device__ void gate_fwd(const Layer<REAL> &L, int nb, const REAL *yn, int sn, REAL *h, int sh)
{
    for (int o = threadIdx.x; o < L.out.dim; o += blockDim.x) {
        const int k = block_of(L.out, o), mo = L.out.mul[k];
        const int rel = o - L.out.off[k], m = rel / mo, u = rel % mo;
        const GateOut g = L.gate[k];
        const int si = g.src_off + m * g.src_mul + g.src_chan + u;
#pragma unroll
        for (int a = 0; a < NB; a++)
            if (a < nb) {
                REAL v = act_apply<REAL>(g.act.kind, REAL(g.act.scale), yn[a * sn + si]);
                if (g.gate_off >= 0)
                    v *= act_apply<REAL>(g.gate_act.kind, REAL(g.gate_act.scale),
                                         yn[a * sn + g.gate_off + u]);
                h[a * sh + o] = v;
            }
    }
}

/* gyn = gate^T(gh): sources and gate scalars are disjoint elements, each with one owner */
template <typename REAL, int NB>
__device__ void gate_bwd(const Layer<REAL> &L, int nb, const REAL *yn, int sn, const REAL *gh,
                         int sh, REAL *gyn, int sg)
{
    for (int o = threadIdx.x; o < L.conv.dim; o += blockDim.x)
#pragma unroll
        for (int a = 0; a < NB; a++)
            if (a < nb)
                gyn[a * sg + o] = 0;
    __syncthreads();
    for (int o = threadIdx.x; o < L.out.dim; o += blockDim.x) {
        const int k = block_of(L.out, o), mo = L.out.mul[k];
        const int rel = o - L.out.off[k], m = rel / mo, u = rel % mo;
        const GateOut g = L.gate[k];
        const int si = g.src_off + m * g.src_mul + g.src_chan + u;
#pragma unroll
        for (int a = 0; a < NB; a++)
            if (a < nb) {
                REAL gv = 1;
                if (g.gate_off >= 0)
                    gv = act_apply<REAL>(g.gate_act.kind, REAL(g.gate_act.scale),
                                         yn[a * sn + g.gate_off + u]);
                gyn[a * sg + si] = gh[a * sh + o] * gv *
                                   act_deriv<REAL>(g.act.kind, REAL(g.act.scale), yn[a * sn + si]);
            }
    }
    for (int k = 0; k < L.out.n; k++) {
        const GateOut g = L.gate[k];
        if (g.gate_off < 0)
            continue;
        const int mo = L.out.mul[k], d = 2 * L.out.l[k] + 1;
        for (int u = threadIdx.x; u < mo; u += blockDim.x)
#pragma unroll
            for (int a = 0; a < NB; a++)
                if (a < nb) {
                    REAL s = 0;
                    for (int m = 0; m < d; m++) {
                        const int si = g.src_off + m * g.src_mul + g.src_chan + u;
                        s += gh[a * sh + L.out.off[k] + m * mo + u] *
                             act_apply<REAL>(g.act.kind, REAL(g.act.scale), yn[a * sn + si]);
                    }
                    const int gi = g.gate_off + u;
                    gyn[a * sg + gi] = s * act_deriv<REAL>(g.gate_act.kind,
                                                           REAL(g.gate_act.scale), yn[a * sn + gi]);
                }
    }
    __syncthreads();
}

/* gy = norm^T(gate^T(gh)) for gate inputs y (factors rho): yn and gyn are scratch (the normed
 * y, the gate's transpose); gy may be yn. Rows of the three scratch vectors sv apart. */
template <typename REAL, int NB>
__device__ void norm_gate_bwd(const Layer<REAL> &L, int nb, const REAL *y, int sy, const REAL *rho,
                              const REAL *gh, int sh, REAL *yn, REAL *gyn, REAL *gy, int sv,
                              double *red)
{
    if (L.norm == 1)
        norm_apply<REAL, NB>(L, nb, y, sy, rho, yn, sv);
    else
        for (int a = 0; a < nb; a++)
            for (int o = threadIdx.x; o < L.conv.dim; o += blockDim.x)
                yn[a * sv + o] = y[a * sy + o];
    __syncthreads();
    gate_bwd<REAL, NB>(L, nb, yn, sv, gh, sh, gyn, sv);
    if (L.norm == 1)
        norm_bwd<REAL, NB>(L, nb, y, sy, rho, gyn, sv, gy, sv, red);
    else
        for (int a = 0; a < nb; a++)
            for (int o = threadIdx.x; o < L.conv.dim; o += blockDim.x)
                gy[a * sv + o] = gyn[a * sv + o];
}

} // namespace fnqcu
