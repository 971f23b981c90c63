/*
 * layer_forward.cu: one fused kernel per interaction layer, forward. One block owns NB
 * consecutive receiving atoms and walks their edges (sorted by receiver) in super-chunks of EC:
 *   - spherical harmonics and radial basis of each edge (computed once per evaluation,
 *     edge_geometry.cu);
 *   - the radial MLP's hidden layers for the super-chunk (block_gemm);
 *   - per round of column tasks: the round's tile of radial weights (block_gemm), then the
 *     tensor product by columns (tp_column.cuh): each lane sums its channel's messages per
 *     receiver and writes them to the receiver's row of A;
 *   - node epilogue for the NB atoms together (each weight read once per block):
 *     y = linear_2(A) + self_connection(h); RMS norm; gate; resnet; then the next layer's sender
 *     features h1 = linear_1'(h') s, or, after the last layer, the atomic energies and the top of
 *     the backward pass (dE/dA of this layer and the self-connection part of dE/dh).
 * Nothing per edge leaves the block except through A (per atom).
 * Radial table mode (float32 default): no MLP and no rounds; warp (atom q, parity) runs every
 * P-th unit (a path group, tp_group.cuh, or one path's column task; P = 2, or 4 or 8 when the
 * atoms are few, cuda_run.cu) over atom q's edges, each lane interpolating its weights from the
 * layer's table (radial_table.cuh).
 * SPLIT (node GEMMs, node_gemm.cu): the kernel stops after writing A, without the epilogue.
 */
#include <type_traits>

#include "gemm/block_gemm.cuh"
#include "geometry/edge_ops.cuh"
#include "nequip/layer_forward.cuh"
#include "nequip/node_ops.cuh"
#include "nequip/radial_mlp.cuh"
#include "nequip/radial_table.cuh"
#include "runtime/smem_config.cuh"
#include "nequip/tp_column.cuh"
#include "nequip/tp_group.cuh"

namespace fnqcu {

static_assert(kWarps == 2 * kNB, "table mode: two warps (task parities) per atom of kNB");

/* Shared-memory layout, computed the same way on host and device. */
template <typename REAL> struct FwdLayout {
    int EC, nsh, ld[kMaxMlp + 1], ldr;
    bool table; /* radial table mode: no MLP activations, per-edge knot and coefficients */
    size_t off_y, off_act[kMaxMlp], off_r, off_src, off_recv, off_knot, off_c, edge_bytes;
    size_t off_x, off_yv, off_yn, off_h, off_t1, off_t2, off_rho, off_red, epi_bytes;

    __host__ __device__ void init(const Layer<REAL> &L, int lmax, int ec, int epi_len)
    {
        EC = ec;
        nsh = (lmax + 1) * (lmax + 1);
        for (int k = 0; k < L.n_mlp; k++)
            ld[k] = L.pad[k] + 8; /* multiple of 8, not of 32: fewer bank conflicts */
        ldr = kRoundSpan + 8;
        size_t o = 0;
        auto take = [&](size_t bytes) {
            size_t at = (o + 31) & ~size_t(31);
            o = at + bytes;
            return at;
        };
        table = L.rtab != nullptr;
        off_y = take(sizeof(REAL) * EC * nsh);
        for (int k = 0; k < L.n_mlp; k++)
            off_act[k] = table ? 0 : take(sizeof(REAL) * EC * ld[k]);
        off_r = table ? 0 : take(sizeof(REAL) * EC * ldr); /* table mode: no weight tiles */
        off_src = take(sizeof(int) * EC);
        off_recv = take(sizeof(int) * EC);
        off_knot = table ? take(sizeof(int) * EC) : 0;
        off_c = table ? take(sizeof(REAL) * EC * 4) : 0;
        edge_bytes = o;
        /* the epilogue reuses the same memory */
        o = 0;
        off_x = take(sizeof(REAL) * kNB * L.in.dim);
        off_yv = take(sizeof(REAL) * kNB * L.conv.dim);
        off_yn = take(sizeof(REAL) * kNB * L.conv.dim);
        off_h = take(sizeof(REAL) * kNB * L.out.dim);
        off_t1 = take(sizeof(REAL) * kNB * epi_len);
        off_t2 = take(sizeof(REAL) * kNB * epi_len);
        off_rho = take(sizeof(REAL) * kNB);
        off_red = take(sizeof(double) * kNB * kThreads);
        epi_bytes = o;
    }
    /* shared memory per block: the edge area, or its union with the epilogue's scratch where
     * the kernel runs the node epilogue itself (no node GEMMs) */
    __host__ __device__ size_t bytes(bool epilogue) const
    {
        return (epilogue && epi_bytes > edge_bytes ? epi_bytes : edge_bytes) + 32;
    }
};

/* TAB: radial table mode (L.rtab): no MLP and no rounds; each warp runs its units
 * (Layer::units) over one atom's edges on its own, weights from the table; NBK atoms a block
 * (kNB, or 2 or 1 for few atoms; a template argument: a runtime count cost large systems 2-3 %
 * on an H100) */
template <typename REAL, bool TAB, bool SPLIT, int NBK>
__global__ void __launch_bounds__(kThreads, forward_blocks_per_sm<REAL>(TAB, SPLIT))
    layer_forward_kernel(ForwardArgs<REAL> a)
{
    extern __shared__ __align__(32) unsigned char smem[];
    const Layer<REAL> &L = a.L;
    FwdLayout<REAL> lay;
    lay.init(L, a.geo.lmax, a.EC, a.epi_len);
    constexpr int nbk = TAB ? NBK : kNB;
    const int r0 = blockIdx.x * nbk;
    const int nb = min(nbk, a.n_local - r0);
    const int64_t eb = a.recv_start[r0], ee = a.recv_start[r0 + nb];
    const int K = L.n_mlp;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;

    REAL *sY = (REAL *)(smem + lay.off_y);
    REAL *sR = (REAL *)(smem + lay.off_r);
    int *sSrc = (int *)(smem + lay.off_src), *sRecv = (int *)(smem + lay.off_recv);
    int *sKnot = (int *)(smem + lay.off_knot);
    REAL *sC = (REAL *)(smem + lay.off_c);

    ColumnArgs<REAL> ca = column_args<REAL>(a, lay, sSrc, sRecv, sY, sR, L.in.tile_dim);
    if (TAB) {
        ca.tab_wd = L.rtab_wd;
        ca.tab_ab = L.rtab_ab;
        ca.knot = shared_offset(sKnot);
        ca.coef = shared_offset(sC);
    }

    for (int64_t e0 = eb; e0 < ee; e0 += lay.EC) {
        const int n = (int)min((int64_t)lay.EC, ee - e0);
        const int np = (n + 15) / 16 * 16;
        __syncthreads();
        /* geometry (precomputed per edge); rows n..np-1 are zero so the GEMMs see zero padding */
        if constexpr (TAB) {
            const REAL ab_unit = (REAL)L.rtab_ab_unit;
            auto coefs = [&](int k, REAL t) { forward_table_coefs(t, ab_unit, sC + 4 * k); };
            stage_table_edges<REAL>(a.edge_feat, lay.nsh, nullptr, e0, n, sY, sKnot, L.ld_last,
                                    coefs);
        } else {
            stage_edge_features<REAL>(a.edge_feat, lay.nsh, a.geo.n_rfeat, nullptr, e0, n, np, sY,
                                      (REAL *)(smem + lay.off_act[0]), lay.ld[0]);
        }
        for (int k = threadIdx.x; k < n; k += blockDim.x) {
            sSrc[k] = staged_sender(a, (int)a.edge_send[e0 + k]);
            const int i = (int)a.edge_recv[e0 + k];
            sRecv[k] = i | (e0 + k == a.recv_start[i] ? kFirstEdge : 0);
        }
        __syncthreads();
        ca.n = n;
        if constexpr (TAB) {
            /* warp = (atom q, task parity): the atom's edges of this chunk, every P-th unit
             * (a group of paths or one path, Layer::units), each receiver's sums with one
             * owner. P = 2 (kNB atoms a block) runs two path functions at a time in a block,
             * not eight (instruction cache); few atoms run more warps an atom (nbk) */
            constexpr int P = kWarps / nbk;
            const int q = warp % nbk, parity = warp / nbk;
            if (q < nb) {
                ca.e_first = (int)(max(a.recv_start[r0 + q], e0) - e0);
                ca.n = (int)(min(a.recv_start[r0 + q + 1], e0 + n) - e0);
            } else {
                ca.e_first = ca.n = 0;
            }
            for (int unit = parity; unit < L.n_units && !(a.skip & kSkipColumns); unit += P) {
                const int4 un = L.units[unit], tk = L.utasks[un.x];
                if (lane >= tk.z)
                    continue;
                if (un.z >= 0)
                    group_forward_dispatch<REAL>(un.z, ca, L.paths, L.utasks + un.x, tk.y + lane,
                                                 tk.w + lane, a.A, a.a_stride);
                else
                    column_forward_dispatch<true, REAL>(ca, L.paths[tk.x], tk.y + lane,
                                                        tk.w + lane, a.A, a.a_stride);
            }
            ca.e_first = 0;
            continue;
        }
        if (!(a.skip & kSkipHidden))
            radial_mlp_hidden<REAL>(L, smem, lay.off_act, nullptr, lay.ld, np, a.tf32,
                                    sR /* free until the rounds */, lay.EC * lay.ldr);
        const REAL *hidden = (REAL *)(smem + lay.off_act[K - 1]);
        /* rounds of column tasks */
        for (int rd = 0; rd < L.n_rounds; rd++) {
            const int2 round = L.rounds[rd];
            /* the last round may hold fewer than kWarps tasks: only their columns */
            const int span = 32 * min(kWarps, L.n_tasks - round.x);
            if (!(a.skip & kSkipRoundGemm))
                block_gemm<REAL>(np, span, L.pad[K - 1], hidden, lay.ld[K - 1],
                                 L.mlp_wp[K - 1] + round.y, L.ld_last, sR, lay.ldr, false, a.tf32);
            __syncthreads();
            const int task = round.x + warp;
            if (task < L.n_tasks && !(a.skip & kSkipColumns)) {
                const int4 tk = L.tasks[task];
                if (lane < tk.z) {
                    const Path P = L.paths[tk.x];
                    column_forward_dispatch<false, REAL>(ca, P, tk.y + lane, tk.w + lane - round.y,
                                                  a.A, a.a_stride);
                }
            }
            __syncthreads();
        }
    }
    __syncthreads();
    /* atoms without edges have no messages: zero their A rows */
    for (int q = 0; q < nb; q++)
        if (a.recv_start[r0 + q] == a.recv_start[r0 + q + 1])
            for (int k = threadIdx.x; k < L.mid.dim; k += blockDim.x)
                a.A[(int64_t)(r0 + q) * a.a_stride + k] = 0;
    if constexpr (SPLIT)
        return;
    __syncthreads();

    /* ---- node epilogue for the block's atoms ---- */
    REAL *sX = (REAL *)(smem + lay.off_x), *sYv = (REAL *)(smem + lay.off_yv);
    REAL *sYn = (REAL *)(smem + lay.off_yn), *sH = (REAL *)(smem + lay.off_h);
    REAL *sT1 = (REAL *)(smem + lay.off_t1), *sT2 = (REAL *)(smem + lay.off_t2);
    REAL *rho = (REAL *)(smem + lay.off_rho);
    double *red = (double *)(smem + lay.off_red);
    int t[kNB];
#pragma unroll
    for (int q = 0; q < kNB; q++)
        t[q] = q < nb ? a.species[r0 + q] : 0;
    const int din = L.in.dim, dconv = L.conv.dim, dout = L.out.dim;

    for (int q = 0; q < nb; q++) {
        const REAL *xin = a.layer == 0 ? a.embed + (int64_t)t[q] * din
                                       : a.hin + (int64_t)(r0 + q) * a.W;
        for (int k = threadIdx.x; k < din; k += blockDim.x)
            sX[q * din + k] = xin[k];
    }
    __syncthreads();
    linear_fwd<REAL, kNB>(L.linear_2, L.mid, L.conv, t, nb, a.A + (int64_t)r0 * a.a_stride,
                          a.a_stride, sYv, dconv, false);
    __syncthreads();
    if (L.self_conn.n_instr > 0) {
        linear_fwd<REAL, kNB>(L.self_conn, L.in, L.conv, t, nb, sX, din, sYv, dconv, true);
        __syncthreads();
    }
    if (L.bias_2) {
        for (int k = threadIdx.x; k < nb * dconv; k += blockDim.x)
            sYv[k] += L.bias_2[k % dconv];
        __syncthreads();
    }
    norm_fwd<REAL, kNB>(L, nb, sYv, dconv, rho, sYn, dconv, red);
    __syncthreads();
    for (int k = threadIdx.x; k < nb * dconv; k += blockDim.x)
        a.y_save[(int64_t)r0 * dconv + k] = sYv[k];
    if (threadIdx.x < nb)
        a.rho_save[r0 + threadIdx.x] = rho[threadIdx.x];
    gate_fwd<REAL, kNB>(L, nb, sYn, dconv, sH, dout);
    __syncthreads();
    if (L.resnet) {
        for (int k = threadIdx.x; k < nb * dout; k += blockDim.x)
            sH[k] += sX[k];
        __syncthreads();
    }

    if (!a.last) {
        const Layer<REAL> &N = a.next;
        for (int q = 0; q < nb; q++)
            for (int k = threadIdx.x; k < dout; k += blockDim.x)
                a.hout[(int64_t)(r0 + q) * a.W + k] = sH[q * dout + k];
        linear_fwd<REAL, kNB>(N.linear_1, N.in, N.in, t, nb, sH, dout, sT1, N.in.dim, false);
        __syncthreads();
        /* h1 rows are tiled (model_dev.cuh) */
        for (int k = threadIdx.x; k < N.in.dim; k += blockDim.x) {
            const int b = block_of(N.in, k), rel = k - N.in.off[b];
            const int at = tiled_index(N.in, b, rel / N.in.mul[b], rel % N.in.mul[b]);
            for (int q = 0; q < nb; q++)
                a.h1_next[(int64_t)(r0 + q) * N.in.tile_dim + at] =
                    (sT1[q * N.in.dim + k] + (N.bias_1 ? N.bias_1[k] : REAL(0))) *
                    N.sender_scale[t[q]];
        }
        return;
    }

    /* last layer: atomic energies through the readout, then dE/dA of this layer */
    readout_energies<REAL>(a, t, nb, r0, sH, dout, sT1, sT2);
    REAL *gh = sT1, *gyn = sT2;
    for (int q = 0; q < nb; q++)
        for (int k = threadIdx.x; k < dout; k += blockDim.x)
            gh[q * dout + k] = a.grad_top[(int64_t)t[q] * dout + k];
    __syncthreads();
    REAL *gy = sYn;
    norm_gate_bwd<REAL, kNB>(L, nb, sYv, dconv, rho, gh, dout, sYn, gyn, gy, dconv, red);
    __syncthreads();
    linear_bwd<REAL, kNB>(L.linear_2, L.mid, L.conv, t, nb, gy, dconv,
                          a.ga_out + (int64_t)r0 * a.ga_stride, a.ga_stride, false, true);
    if (a.layer > 0) {
        REAL *gp = a.gpart_out + (int64_t)r0 * a.W;
        if (L.self_conn.n_instr > 0)
            linear_bwd<REAL, kNB>(L.self_conn, L.in, L.conv, t, nb, gy, dconv, gp, a.W, false);
        else
            for (int q = 0; q < nb; q++)
                for (int k = threadIdx.x; k < din; k += blockDim.x)
                    gp[(int64_t)q * a.W + k] = 0;
        if (L.resnet) {
            __syncthreads();
            for (int q = 0; q < nb; q++)
                for (int k = threadIdx.x; k < din; k += blockDim.x)
                    gp[(int64_t)q * a.W + k] += gh[q * dout + k];
        }
    }
}

template <typename REAL>
size_t forward_smem_bytes(const Layer<REAL> &L, int lmax, int EC, int epi_len, bool epilogue)
{
    FwdLayout<REAL> lay;
    lay.init(L, lmax, EC, epi_len);
    return lay.bytes(epilogue);
}

template <typename REAL> cudaError_t forward_configure(size_t smem)
{
    const void *kernels[] = {(const void *)layer_forward_kernel<REAL, false, false, kNB>,
                             (const void *)layer_forward_kernel<REAL, true, false, kNB>,
                             (const void *)layer_forward_kernel<REAL, false, true, kNB>,
                             (const void *)layer_forward_kernel<REAL, true, true, kNB>,
                             (const void *)layer_forward_kernel<REAL, true, false, few_atoms<REAL>(2)>,
                             (const void *)layer_forward_kernel<REAL, true, true, few_atoms<REAL>(2)>,
                             (const void *)layer_forward_kernel<REAL, true, false, few_atoms<REAL>(1)>,
                             (const void *)layer_forward_kernel<REAL, true, true, few_atoms<REAL>(1)>};
    return allow_dynamic_smem(kernels, smem);
}

template <typename REAL>
cudaError_t layer_forward_launch(const ForwardArgs<REAL> &a, size_t smem, cudaStream_t stream)
{
    const int nbk = a.L.rtab ? a.nbk : kNB;
    const int blocks = (a.n_local + nbk - 1) / nbk;
    if (blocks == 0)
        return cudaSuccess;
    auto table = [&](auto few) {
        constexpr int NBK = decltype(few)::value;
        return a.node_split ? layer_forward_kernel<REAL, true, true, NBK>
                            : layer_forward_kernel<REAL, true, false, NBK>;
    };
    auto kernel = !a.L.rtab ? (a.node_split ? layer_forward_kernel<REAL, false, true, kNB>
                                            : layer_forward_kernel<REAL, false, false, kNB>)
                  : nbk == 1 ? table(std::integral_constant<int, few_atoms<REAL>(1)>())
                  : nbk == 2 ? table(std::integral_constant<int, few_atoms<REAL>(2)>())
                             : table(std::integral_constant<int, kNB>());
    kernel<<<blocks, kThreads, smem, stream>>>(a);
    return cudaGetLastError();
}

template size_t forward_smem_bytes<float>(const Layer<float> &, int, int, int, bool);
template size_t forward_smem_bytes<double>(const Layer<double> &, int, int, int, bool);
template cudaError_t forward_configure<float>(size_t);
template cudaError_t forward_configure<double>(size_t);
template cudaError_t layer_forward_launch<float>(const ForwardArgs<float> &, size_t, cudaStream_t);
template cudaError_t layer_forward_launch<double>(const ForwardArgs<double> &, size_t, cudaStream_t);

} // namespace fnqcu
