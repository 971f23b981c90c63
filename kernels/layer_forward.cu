/*
 * layer_forward.cu: one fused kernel per interaction layer, forward. One block per receiving
 * atom i:
 *   edges (chunks of EC): geometry, Y, radial basis, MLP hidden layers (shared memory);
 *   per TP path, per tile of <= TC channels: the tile of radial weights, then the uvu tensor
 *   product with the senders' features, summed over the chunk into the message vector A_i
 *   (shared memory; each (channel, m3) element has one owning thread, edges summed in order);
 *   node epilogue: y = linear_2(A_i) + self_connection(h_i); RMS norm; gate; resnet; then either
 *   the next layer's sender features h1 = linear_1'(h') * s, or, after the last layer, the
 *   atomic energy and the top of the backward pass (dE/dA of this layer).
 * Nothing per edge leaves shared memory.
 */
#include "layer_forward.cuh"
#include "edge_chunk.cuh"
#include "node_ops.cuh"

namespace fnqcu {

template <typename REAL> __global__ void __launch_bounds__(kThreads) layer_forward_kernel(ForwardArgs<REAL> a)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const Layer<REAL> &L = a.L;
    const int i = blockIdx.x;
    const int t = a.species[i];
    ChunkLayout<REAL> cl;
    cl.init(L, a.geo.lmax, a.EC, a.TC);

    SmemCarver sc{smem_raw, 0};
    REAL *sA = sc.take<REAL>(L.mid.dim);
    REAL *sY = sc.take<REAL>((size_t)cl.EC * cl.nsh);
    REAL *sAct = sc.take<REAL>((size_t)cl.EC * cl.act_total);
    REAL *sW = sc.take<REAL>((size_t)cl.a_last * (cl.TC + 1));
    REAL *sK = sc.take<REAL>((size_t)cl.EC * L.max_pairs);
    REAL *sR = sc.take<REAL>((size_t)cl.EC * (cl.TC + 1));
    int *sSrc = sc.take<int>(cl.EC);
    double *red = sc.take<double>(kThreads);
    /* epilogue */
    REAL *sX = sc.take<REAL>(L.in.dim);
    REAL *sYv = sc.take<REAL>(L.conv.dim);
    REAL *sYn = sc.take<REAL>(L.conv.dim);
    REAL *sH = sc.take<REAL>(L.out.dim);
    REAL *sG1 = sc.take<REAL>(a.epi_len);
    REAL *sG2 = sc.take<REAL>(a.epi_len);

    for (int k = threadIdx.x; k < L.mid.dim; k += blockDim.x)
        sA[k] = 0;

    const int64_t eb = a.recv_start[i], ee = a.recv_start[i + 1];
    const REAL *actLast = sAct + cl.act_off(L, L.n_mlp - 1);
    const int din = L.in.dim;
    for (int64_t e0 = eb; e0 < ee; e0 += cl.EC) {
        const int n = (int)min((int64_t)cl.EC, ee - e0);
        __syncthreads();
        chunk_geometry<REAL>(a.geo, a.edge_vec, a.edge_send, nullptr, e0, n, cl.nsh, L.size[0], sY, sAct,
                             sSrc, nullptr);
        __syncthreads();
        chunk_mlp_hidden<REAL>(L, cl, n, sAct, nullptr);
        for (int p = 0; p < L.n_paths; p++) {
            const Path P = L.paths[p];
            const int d3 = 2 * P.l3 + 1;
            for (int c0 = 0; c0 < P.mul; c0 += cl.TC) {
                const int tc = min(cl.TC, P.mul - c0);
                load_path_tile<REAL>(L, cl, P, c0, tc, n, sY, sW, sK, true);
                __syncthreads();
                tile_radial_weights<REAL>(cl, actLast, n, tc, sW, sR);
                __syncthreads();
                /* items (channel c, m3): consecutive threads take consecutive channels */
                for (int idx = threadIdx.x; idx < tc * d3; idx += blockDim.x) {
                    const int c = idx % tc, m3 = idx / tc;
                    const int pa = P.m3_start[m3], pb = P.m3_start[m3 + 1];
                    REAL acc = 0;
                    for (int e = 0; e < n; e++) {
                        const int j = sSrc[e];
                        const REAL *x = (a.layer == 0 ? a.h1_table + (int64_t)a.species[j] * din
                                                      : a.h1 + (int64_t)j * din) +
                                        P.in_off + c0 + c;
                        REAL s = 0;
                        for (int pp = pa; pp < pb; pp++)
                            s += sK[e * L.max_pairs + pp] * x[L.pairs[P.pair0 + pp].m1 * P.in_mul];
                        acc += sR[e * (cl.TC + 1) + c] * s;
                    }
                    sA[P.mid_off + m3 * P.mid_mul + P.out_chan + c0 + c] += acc;
                }
                __syncthreads();
            }
        }
    }
    __syncthreads();

    /* ---- node epilogue ---- */
    const REAL *xin = a.layer == 0 ? a.embed + (int64_t)t * din : a.hin + (int64_t)i * a.W;
    for (int k = threadIdx.x; k < din; k += blockDim.x)
        sX[k] = xin[k];
    __syncthreads();
    linear_fwd<REAL>(L.linear_2, L.mid, L.conv, t, sA, sYv, false);
    __syncthreads();
    if (L.self_conn.n_instr > 0) {
        linear_fwd<REAL>(L.self_conn, L.in, L.conv, t, sX, sYv, true);
        __syncthreads();
    }
    REAL rho = 1;
    if (L.norm == 1) {
        rho = norm_rho<REAL>(L, sYv, red);
        norm_apply<REAL>(L, sYv, rho, sYn);
    } else {
        for (int k = threadIdx.x; k < L.conv.dim; k += blockDim.x)
            sYn[k] = sYv[k];
    }
    for (int k = threadIdx.x; k < L.conv.dim; k += blockDim.x)
        a.y_save[(int64_t)i * L.conv.dim + k] = sYv[k];
    if (threadIdx.x == 0)
        a.rho_save[i] = rho;
    __syncthreads();
    gate_fwd<REAL>(L, sYn, sH);
    __syncthreads();
    if (L.resnet) {
        for (int k = threadIdx.x; k < L.out.dim; k += blockDim.x)
            sH[k] += sX[k];
        __syncthreads();
    }

    if (!a.last) {
        const Layer<REAL> &N = a.next;
        for (int k = threadIdx.x; k < L.out.dim; k += blockDim.x)
            a.hout[(int64_t)i * a.W + k] = sH[k];
        REAL *h1n = a.h1_next + (int64_t)i * N.in.dim;
        linear_fwd<REAL>(N.linear_1, N.in, N.in, t, sH, sG1, false);
        __syncthreads();
        const REAL s = N.sender_scale[t];
        for (int k = threadIdx.x; k < N.in.dim; k += blockDim.x)
            h1n[k] = sG1[k] * s;
        return;
    }

    /* last layer: atomic energy, then dE/dA of this layer for the backward pass */
    const REAL *cur = sH;
    for (int r = 0; r < a.n_readout; r++) {
        REAL *nx = (r & 1) ? sG2 : sG1;
        linear_fwd<REAL>(a.readout[r], a.readout_irreps[r], a.readout_irreps[r + 1], t, cur, nx,
                         false);
        __syncthreads();
        cur = nx;
    }
    if (threadIdx.x == 0)
        a.e_atom[i] = (double)cur[0];
    __syncthreads();
    REAL *gh = sG1, *gyn = sG2;
    for (int k = threadIdx.x; k < L.out.dim; k += blockDim.x)
        gh[k] = a.grad_top[(int64_t)t * L.out.dim + k];
    __syncthreads();
    gate_bwd<REAL>(L, sYn, gh, gyn); /* ends with a barrier */
    REAL *gy = sYn;                  /* the normalised input is no longer needed */
    if (L.norm == 1)
        norm_bwd<REAL>(L, sYv, rho, gyn, gy, red);
    else
        for (int k = threadIdx.x; k < L.conv.dim; k += blockDim.x)
            gy[k] = gyn[k];
    __syncthreads();
    linear_bwd<REAL>(L.linear_2, L.mid, L.conv, t, gy, a.ga_out + (int64_t)i * a.ga_stride, false);
    if (a.layer > 0) {
        REAL *gp = a.gpart_out + (int64_t)i * a.W;
        if (L.self_conn.n_instr > 0)
            linear_bwd<REAL>(L.self_conn, L.in, L.conv, t, gy, gp, false);
        else
            for (int k = threadIdx.x; k < din; k += blockDim.x)
                gp[k] = 0;
        if (L.resnet) {
            __syncthreads();
            for (int k = threadIdx.x; k < din; k += blockDim.x)
                gp[k] += gh[k];
        }
    }
}

template <typename REAL>
size_t forward_smem_bytes(const Layer<REAL> &L, int lmax, int EC, int TC, int epi_len)
{
    ChunkLayout<REAL> cl;
    cl.init(L, lmax, EC, TC);
    SmemCarver sc{nullptr, 0};
    sc.take<REAL>(L.mid.dim);
    sc.take<REAL>((size_t)EC * cl.nsh);
    sc.take<REAL>((size_t)EC * cl.act_total);
    sc.take<REAL>((size_t)cl.a_last * (TC + 1));
    sc.take<REAL>((size_t)EC * L.max_pairs);
    sc.take<REAL>((size_t)EC * (TC + 1));
    sc.take<int>(EC);
    sc.take<double>(kThreads);
    sc.take<REAL>(L.in.dim);
    sc.take<REAL>(L.conv.dim);
    sc.take<REAL>(L.conv.dim);
    sc.take<REAL>(L.out.dim);
    sc.take<REAL>(epi_len);
    sc.take<REAL>(epi_len);
    return sc.used + 16;
}

template <typename REAL>
cudaError_t layer_forward_launch(const ForwardArgs<REAL> &a, int n_blocks, size_t smem,
                                 cudaStream_t stream)
{
    cudaError_t err = cudaFuncSetAttribute(layer_forward_kernel<REAL>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (err != cudaSuccess || n_blocks == 0)
        return err;
    layer_forward_kernel<REAL><<<n_blocks, kThreads, smem, stream>>>(a);
    return cudaGetLastError();
}

template size_t forward_smem_bytes<float>(const Layer<float> &, int, int, int, int);
template size_t forward_smem_bytes<double>(const Layer<double> &, int, int, int, int);
template cudaError_t layer_forward_launch<float>(const ForwardArgs<float> &, int, size_t,
                                                 cudaStream_t);
template cudaError_t layer_forward_launch<double>(const ForwardArgs<double> &, int, size_t,
                                                  cudaStream_t);

} // namespace fnqcu
