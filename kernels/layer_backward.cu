/*
 * layer_backward.cu: one fused kernel per interaction layer, backward. One block per receiving
 * atom i, given dE/dA of every owned atom (from the forward epilogue or the layer above):
 *   per edge chunk: geometry with its gradient, the MLP hidden layers (pre-activations kept);
 *   per TP path and tile of radial weights:
 *     dR[e][c]    = dE/d(radial weight)          (one thread per edge and channel)
 *     dK[e][pair] = dE/d(CG contraction of Y)    (one thread per edge and pair)
 *     dh1_i      += reverse-edge gradient: the edge (j <- i) has the same radial weights and
 *                   Y_l(-r) = (-1)^l Y_l(r), so atom i gathers its own sender gradient from its
 *                   own edges, no scatter (one thread per channel and m1)
 *     dH         += dR . W_tile^T (the MLP's last layer, backward)
 *   then the MLP hidden layers backward, and dE/dr_e = chain rule through Y and the basis,
 *   added to the edge's gradient (owned by this block);
 *   epilogue: dE/d(layer input) = linear_1^T(dh1 s) + self-connection part, then the node
 *   backward of the layer below (gate, norm, linear_2^T) gives that layer's dE/dA.
 * With ghost atoms the epilogue waits for the ghosts' sender gradients (ghost_sender_kernel)
 * and the reverse exchange, and runs as backward_epilogue_kernel.
 */
#include "edge_chunk.cuh"
#include "layer_backward.cuh"
#include "node_ops.cuh"

namespace fnqcu {

template <typename REAL> struct BwdSmem {
    REAL *sG, *sDx, *sY, *sAct, *sPre, *sW, *sK, *sR, *sDR, *sDK, *sDH, *sDY, *sM0, *sM1;
    int *sSrc;
    double *sGeo, *red;
    REAL *sTmp, *sGin, *sYv, *sYn, *sGyn;

    __host__ __device__ void carve(SmemCarver &sc, const Layer<REAL> &L, const ChunkLayout<REAL> &cl,
                                   int epi_len)
    {
        const int EC = cl.EC, TC = cl.TC;
        sG = sc.take<REAL>(L.mid.dim);
        sDx = sc.take<REAL>(L.in.dim);
        sY = sc.take<REAL>((size_t)EC * cl.nsh);
        sAct = sc.take<REAL>((size_t)EC * cl.act_total);
        sPre = sc.take<REAL>((size_t)EC * (cl.pre_total > 0 ? cl.pre_total : 1));
        sW = sc.take<REAL>((size_t)cl.a_last * (TC + 1));
        sK = sc.take<REAL>((size_t)EC * L.max_pairs);
        sR = sc.take<REAL>((size_t)EC * (TC + 1));
        sDR = sc.take<REAL>((size_t)EC * (TC + 1));
        sDK = sc.take<REAL>((size_t)EC * L.max_pairs);
        sDH = sc.take<REAL>((size_t)EC * cl.a_last);
        sDY = sc.take<REAL>((size_t)EC * cl.nsh);
        sM0 = sc.take<REAL>((size_t)EC * cl.max_hidden);
        sM1 = sc.take<REAL>((size_t)EC * cl.max_hidden);
        sSrc = sc.take<int>(EC);
        sGeo = sc.take<double>((size_t)EC * 4);
        red = sc.take<double>(kThreads);
        sTmp = sc.take<REAL>(epi_len);
        sGin = sc.take<REAL>(epi_len);
        sYv = sc.take<REAL>(epi_len);
        sYn = sc.take<REAL>(epi_len);
        sGyn = sc.take<REAL>(epi_len);
    }
};

template <typename REAL>
__device__ __forceinline__ const REAL *sender_row(const BackwardArgs<REAL> &a, int j)
{
    const int din = a.L.in.dim;
    return a.layer == 0 ? a.h1_table + (int64_t)a.species[j] * din : a.h1 + (int64_t)j * din;
}

/* dx[in_off + m1*in_mul + c0 + c] += flip * sum_e R[e][c] sum_{pairs of m1} K[e][pair]
 * G_partner[m3][c0 + c], over edges whose partner is an owned atom */
template <typename REAL>
__device__ void tile_sender_grad(const BackwardArgs<REAL> &a, const Path &P, int c0, int tc, int n,
                                 const int *sSrc, const REAL *sK, const REAL *sR, int TC, REAL flip,
                                 REAL *dx)
{
    const Layer<REAL> &L = a.L;
    const int d1 = 2 * P.l1 + 1;
    for (int idx = threadIdx.x; idx < tc * d1; idx += blockDim.x) {
        const int c = idx % tc, m1 = idx / tc;
        const int qa = P.m1_start[m1], qb = P.m1_start[m1 + 1];
        REAL acc = 0;
        for (int e = 0; e < n; e++) {
            const int j = sSrc[e];
            if (j >= a.n_local)
                continue;
            const REAL *gj = a.ga + (int64_t)j * a.ga_stride + P.mid_off + P.out_chan + c0 + c;
            REAL s = 0;
            for (int q = qa; q < qb; q++) {
                const int pabs = L.by_m1[P.pair0 + q];
                s += sK[e * L.max_pairs + (pabs - P.pair0)] * gj[L.pairs[pabs].m3 * P.mid_mul];
            }
            acc += sR[e * (TC + 1) + c] * s;
        }
        dx[P.in_off + m1 * P.in_mul + c0 + c] += flip * acc;
    }
}

/* Node backward ending the atom: see the file comment. dh1 may be shared or global memory. */
template <typename REAL>
__device__ void backward_epilogue(const BackwardArgs<REAL> &a, const BwdSmem<REAL> &s, int i,
                                  int t, const REAL *dh1)
{
    const Layer<REAL> &L = a.L;
    const Layer<REAL> &P = a.prev;
    const REAL sc = L.sender_scale[t];
    for (int k = threadIdx.x; k < L.in.dim; k += blockDim.x) {
        s.sTmp[k] = dh1[k] * sc;
        s.sGin[k] = a.gpart_in[(int64_t)i * a.W + k];
    }
    for (int k = threadIdx.x; k < P.conv.dim; k += blockDim.x)
        s.sYv[k] = a.y_prev[(int64_t)i * P.conv.dim + k];
    __syncthreads();
    linear_bwd<REAL>(L.linear_1, L.in, L.in, t, s.sTmp, s.sGin, true);
    const REAL rho = a.rho_prev[i];
    if (P.norm == 1)
        norm_apply<REAL>(P, s.sYv, rho, s.sYn);
    else
        for (int k = threadIdx.x; k < P.conv.dim; k += blockDim.x)
            s.sYn[k] = s.sYv[k];
    __syncthreads();
    gate_bwd<REAL>(P, s.sYn, s.sGin, s.sGyn);
    REAL *gy = s.sYn;
    if (P.norm == 1)
        norm_bwd<REAL>(P, s.sYv, rho, s.sGyn, gy, s.red);
    else
        for (int k = threadIdx.x; k < P.conv.dim; k += blockDim.x)
            gy[k] = s.sGyn[k];
    __syncthreads();
    linear_bwd<REAL>(P.linear_2, P.mid, P.conv, t, gy, a.ga_out + (int64_t)i * a.ga_stride, false);
    if (a.layer - 1 > 0) {
        REAL *gp = a.gpart_out + (int64_t)i * a.W;
        if (P.self_conn.n_instr > 0)
            linear_bwd<REAL>(P.self_conn, P.in, P.conv, t, gy, gp, false);
        else
            for (int k = threadIdx.x; k < P.in.dim; k += blockDim.x)
                gp[k] = 0;
        if (P.resnet) {
            __syncthreads();
            for (int k = threadIdx.x; k < P.in.dim; k += blockDim.x)
                gp[k] += s.sGin[k];
        }
    }
}

template <typename REAL>
__global__ void __launch_bounds__(kThreads) layer_backward_kernel(BackwardArgs<REAL> a)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const Layer<REAL> &L = a.L;
    const int i = blockIdx.x;
    const int t = a.species[i];
    ChunkLayout<REAL> cl;
    cl.init(L, a.geo.lmax, a.EC, a.TC);
    SmemCarver carver{smem_raw, 0};
    BwdSmem<REAL> s;
    s.carve(carver, L, cl, a.epi_len);
    const int TC = cl.TC, nb = L.size[0], K = L.n_mlp;
    const bool need_dx = a.layer > 0;

    for (int k = threadIdx.x; k < L.mid.dim; k += blockDim.x)
        s.sG[k] = a.ga[(int64_t)i * a.ga_stride + k];
    for (int k = threadIdx.x; k < L.in.dim; k += blockDim.x)
        s.sDx[k] = 0;

    const int64_t eb = a.recv_start[i], ee = a.recv_start[i + 1];
    const REAL *actLast = s.sAct + cl.act_off(L, K - 1);
    for (int64_t e0 = eb; e0 < ee; e0 += cl.EC) {
        const int n = (int)min((int64_t)cl.EC, ee - e0);
        __syncthreads();
        chunk_geometry<REAL>(a.geo, a.edge_vec, a.edge_send, nullptr, e0, n, cl.nsh, nb, s.sY,
                             s.sAct, s.sSrc, s.sGeo);
        __syncthreads();
        chunk_mlp_hidden<REAL>(L, cl, n, s.sAct, s.sPre);
        for (int k = threadIdx.x; k < n * cl.a_last; k += blockDim.x)
            s.sDH[k] = 0;
        for (int k = threadIdx.x; k < n * cl.nsh; k += blockDim.x)
            s.sDY[k] = 0;

        for (int p = 0; p < L.n_paths; p++) {
            const Path P = L.paths[p];
            const REAL flip = (P.l2 & 1) ? REAL(-1) : REAL(1);
            __syncthreads();
            for (int k = threadIdx.x; k < n * P.npair; k += blockDim.x)
                s.sDK[(k / P.npair) * L.max_pairs + k % P.npair] = 0;
            for (int c0 = 0; c0 < P.mul; c0 += TC) {
                const int tc = min(TC, P.mul - c0);
                load_path_tile<REAL>(L, cl, P, c0, tc, n, s.sY, s.sW, s.sK, true);
                __syncthreads();
                tile_radial_weights<REAL>(cl, actLast, n, tc, s.sW, s.sR);
                __syncthreads();
                const REAL *gb = s.sG + P.mid_off + P.out_chan + c0;
                /* dR[e][c] */
                for (int idx = threadIdx.x; idx < n * tc; idx += blockDim.x) {
                    const int e = idx / tc, c = idx % tc;
                    const REAL *x = sender_row(a, s.sSrc[e]) + P.in_off + c0 + c;
                    REAL v = 0;
                    for (int pp = 0; pp < P.npair; pp++) {
                        const Pair<REAL> pr = L.pairs[P.pair0 + pp];
                        v += s.sK[e * L.max_pairs + pp] * gb[pr.m3 * P.mid_mul + c] *
                             x[pr.m1 * P.in_mul];
                    }
                    s.sDR[e * (TC + 1) + c] = v;
                }
                /* dK[e][pair] (partial over this tile's channels) */
                for (int idx = threadIdx.x; idx < n * P.npair; idx += blockDim.x) {
                    const int e = idx / P.npair, pp = idx % P.npair;
                    const Pair<REAL> pr = L.pairs[P.pair0 + pp];
                    const REAL *x = sender_row(a, s.sSrc[e]) + P.in_off + pr.m1 * P.in_mul + c0;
                    const REAL *g = gb + pr.m3 * P.mid_mul;
                    const REAL *r = s.sR + e * (TC + 1);
                    REAL v = 0;
                    for (int c = 0; c < tc; c++)
                        v += r[c] * g[c] * x[c];
                    s.sDK[e * L.max_pairs + pp] += v;
                }
                if (need_dx)
                    tile_sender_grad<REAL>(a, P, c0, tc, n, s.sSrc, s.sK, s.sR, TC, flip, s.sDx);
                __syncthreads();
                /* dH[e][q] += sum_c dR[e][c] W[q][c] */
                for (int idx = threadIdx.x; idx < n * cl.a_last; idx += blockDim.x) {
                    const int e = idx / cl.a_last, q = idx % cl.a_last;
                    const REAL *dr = s.sDR + e * (TC + 1);
                    const REAL *w = s.sW + q * (TC + 1);
                    REAL v = 0;
                    for (int c = 0; c < tc; c++)
                        v += dr[c] * w[c];
                    s.sDH[idx] += v;
                }
                __syncthreads();
            }
            /* dY[e] from dK through the Clebsch-Gordan terms of this path */
            for (int e = threadIdx.x; e < n; e += blockDim.x) {
                REAL *dy = s.sDY + e * cl.nsh + P.l2 * P.l2;
                for (int pp = 0; pp < P.npair; pp++) {
                    const Pair<REAL> pr = L.pairs[P.pair0 + pp];
                    const REAL dk = s.sDK[e * L.max_pairs + pp];
                    for (int q = pr.t0; q < pr.t0 + pr.nt; q++)
                        dy[L.terms[q].m2] += L.terms[q].c * dk;
                }
            }
        }
        __syncthreads();

        /* MLP hidden layers backward: d act[K-1] (sDH) -> d basis */
        const REAL *cur = s.sDH;
        REAL *bufs[2] = {s.sM0, s.sM1};
        int which = 0;
        for (int k = K - 2; k >= 0; k--) {
            const int a0 = L.size[k], b = L.size[k + 1];
            const REAL *pre = s.sPre + cl.pre_off(L, k);
            REAL *dz = bufs[which];
            for (int idx = threadIdx.x; idx < n * b; idx += blockDim.x)
                dz[idx] = cur[idx] * act_deriv<REAL>(L.mlp_act.kind, REAL(L.mlp_act.scale), pre[idx]);
            __syncthreads();
            REAL *nx = bufs[which ^ 1];
            const REAL *Wt = L.mlp_wt[k];
            for (int idx = threadIdx.x; idx < n * a0; idx += blockDim.x) {
                const int e = idx / a0, q = idx % a0;
                REAL v = 0;
                for (int j = 0; j < b; j++)
                    v += dz[e * b + j] * Wt[j * a0 + q];
                nx[idx] = v;
            }
            __syncthreads();
            cur = nx;
            which ^= 1;
        }

        /* dE/dr_e through Y(r/|r|) and the basis(|r|) */
        for (int k = threadIdx.x; k < n; k += blockDim.x) {
            const double nv[3] = {s.sGeo[4 * k], s.sGeo[4 * k + 1], s.sGeo[4 * k + 2]};
            const double d = s.sGeo[4 * k + 3];
            double y[kMaxSh], dyn[kMaxSh * 3], basis[128], dbasis[128];
            sh_eval(a.geo, nv, y, dyn);
            radial_basis(a.geo, d, basis, dbasis);
            double dd = 0.0, dn[3] = {0.0, 0.0, 0.0};
            for (int q = 0; q < nb; q++)
                dd += (double)cur[k * nb + q] * dbasis[q];
            for (int q = 0; q < cl.nsh; q++) {
                const double gy = (double)s.sDY[k * cl.nsh + q];
                dn[0] += gy * dyn[3 * q];
                dn[1] += gy * dyn[3 * q + 1];
                dn[2] += gy * dyn[3 * q + 2];
            }
            const double proj = dn[0] * nv[0] + dn[1] * nv[1] + dn[2] * nv[2];
            double *ge = a.edge_grad + 3 * (int64_t)(e0 + k);
            for (int c = 0; c < 3; c++)
                ge[c] += (dn[c] - proj * nv[c]) / d + dd * nv[c];
        }
    }
    __syncthreads();
    if (!need_dx)
        return;
    if (!a.fused_epilogue) {
        for (int k = threadIdx.x; k < L.in.dim; k += blockDim.x)
            a.dh1[(int64_t)i * L.in.dim + k] = s.sDx[k];
        return;
    }
    backward_epilogue<REAL>(a, s, i, t, s.sDx);
}

/* dE/dh1 of one ghost atom, gathered over the edges it sends (receivers are owned). */
template <typename REAL>
__global__ void __launch_bounds__(kThreads) ghost_sender_kernel(BackwardArgs<REAL> a, int first)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const Layer<REAL> &L = a.L;
    const int j = first + blockIdx.x;
    ChunkLayout<REAL> cl;
    cl.init(L, a.geo.lmax, a.EC, a.TC);
    SmemCarver carver{smem_raw, 0};
    BwdSmem<REAL> s;
    s.carve(carver, L, cl, 1);
    const int TC = cl.TC;
    for (int k = threadIdx.x; k < L.in.dim; k += blockDim.x)
        s.sDx[k] = 0;
    const int64_t qb = a.send_start[j], qe = a.send_start[j + 1];
    const REAL *actLast = s.sAct + cl.act_off(L, L.n_mlp - 1);
    for (int64_t q0 = qb; q0 < qe; q0 += cl.EC) {
        const int n = (int)min((int64_t)cl.EC, qe - q0);
        __syncthreads();
        chunk_geometry<REAL>(a.geo, a.edge_vec, a.edge_recv, a.send_edges + q0, 0, n, cl.nsh,
                             L.size[0], s.sY, s.sAct, s.sSrc, nullptr);
        __syncthreads();
        chunk_mlp_hidden<REAL>(L, cl, n, s.sAct, nullptr);
        for (int p = 0; p < L.n_paths; p++) {
            const Path P = L.paths[p];
            for (int c0 = 0; c0 < P.mul; c0 += TC) {
                const int tc = min(TC, P.mul - c0);
                __syncthreads();
                load_path_tile<REAL>(L, cl, P, c0, tc, n, s.sY, s.sW, s.sK, true);
                __syncthreads();
                tile_radial_weights<REAL>(cl, actLast, n, tc, s.sW, s.sR);
                __syncthreads();
                tile_sender_grad<REAL>(a, P, c0, tc, n, s.sSrc, s.sK, s.sR, TC, REAL(1), s.sDx);
            }
        }
    }
    __syncthreads();
    for (int k = threadIdx.x; k < L.in.dim; k += blockDim.x)
        a.dh1[(int64_t)j * L.in.dim + k] = s.sDx[k];
}

template <typename REAL>
__global__ void __launch_bounds__(kThreads) backward_epilogue_kernel(BackwardArgs<REAL> a)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const int i = blockIdx.x;
    SmemCarver carver{smem_raw, 0};
    BwdSmem<REAL> s;
    s.red = carver.take<double>(kThreads);
    s.sTmp = carver.take<REAL>(a.epi_len);
    s.sGin = carver.take<REAL>(a.epi_len);
    s.sYv = carver.take<REAL>(a.epi_len);
    s.sYn = carver.take<REAL>(a.epi_len);
    s.sGyn = carver.take<REAL>(a.epi_len);
    backward_epilogue<REAL>(a, s, i, a.species[i], a.dh1 + (int64_t)i * a.L.in.dim);
}

template <typename REAL>
size_t backward_smem_bytes(const Layer<REAL> &L, int lmax, int EC, int TC, int epi_len)
{
    ChunkLayout<REAL> cl;
    cl.init(L, lmax, EC, TC);
    SmemCarver carver{nullptr, 0};
    BwdSmem<REAL> s;
    s.carve(carver, L, cl, epi_len);
    return carver.used + 16;
}

template <typename REAL> size_t ghost_smem_bytes(const Layer<REAL> &L, int lmax, int EC, int TC)
{
    return backward_smem_bytes<REAL>(L, lmax, EC, TC, 1);
}

template <typename REAL> size_t epilogue_smem_bytes(int epi_len)
{
    return kThreads * sizeof(double) + 5 * ((size_t)epi_len * sizeof(REAL) + 16) + 32;
}

template <typename REAL>
cudaError_t layer_backward_launch(const BackwardArgs<REAL> &a, int n_blocks, size_t smem,
                                  cudaStream_t stream)
{
    cudaError_t err = cudaFuncSetAttribute(layer_backward_kernel<REAL>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (err != cudaSuccess || n_blocks == 0)
        return err;
    layer_backward_kernel<REAL><<<n_blocks, kThreads, smem, stream>>>(a);
    return cudaGetLastError();
}

template <typename REAL>
cudaError_t ghost_sender_launch(const BackwardArgs<REAL> &a, int n_local, int n_all, size_t smem,
                                cudaStream_t stream)
{
    cudaError_t err = cudaFuncSetAttribute(ghost_sender_kernel<REAL>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (err != cudaSuccess || n_all <= n_local)
        return err;
    ghost_sender_kernel<REAL><<<n_all - n_local, kThreads, smem, stream>>>(a, n_local);
    return cudaGetLastError();
}

template <typename REAL>
cudaError_t backward_epilogue_launch(const BackwardArgs<REAL> &a, int n_blocks, size_t smem,
                                     cudaStream_t stream)
{
    cudaError_t err = cudaFuncSetAttribute(backward_epilogue_kernel<REAL>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (err != cudaSuccess || n_blocks == 0)
        return err;
    backward_epilogue_kernel<REAL><<<n_blocks, kThreads, smem, stream>>>(a);
    return cudaGetLastError();
}

#define FNQ_INSTANTIATE(REAL)                                                                   \
    template size_t backward_smem_bytes<REAL>(const Layer<REAL> &, int, int, int, int);         \
    template size_t ghost_smem_bytes<REAL>(const Layer<REAL> &, int, int, int);                 \
    template size_t epilogue_smem_bytes<REAL>(int);                                             \
    template cudaError_t layer_backward_launch<REAL>(const BackwardArgs<REAL> &, int, size_t,    \
                                                     cudaStream_t);                             \
    template cudaError_t ghost_sender_launch<REAL>(const BackwardArgs<REAL> &, int, int, size_t, \
                                                   cudaStream_t);                               \
    template cudaError_t backward_epilogue_launch<REAL>(const BackwardArgs<REAL> &, int, size_t, \
                                                        cudaStream_t);
FNQ_INSTANTIATE(float)
FNQ_INSTANTIATE(double)

} // namespace fnqcu
