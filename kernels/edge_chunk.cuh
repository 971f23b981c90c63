/*
 * edge_chunk.cuh: what the fused forward and backward layer kernels share. One thread block owns
 * one receiving atom and walks its edges in chunks of EC. Per chunk it computes, in shared
 * memory only: each edge's geometry (double), spherical harmonics and radial basis, and the
 * hidden layers of the radial MLP. The MLP's last layer (the large one: hidden -> one weight per
 * path channel) is never materialised for all paths: each kernel streams it tile by tile, one
 * tile per tensor-product path (at most TC channels), and consumes each tile at once.
 */
#pragma once

#include "edge_ops.cuh"
#include "model_dev.cuh"

namespace fnqcu {

/* Shared-memory layout for one layer; sizes in elements. Host and device compute the same. */
template <typename REAL> struct ChunkLayout {
    int EC, TC, nsh, act_total, pre_total, a_last, max_hidden;

    __host__ __device__ void init(const Layer<REAL> &L, int lmax, int ec, int tc)
    {
        EC = ec;
        TC = tc;
        nsh = (lmax + 1) * (lmax + 1);
        act_total = 0;
        pre_total = 0;
        max_hidden = 1;
        for (int k = 0; k < L.n_mlp; k++)
            act_total += L.size[k];
        for (int k = 1; k < L.n_mlp; k++) {
            pre_total += L.size[k];
            if (L.size[k] > max_hidden)
                max_hidden = L.size[k];
        }
        if (L.size[0] > max_hidden)
            max_hidden = L.size[0];
        a_last = L.size[L.n_mlp - 1];
    }
    /* offsets of act[k] inside the act block (per edge row stride = size[k]) */
    __host__ __device__ int act_off(const Layer<REAL> &L, int k) const
    {
        int o = 0;
        for (int q = 0; q < k; q++)
            o += EC * L.size[q];
        return o;
    }
    __host__ __device__ int pre_off(const Layer<REAL> &L, int k) const /* pre of layer k >= 0 */
    {
        int o = 0;
        for (int q = 1; q <= k; q++)
            o += EC * L.size[q];
        return o;
    }
};

/* Bump allocator over the dynamic shared memory (16-byte aligned pieces). */
struct SmemCarver {
    unsigned char *p;
    size_t used;
    template <typename T> __host__ __device__ T *take(size_t count)
    {
        size_t off = (used + 15) & ~size_t(15);
        used = off + count * sizeof(T);
        return reinterpret_cast<T *>(p + off);
    }
};

/* Geometry of n edges (edge_ids[k], or e0 + k when edge_ids is null): Y and basis as REAL, the
 * partner atom of each edge (partner[e]: its sender, or receiver for ghost senders), direction
 * and distance (sGeo, if given). */
template <typename REAL>
__device__ void chunk_geometry(const Geometry &geo, const double *edge_vec, const int64_t *partner,
                               const int64_t *edge_ids, int64_t e0, int n, int nsh, int nb, REAL *sY,
                               REAL *sBasis, int *sSrc, double *sGeo)
{
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
        const int64_t e = edge_ids ? edge_ids[k] : e0 + k;
        const double r0 = edge_vec[3 * e], r1 = edge_vec[3 * e + 1], r2 = edge_vec[3 * e + 2];
        const double d = sqrt(r0 * r0 + r1 * r1 + r2 * r2);
        const double nv[3] = {r0 / d, r1 / d, r2 / d};
        double y[kMaxSh], basis[128];
        sh_eval(geo, nv, y, nullptr);
        radial_basis(geo, d, basis, nullptr);
        for (int q = 0; q < nsh; q++)
            sY[k * nsh + q] = REAL(y[q]);
        for (int q = 0; q < nb; q++)
            sBasis[k * nb + q] = REAL(basis[q]);
        sSrc[k] = (int)partner[e];
        if (sGeo) {
            sGeo[4 * k + 0] = nv[0];
            sGeo[4 * k + 1] = nv[1];
            sGeo[4 * k + 2] = nv[2];
            sGeo[4 * k + 3] = d;
        }
    }
}

/* Hidden layers of the radial MLP for n edges: act[k+1] = act(act[k] W_k), k < n_mlp - 1.
 * If sPre, the pre-activations are kept (for the backward pass). */
template <typename REAL>
__device__ void chunk_mlp_hidden(const Layer<REAL> &L, const ChunkLayout<REAL> &cl, int n,
                                 REAL *sAct, REAL *sPre)
{
    for (int k = 0; k + 1 < L.n_mlp; k++) {
        const int a = L.size[k], b = L.size[k + 1];
        const REAL *in = sAct + cl.act_off(L, k);
        REAL *out = sAct + cl.act_off(L, k + 1);
        REAL *pre = sPre ? sPre + cl.pre_off(L, k) : nullptr;
        const REAL *W = L.mlp_w[k];
        for (int idx = threadIdx.x; idx < n * b; idx += blockDim.x) {
            const int e = idx / b, j = idx % b;
            REAL z = 0;
            for (int q = 0; q < a; q++)
                z += in[e * a + q] * W[q * b + j];
            if (pre)
                pre[e * b + j] = z;
            out[e * b + j] = act_apply<REAL>(L.mlp_act.kind, REAL(L.mlp_act.scale), z);
        }
        __syncthreads();
    }
}

/* Load one tile (channels [c0, c0+tc) of path p) of the MLP's last weight matrix into sW
 * (row stride TC+1 against bank conflicts), and the path's Clebsch-Gordan contractions with
 * each edge's Y into sK[e][pair]. */
template <typename REAL>
__device__ void load_path_tile(const Layer<REAL> &L, const ChunkLayout<REAL> &cl, const Path &P,
                               int c0, int tc, int n, const REAL *sY, REAL *sW, REAL *sK,
                               bool with_k)
{
    const int a = cl.a_last, ncol = L.size[L.n_mlp];
    const REAL *Wl = L.mlp_w[L.n_mlp - 1];
    for (int idx = threadIdx.x; idx < a * tc; idx += blockDim.x) {
        const int q = idx / tc, c = idx % tc;
        sW[q * (cl.TC + 1) + c] = Wl[(int64_t)q * ncol + P.w_off + c0 + c];
    }
    if (with_k) {
        const int y0 = P.l2 * P.l2;
        for (int idx = threadIdx.x; idx < n * P.npair; idx += blockDim.x) {
            const int e = idx / P.npair, pp = idx % P.npair;
            const Pair<REAL> pr = L.pairs[P.pair0 + pp];
            REAL K = 0;
            for (int t = pr.t0; t < pr.t0 + pr.nt; t++)
                K += L.terms[t].c * sY[e * cl.nsh + y0 + L.terms[t].m2];
            sK[e * L.max_pairs + pp] = K;
        }
    }
}

/* sR[e][c] = sum_q act_last[e][q] sW[q][c]: the tile of radial weights */
template <typename REAL>
__device__ void tile_radial_weights(const ChunkLayout<REAL> &cl, const REAL *actLast, int n,
                                    int tc, const REAL *sW, REAL *sR)
{
    const int a = cl.a_last;
    for (int idx = threadIdx.x; idx < n * tc; idx += blockDim.x) {
        const int e = idx / tc, c = idx % tc;
        REAL r = 0;
        for (int q = 0; q < a; q++)
            r += actLast[e * a + q] * sW[q * (cl.TC + 1) + c];
        sR[e * (cl.TC + 1) + c] = r;
    }
}

} // namespace fnqcu
