/*
 * layer_backward.cu: one fused kernel per interaction layer, backward. One block owns NB
 * consecutive receiving atoms (dE/dA of every owned atom is known: from the forward epilogue or
 * the layer above) and walks their edges in super-chunks of EC:
 *   - Y and radial basis (precomputed per edge); the MLP hidden layers (pre-activations kept);
 *   - per round of column tasks: the round's radial weights (block_gemm), the tensor-product
 *     backward by columns (tp_column.cuh): dE/d(radial weight) into shared memory, dE/dY per
 *     edge, and the receiver's own sender-feature gradient through the reverse edge (the edge
 *     j <- i has the same radial weights and Y_l(-r) = (-1)^l Y_l(r)); then
 *     dE/d(hidden) += dR . W_round^T (block_gemm);
 *   - the MLP hidden layers backward (block_gemm on the transposed weights); dE/dY and
 *     dE/d(basis) of each edge are added to its row of edge_ggeo (dE/dr_e follows once, after
 *     the last layer: edge_geometry.cu);
 *   - epilogue for the NB atoms: dE/dh1 (summed over the paths of each input block), then
 *     dE/d(layer input) = linear_1^T(dh1 s) + self-connection part, then the node backward of
 *     the layer below (gate, norm, linear_2^T) gives that layer's dE/dA.
 * The same kernel in GHOST mode walks the edges each ghost atom sends (LAMMPS' ghosts have no
 * edge lists of their own) and only produces their dE/dh1; the epilogue then waits for the
 * reverse exchange and runs as backward_epilogue_kernel.
 * Radial table mode (float32 default): no MLP, no rounds and no weight tiles; warp (atom q,
 * parity) runs every P-th unit (a path group, tp_group.cuh, or one path's column task; P = 2,
 * or 4 or 8 for few atoms) over atom q's edges, weights and dw/dt from the table, and dE/dt
 * of each edge (summed with dE/dY) goes to edge_ggeo instead of dE/d(basis).
 */
#include "gemm/block_gemm.cuh"
#include "geometry/edge_ops.cuh"
#include "nequip/layer_backward.cuh"
#include "nequip/node_ops.cuh"
#include "nequip/radial_mlp.cuh"
#include "nequip/radial_table.cuh"
#include "runtime/smem_config.cuh"
#include "nequip/tp_column.cuh"
#include "nequip/tp_group.cuh"

namespace fnqcu {

template <typename REAL> struct BwdLayout {
    int EC, nsh, ld[kMaxMlp + 1], ldm, ldr;
    /* radial table mode: no MLP and no weight tiles; the dE/dY rows (one per edge and warp of
     * an atom, wpa of them) have one more slot (nsh1 = nsh + 1) for dE/dt */
    bool table;
    int nsh1, wpa;
    size_t off_knot, off_c, off_dc;
    /* compact: the MLP's hidden layers keep only their last activation through the rounds;
     * the others live in the gradient tile while they are computed (free then), and after the
     * rounds the hidden layers are run again (a few % of the work) into the two round tiles to
     * get the pre-activations the MLP backward needs. Half the shared memory per edge, so
     * twice the edges per chunk with two blocks per SM. Otherwise (a model whose hidden layers
     * do not fit those tiles) everything is kept. */
    bool compact;
    size_t off_y, off_act[kMaxMlp], off_pre[kMaxMlp], off_r, off_dr, off_dh, off_dyw, off_m0,
        off_m1, off_src, off_recv, edge_bytes;
    size_t off_act_again[kMaxMlp], off_pre_again[kMaxMlp]; /* compact: the rerun after the rounds */
    size_t off_dx, off_tmp, off_gin, off_yv, off_yn, off_gyn, off_rho, off_red, epi_bytes;

    __host__ __device__ void init(const Layer<REAL> &L, const Layer<REAL> &Pv, int lmax, int ec,
                                  int epi_len, int nbk)
    {
        EC = ec;
        wpa = kWarps / nbk;
        nsh = (lmax + 1) * (lmax + 1);
        ldm = 8;
        const int K = L.n_mlp;
        for (int k = 0; k < K; k++) {
            ld[k] = L.pad[k] + 8;
            if (ld[k] > ldm)
                ldm = ld[k];
        }
        ldr = kRoundSpan + 8;
        /* compact needs: the first K-1 activations in one round tile; and activations,
         * pre-activations and the two backward scratch matrices in both (32-byte alignment
         * of each piece included) */
        int first = 0, again = 2 * (ldm + 8);
        for (int k = 0; k + 1 < K; k++) {
            first += ld[k] + 8;
            again += (ld[k] + 8) + (ld[k + 1] + 8); /* activation k, pre-activation k+1 */
        }
        compact = K >= 2 && first <= ldr && again <= 2 * ldr;
        table = L.rtab != nullptr;
        nsh1 = nsh + (table ? 1 : 0);
        size_t o = 0;
        auto take = [&](size_t bytes) {
            size_t at = (o + 31) & ~size_t(31);
            o = at + bytes;
            return at;
        };
        off_y = take(sizeof(REAL) * EC * nsh);
        if (table) {
            compact = false;
            for (int k = 0; k < K; k++)
                off_act[k] = off_pre[k] = off_act_again[k] = off_pre_again[k] = 0;
            off_r = off_dr = off_dh = off_m0 = off_m1 = 0; /* no weight tiles, no MLP */
            off_dyw = take(sizeof(REAL) * EC * wpa * nsh1); /* per edge and warp of an atom */
            off_knot = take(sizeof(int) * EC);
            off_c = take(sizeof(REAL) * EC * 4);
            off_dc = take(sizeof(REAL) * EC * 4);
        } else {
            off_knot = off_c = off_dc = 0;
            if (compact) {
                off_act[K - 1] = take(sizeof(REAL) * EC * ld[K - 1]);
            } else {
                for (int k = 0; k < K; k++)
                    off_act[k] = take(sizeof(REAL) * EC * ld[k]);
                for (int k = 1; k < K; k++)
                    off_pre[k] = take(sizeof(REAL) * EC * ld[k]);
            }
            off_r = take(sizeof(REAL) * EC * ldr);
            off_dr = take(sizeof(REAL) * EC * ldr);
            off_dh = take(sizeof(REAL) * EC * ld[K - 1]);
            off_dyw = take(sizeof(REAL) * EC * kWarps * nsh);
            if (compact) {
                const size_t keep = o;
                o = off_dr; /* the first pass: activations 0..K-2 in the gradient tile */
                for (int k = 0; k + 1 < K; k++)
                    off_act[k] = take(sizeof(REAL) * EC * ld[k]);
                o = off_r; /* the rerun and the MLP backward: both round tiles */
                for (int k = 0; k + 1 < K; k++)
                    off_act_again[k] = take(sizeof(REAL) * EC * ld[k]);
                off_act_again[K - 1] = off_act[K - 1];
                for (int k = 1; k < K; k++)
                    off_pre_again[k] = take(sizeof(REAL) * EC * ld[k]);
                off_m0 = take(sizeof(REAL) * EC * ldm);
                off_m1 = take(sizeof(REAL) * EC * ldm);
                o = keep;
            } else {
                /* the MLP backward's two scratch matrices reuse the round tiles (free by then) */
                off_m0 = off_r;
                off_m1 = off_dr;
            }
        }
        off_src = take(sizeof(int) * EC);
        off_recv = take(sizeof(int) * EC);
        edge_bytes = o;
        o = 0;
        off_dx = take(sizeof(REAL) * kNB * L.in.dim);
        off_tmp = take(sizeof(REAL) * kNB * epi_len);
        off_gin = take(sizeof(REAL) * kNB * epi_len);
        off_yv = take(sizeof(REAL) * kNB * epi_len);
        off_yn = take(sizeof(REAL) * kNB * epi_len);
        off_gyn = take(sizeof(REAL) * kNB * epi_len);
        off_rho = take(sizeof(REAL) * kNB);
        off_red = take(sizeof(double) * kNB * kThreads);
        epi_bytes = o;
        (void)Pv;
    }
    /* shared memory per block: the edge area, or its union with the epilogue's scratch where
     * the kernel runs the node epilogue itself (no node GEMMs) */
    __host__ __device__ size_t bytes(bool epilogue) const
    {
        return (epilogue && epi_bytes > edge_bytes ? epi_bytes : edge_bytes) + 32;
    }
};

/* dE/dh1 of atoms [r0, r0+nb) in input-irreps layout, summed over the paths of each input block
 * in path order, from the per-path scratch rows of the block's slot (rows: atom r0's; atoms
 * without edges get zeros). The path walk is shared by the block's atoms (the sums themselves
 * are per atom, in the same order). */
template <typename REAL, int NB>
__device__ void reduce_dxpart(const Layer<REAL> &L, const int64_t *start, const REAL *rows,
                              int dx_stride, int r0, int nb, REAL *dh1, int64_t sd)
{
    bool has_edges[NB];
#pragma unroll
    for (int q = 0; q < NB; q++)
        has_edges[q] = q < nb && start[r0 + q] != start[r0 + q + 1];
    for (int o = threadIdx.x; o < L.in.dim; o += blockDim.x) {
        const int b = block_of(L.in, o), mi = L.in.mul[b], in_off = L.in.off[b];
        const int rel = o - in_off, m1 = rel / mi, u = rel % mi;
        REAL s[NB];
#pragma unroll
        for (int q = 0; q < NB; q++)
            s[q] = 0;
        for (int p = 0; p < L.n_paths; p++) {
            const Path &P = L.paths[p];
            if (P.in_off != in_off || !P.dx_read)
                continue;
            const int k = P.dx_off + m1 * P.mul + u;
#pragma unroll
            for (int q = 0; q < NB; q++)
                if (has_edges[q])
                    s[q] += rows[(int64_t)q * dx_stride + k];
        }
        for (int q = 0; q < nb; q++)
            dh1[q * sd + o] = s[q];
    }
}

/* The node backward ending the atoms [r0, r0+nb): see the file comment. */
template <typename REAL>
__device__ void backward_epilogue(const BackwardArgs<REAL> &a, const BwdLayout<REAL> &lay,
                                  unsigned char *smem, int r0, int nb, const REAL *dh1,
                                  int64_t sd)
{
    const Layer<REAL> &L = a.L;
    const Layer<REAL> &P = a.prev;
    REAL *sTmp = (REAL *)(smem + lay.off_tmp), *sGin = (REAL *)(smem + lay.off_gin);
    REAL *sYv = (REAL *)(smem + lay.off_yv), *sYn = (REAL *)(smem + lay.off_yn);
    REAL *sGyn = (REAL *)(smem + lay.off_gyn), *rho = (REAL *)(smem + lay.off_rho);
    double *red = (double *)(smem + lay.off_red);
    const int din = L.in.dim, pconv = P.conv.dim;
    int t[kNB];
#pragma unroll
    for (int q = 0; q < kNB; q++)
        t[q] = q < nb ? a.species[r0 + q] : 0;
    for (int q = 0; q < nb; q++) {
        const REAL s = L.sender_scale[t[q]];
        for (int k = threadIdx.x; k < din; k += blockDim.x) {
            sTmp[q * din + k] = dh1[q * sd + k] * s;
            sGin[q * din + k] = a.gpart_in[(int64_t)(r0 + q) * a.W + k];
        }
        for (int k = threadIdx.x; k < pconv; k += blockDim.x)
            sYv[q * pconv + k] = a.y_prev[(int64_t)(r0 + q) * pconv + k];
    }
    if (threadIdx.x < nb)
        rho[threadIdx.x] = a.rho_prev[r0 + threadIdx.x];
    __syncthreads();
    linear_bwd<REAL, kNB>(L.linear_1, L.in, L.in, t, nb, sTmp, din, sGin, din, true);
    REAL *gy = sYn;
    norm_gate_bwd<REAL, kNB>(P, nb, sYv, pconv, rho, sGin, din, sYn, sGyn, gy, pconv, red);
    __syncthreads();
    linear_bwd<REAL, kNB>(P.linear_2, P.mid, P.conv, t, nb, gy, pconv,
                          a.ga_out + (int64_t)r0 * a.ga_stride, a.ga_stride, false, true);
    if (a.layer - 1 > 0) {
        REAL *gp = a.gpart_out + (int64_t)r0 * a.W;
        if (P.self_conn.n_instr > 0)
            linear_bwd<REAL, kNB>(P.self_conn, P.in, P.conv, t, nb, gy, pconv, gp, a.W, false);
        else
            for (int q = 0; q < nb; q++)
                for (int k = threadIdx.x; k < P.in.dim; k += blockDim.x)
                    gp[(int64_t)q * a.W + k] = 0;
        if (P.resnet) {
            __syncthreads();
            for (int q = 0; q < nb; q++)
                for (int k = threadIdx.x; k < din; k += blockDim.x)
                    gp[(int64_t)q * a.W + k] += sGin[q * din + k];
        }
    }
}

/* TAB: radial table mode (L.rtab): no MLP and no rounds; each warp runs every P-th unit
 * (Layer::units) over one atom's edges on its own, weights and dw/dt from the table, and sums
 * dE/dt with dE/dY in its parity's rows */
template <typename REAL, bool GHOST, bool TAB, int NBK>
__device__ __forceinline__ void layer_backward_block(const BackwardArgs<REAL> &a,
                                                     unsigned char *smem, REAL *dxrows)
{
    const Layer<REAL> &L = a.L;
    /* GHOST: the block's "atoms" are ghosts [first + NB*b, ...), walked through the by-sender
     * index, PER_WARP of them per warp; otherwise owned receivers with their contiguous edges,
     * nbk of them in table mode (kWarps / nbk warps each) */
    constexpr int NB = GHOST ? kGhostNB : kNB, PER_WARP = GHOST ? kGhostsPerWarp : 1;
    constexpr int nbk = GHOST || !TAB ? kNB : NBK; /* warps: nbk atoms (ghost groups) x P */
    constexpr int P = kWarps / nbk;
    BwdLayout<REAL> lay;
    lay.init(L, a.prev, a.geo.lmax, a.EC, a.epi_len, nbk);
    const int r0 = (GHOST ? a.n_local + blockIdx.x * NB : blockIdx.x * nbk);
    const int nb = min(GHOST ? NB : nbk, (GHOST ? a.n_all : a.n_local) - r0);
    const int64_t *start = GHOST ? a.send_start : a.recv_start;
    const int64_t eb = start[r0], ee = start[r0 + nb];
    const int K = L.n_mlp;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const bool need_dx = a.layer > 0;

    REAL *sY = (REAL *)(smem + lay.off_y), *sR = (REAL *)(smem + lay.off_r);
    REAL *sDR = (REAL *)(smem + lay.off_dr), *sDH = (REAL *)(smem + lay.off_dh);
    REAL *sDYw = (REAL *)(smem + lay.off_dyw);
    int *sSrc = (int *)(smem + lay.off_src), *sRecv = (int *)(smem + lay.off_recv);
    int *sKnot = (int *)(smem + lay.off_knot);
    REAL *sC = (REAL *)(smem + lay.off_c), *sDC = (REAL *)(smem + lay.off_dc);

    ColumnArgs<REAL> ca = column_args<REAL>(a, lay, sSrc, sRecv, sY, sR, L.in.tile_dim);
    ca.dx_row0 = r0;
    if (TAB) {
        ca.tab = L.rtab;
        ca.knot = shared_offset(sKnot);
        ca.coef = shared_offset(sC);
        ca.dcoef = shared_offset(sDC);
    }

    for (int64_t e0 = eb; e0 < ee; e0 += lay.EC) {
        const int n = (int)min((int64_t)lay.EC, ee - e0);
        const int np = (n + 15) / 16 * 16;
        __syncthreads();
        const int64_t *index = GHOST ? a.send_edges : nullptr;
        if constexpr (TAB) {
            auto coefs = [&](int k, REAL t) { hermite_coefs(t, sC + 4 * k, sDC + 4 * k); };
            stage_table_edges<REAL>(a.edge_feat, lay.nsh, index, e0, n, sY, sKnot, 4 * L.ld_last,
                                    coefs);
        } else {
            stage_edge_features<REAL>(a.edge_feat, lay.nsh, a.geo.n_rfeat, index, e0, n, np, sY,
                                      (REAL *)(smem + lay.off_act[0]), lay.ld[0]);
        }
        for (int k = threadIdx.x; k < n; k += blockDim.x) {
            const int64_t e = GHOST ? a.send_edges[e0 + k] : e0 + k;
            sSrc[k] = staged_sender(a, GHOST ? (int)a.edge_recv[e] : (int)a.edge_send[e]);
            const int i = GHOST ? (int)a.edge_send[e] : (int)a.edge_recv[e];
            sRecv[k] = i | (e0 + k == start[i] ? kFirstEdge : 0);
        }
        for (int k = threadIdx.x; TAB && k < n * P * lay.nsh1; k += blockDim.x)
            sDYw[k] = 0;
        __syncthreads();
        ca.n = n;
        if constexpr (TAB) {
            /* warp = (atom q, task parity), as in the forward kernel (in the ghost pass q is
             * PER_WARP consecutive ghosts); the P parities' dE/dY rows of each edge are summed
             * after the passes, in parity order. Layer 0 has no dE/dh1, only rows per edge, so
             * there an atom's P warps split its edges and each runs every unit (nequix-mp-1's
             * layer 0 has 3 units: split 2:1, one warp waited for the other). */
            const int q = (warp % nbk) * PER_WARP, parity = warp / nbk;
            const bool by_edges = !GHOST && !need_dx;
            if (q < nb) {
                ca.e_first = (int)(max(start[r0 + q], e0) - e0);
                ca.n = (int)(min(start[r0 + min(q + PER_WARP, nb)], e0 + n) - e0);
                if (by_edges) {
                    const int len = ca.n - ca.e_first, first = ca.e_first;
                    ca.e_first = first + (len * parity + P - 1) / P;
                    ca.n = first + (len * (parity + 1) + P - 1) / P;
                }
            } else {
                ca.e_first = ca.n = 0;
            }
            const uint32_t dyw = shared_offset(sDYw + parity * lay.nsh1);
            const int first_unit = by_edges ? 0 : parity, unit_step = by_edges ? 1 : P;
            for (int unit = first_unit; unit < L.n_units && !(a.skip & kSkipColumns);
                 unit += unit_step) {
                const int4 un = L.units[unit], tk = L.utasks[un.x];
                if (un.z >= 0)
                    group_backward_dispatch<REAL>(un.z, ca, L.paths, L.utasks + un.x,
                                                  tk.y + lane, tk.w + lane, lane < tk.z, a.ga,
                                                  a.ga_stride, a.n_local, need_dx || GHOST,
                                                  GHOST, dyw, P * lay.nsh1, dxrows,
                                                  a.dx_stride);
                else
                    column_backward_dispatch<true, REAL>(
                        ca, L.paths[tk.x], tk.y + lane, tk.w + lane, lane < tk.z, a.ga,
                        a.ga_stride, a.n_local, need_dx || GHOST, GHOST, 0, dyw, P * lay.nsh1,
                        dxrows, a.dx_stride);
            }
            ca.e_first = 0;
            ca.n = n;
        }
        if (!TAB && !(a.skip & kSkipHidden))
            radial_mlp_hidden<REAL>(L, smem, lay.off_act, lay.compact ? nullptr : lay.off_pre,
                                    lay.ld, np, a.tf32, sR /* free until the rounds */,
                                    lay.EC * lay.ldr);
        const REAL *hidden = (REAL *)(smem + lay.off_act[K - 1]);
        for (int k = threadIdx.x; !TAB && k < np * lay.ld[K - 1]; k += blockDim.x)
            sDH[k] = 0;
        for (int k = threadIdx.x; !TAB && k < n * kWarps * lay.nsh; k += blockDim.x)
            sDYw[k] = 0;
        for (int rd = 0; !TAB && rd < L.n_rounds; rd++) {
            const int2 round = L.rounds[rd];
            __syncthreads();
            for (int k = threadIdx.x; k < np * lay.ldr; k += blockDim.x)
                sDR[k] = 0;
            /* the last round may hold fewer than kWarps tasks: only their columns */
            const int span = 32 * min(kWarps, L.n_tasks - round.x);
            if (!(a.skip & kSkipRoundGemm))
                block_gemm<REAL>(np, span, L.pad[K - 1], hidden, lay.ld[K - 1],
                                 L.mlp_wp[K - 1] + round.y, L.ld_last, sR, lay.ldr, false, a.tf32);
            __syncthreads();
            const int task = round.x + warp;
            if (task < L.n_tasks && !(a.skip & kSkipColumns)) {
                const int4 tk = L.tasks[task];
                const Path P = L.paths[tk.x];
                column_backward_dispatch<false, REAL>(
                        ca, P, tk.y + lane, tk.w + lane - round.y, lane < tk.z, a.ga,
                        a.ga_stride, a.n_local, need_dx || GHOST, GHOST, shared_offset(sDR),
                        shared_offset(sDYw + warp * lay.nsh), kWarps * lay.nsh, dxrows,
                        a.dx_stride);
            }
            __syncthreads();
            if (!GHOST && !(a.skip & kSkipHiddenGrad))
                block_gemm<REAL>(np, L.pad[K - 1], span, sDR, lay.ldr,
                                 L.mlp_wtp[K - 1] + (int64_t)round.y * L.pad[K - 1],
                                 L.pad[K - 1], sDH, lay.ld[K - 1], true, a.tf32,
                                 sR /* free once the round's columns are done */,
                                 lay.EC * lay.ldr);
        }
        __syncthreads();
        if (!GHOST && TAB) {
            /* dE/dY and dE/dt per edge: the task parities' rows summed in order, added to
             * the edge's row of edge_ggeo */
            const int nf = lay.nsh + 2, total = n * nf;
            double *gg = a.edge_ggeo + e0 * nf;
            for (int base = threadIdx.x; base < total; base += kStageBatch * blockDim.x) {
                double old[kStageBatch] = {}; /* loaded together: several in flight */
#pragma unroll
                for (int j = 0; j < kStageBatch; j++)
                    if (!a.first_ggeo && base + j * blockDim.x < total)
                        old[j] = gg[base + j * blockDim.x];
#pragma unroll
                for (int j = 0; j < kStageBatch; j++) {
                    const int idx = base + j * blockDim.x, k = idx / nf, q = idx - k * nf;
                    if (idx >= total)
                        break;
                    double v = 0.0;
                    if (q < lay.nsh1) {
                        const REAL *row = sDYw + k * P * lay.nsh1 + q;
                        REAL sum = row[0];
#pragma unroll
                        for (int p = 1; p < P; p++)
                            sum += row[p * lay.nsh1];
                        v = (double)sum;
                    }
                    gg[idx] = a.first_ggeo ? v : old[j] + v;
                }
            }
        } else if (!GHOST && !TAB && !(a.skip & kSkipEdgeGrad)) {
        /* dE/dY per edge: the warps' rows summed in warp order (into sY, no longer needed) */
        for (int idx = threadIdx.x; idx < n * lay.nsh; idx += blockDim.x) {
            const int k = idx / lay.nsh, q = idx % lay.nsh;
            REAL s = 0;
            for (int w = 0; w < kWarps; w++)
                s += sDYw[(k * kWarps + w) * lay.nsh + q];
            sY[idx] = s;
        }
        const size_t *off_pre = lay.off_pre;
        if (lay.compact) {
            /* the hidden layers again, now keeping their pre-activations */
            __syncthreads();
            stage_edge_features<REAL>(a.edge_feat, lay.nsh, a.geo.n_rfeat, nullptr, e0, n, np,
                                      nullptr, (REAL *)(smem + lay.off_act_again[0]), lay.ld[0]);
            __syncthreads();
            radial_mlp_hidden<REAL>(L, smem, lay.off_act_again, lay.off_pre_again, lay.ld, np,
                                    a.tf32, sDYw /* folded into sY above */,
                                    lay.EC * kWarps * lay.nsh);
            off_pre = lay.off_pre_again;
        }
        /* MLP hidden layers backward: d act[K-1] -> d basis */
        REAL *cur = sDH;
        int ldc = lay.ld[K - 1];
        /* two scratch matrices in turn (selected, not indexed: an indexed pointer array would
         * live in local memory and turn the GEMM's shared loads into generic ones) */
        REAL *const m0 = (REAL *)(smem + lay.off_m0), *const m1 = (REAL *)(smem + lay.off_m1);
        int which = 0;
        for (int k = K - 2; k >= 0; k--) {
            const REAL *pre = (REAL *)(smem + off_pre[k + 1]);
            const int w = L.size[k + 1];
            __syncthreads();
            for (int idx = threadIdx.x; idx < np * ldc; idx += blockDim.x) {
                const int q = idx % ldc;
                cur[idx] = q < w ? cur[idx] * act_deriv<REAL>(L.mlp_act.kind,
                                                              REAL(L.mlp_act.scale), pre[idx])
                                 : REAL(0);
            }
            __syncthreads();
            REAL *nx = which ? m1 : m0;
            block_gemm<REAL>(np, L.pad[k], L.pad[k + 1], cur, ldc, L.mlp_wtp[k], L.pad[k], nx,
                             lay.ldm, false, a.tf32, sDYw /* folded into sY above */,
                             lay.EC * kWarps * lay.nsh);
            cur = nx;
            ldc = lay.ldm;
            which ^= 1;
        }
        __syncthreads();
        /* dE/dY and dE/d(basis) of each edge, summed over the layers; dE/dr_e follows from
         * them once, after the last backward layer (edge_geometry.cu) */
        const int nf = lay.nsh + a.geo.n_rfeat;
        for (int idx = threadIdx.x; idx < n * nf; idx += blockDim.x) {
            const int k = idx / nf, q = idx - k * nf;
            const double v = q < lay.nsh ? (double)sY[k * lay.nsh + q]
                                         : (double)cur[k * ldc + q - lay.nsh];
            double *gg = a.edge_ggeo + (e0 + k) * nf + q;
            *gg = a.first_ggeo ? v : *gg + v;
        }
        } /* !GHOST */
    }
    __syncthreads();
    if (!need_dx && !GHOST)
        return;
    /* dE/dh1 of the block's atoms; with ghosts the epilogue runs after the reverse exchange */
    REAL *sDx = (REAL *)(smem + lay.off_dx);
    if (GHOST || !a.fused_epilogue) {
        reduce_dxpart<REAL, NB>(L, start, dxrows, a.dx_stride, r0, nb,
                                a.dh1 + (int64_t)r0 * L.in.dim, L.in.dim);
        return;
    }
    reduce_dxpart<REAL, kNB>(L, start, dxrows, a.dx_stride, r0, nb, sDx, L.in.dim);
    __syncthreads();
    backward_epilogue<REAL>(a, lay, smem, r0, nb, sDx, L.in.dim);
}

/* The kernel: the block's slot of the dxpart scratch is taken before its edges and given back
 * after its epilogue. Slots are tried from blockIdx.x on; a block that finds them all taken
 * waits for a running block to finish (there are more slots than blocks that fit on the GPU at
 * once, so it rarely does). Layer 0 computes no dE/dh1 and takes none. */
template <typename REAL, bool GHOST, bool TAB, int NBK>
__global__ void __launch_bounds__(kThreads, 2) layer_backward_kernel(BackwardArgs<REAL> a)
{
    extern __shared__ __align__(32) unsigned char smem[];
    const bool need_dx = GHOST || a.layer > 0;
    int slot = 0;
    if (need_dx) {
        /* told to the block through the first word of shared memory, before the layer uses
         * it (static shared memory would cost the second block per multiprocessor) */
        if (threadIdx.x == 0) {
            const int slots = GHOST ? a.dx_slots_ghost : a.dx_slots;
            int k = blockIdx.x % slots;
            while (atomicCAS(a.dx_busy + k, 0, 1) != 0)
                k = k + 1 == slots ? 0 : k + 1;
            *(int *)smem = k;
        }
        __syncthreads();
        slot = *(const int *)smem;
        __syncthreads();
    }
    REAL *dxrows =
        need_dx ? a.dxpart + (int64_t)slot * (GHOST ? kGhostNB : kNB) * a.dx_stride : nullptr;
    layer_backward_block<REAL, GHOST, TAB, NBK>(a, smem, dxrows);
    if (need_dx) {
        __syncthreads(); /* every read of the slot is done */
        if (threadIdx.x == 0) {
            __threadfence();
            atomicExch(a.dx_busy + slot, 0);
        }
    }
}

template <typename REAL>
__global__ void __launch_bounds__(kThreads) backward_epilogue_kernel(BackwardArgs<REAL> a)
{
    extern __shared__ __align__(32) unsigned char smem[];
    BwdLayout<REAL> lay;
    lay.init(a.L, a.prev, a.geo.lmax, a.EC, a.epi_len, kNB);
    const int r0 = blockIdx.x * kNB;
    const int nb = min(kNB, a.n_local - r0);
    backward_epilogue<REAL>(a, lay, smem, r0, nb, a.dh1 + (int64_t)r0 * a.L.in.dim, a.L.in.dim);
}

template <typename REAL>
size_t backward_smem_bytes(const Layer<REAL> &L, const Layer<REAL> &prev, int lmax, int EC,
                           int epi_len, bool epilogue, int nbk)
{
    BwdLayout<REAL> lay;
    lay.init(L, prev, lmax, EC, epi_len, nbk);
    return lay.bytes(epilogue);
}

template <typename REAL> cudaError_t backward_configure(size_t smem)
{
    const void *kernels[] = {(const void *)layer_backward_kernel<REAL, false, false, kNB>,
                             (const void *)layer_backward_kernel<REAL, true, false, kNB>,
                             (const void *)layer_backward_kernel<REAL, false, true, kNB>,
                             (const void *)layer_backward_kernel<REAL, true, true, kNB>,
                             (const void *)backward_epilogue_kernel<REAL>};
    cudaError_t e = allow_dynamic_smem(kernels, smem);
    if constexpr (sizeof(REAL) == 4) { /* few atoms a block: float32 tables only */
        const void *few[] = {(const void *)layer_backward_kernel<REAL, false, true, 1>,
                             (const void *)layer_backward_kernel<REAL, false, true, 2>};
        if (e == cudaSuccess)
            e = allow_dynamic_smem(few, smem);
    }
    return e;
}

template <typename REAL>
cudaError_t layer_backward_launch(const BackwardArgs<REAL> &a, size_t smem, cudaStream_t stream)
{
    const int nbk = a.L.rtab ? a.nbk : kNB;
    const int blocks = (a.n_local + nbk - 1) / nbk;
    if (blocks == 0)
        return cudaSuccess;
    if (!a.L.rtab)
        layer_backward_kernel<REAL, false, false, kNB><<<blocks, kThreads, smem, stream>>>(a);
    else if (sizeof(REAL) == 4 && nbk == 1)
        layer_backward_kernel<REAL, false, true, few_atoms<REAL>(1)>
            <<<blocks, kThreads, smem, stream>>>(a);
    else if (sizeof(REAL) == 4 && nbk == 2)
        layer_backward_kernel<REAL, false, true, few_atoms<REAL>(2)>
            <<<blocks, kThreads, smem, stream>>>(a);
    else
        layer_backward_kernel<REAL, false, true, kNB><<<blocks, kThreads, smem, stream>>>(a);
    return cudaGetLastError();
}

template <typename REAL>
cudaError_t ghost_sender_launch(const BackwardArgs<REAL> &a, size_t smem, cudaStream_t stream)
{
    const int blocks = (a.n_all - a.n_local + kGhostNB - 1) / kGhostNB;
    if (blocks <= 0)
        return cudaSuccess;
    if (a.L.rtab)
        layer_backward_kernel<REAL, true, true, kNB><<<blocks, kThreads, smem, stream>>>(a);
    else
        layer_backward_kernel<REAL, true, false, kNB><<<blocks, kThreads, smem, stream>>>(a);
    return cudaGetLastError();
}

template <typename REAL>
cudaError_t backward_epilogue_launch(const BackwardArgs<REAL> &a, size_t smem, cudaStream_t stream)
{
    const int blocks = (a.n_local + kNB - 1) / kNB;
    if (blocks == 0)
        return cudaSuccess;
    backward_epilogue_kernel<REAL><<<blocks, kThreads, smem, stream>>>(a);
    return cudaGetLastError();
}

#define FNQ_INSTANTIATE(REAL)                                                                   \
    template size_t backward_smem_bytes<REAL>(const Layer<REAL> &, const Layer<REAL> &, int, int, \
                                              int, bool, int);                                  \
    template cudaError_t backward_configure<REAL>(size_t);                                      \
    template cudaError_t layer_backward_launch<REAL>(const BackwardArgs<REAL> &, size_t,        \
                                                     cudaStream_t);                             \
    template cudaError_t ghost_sender_launch<REAL>(const BackwardArgs<REAL> &, size_t,          \
                                                   cudaStream_t);                               \
    template cudaError_t backward_epilogue_launch<REAL>(const BackwardArgs<REAL> &, size_t,     \
                                                        cudaStream_t);
FNQ_INSTANTIATE(float)
FNQ_INSTANTIATE(double)

} // namespace fnqcu
