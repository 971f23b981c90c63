/*
 * layer_backward.cuh: the fused backward kernel of one interaction layer, its ghost-sender mode,
 * and the stand-alone node epilogue used when ghost rows must be exchanged between the edge pass
 * and the epilogue (layer_backward.cu).
 */
#pragma once

#include "nequip/model_dev.cuh"

namespace fnqcu {

/* The ghost-sender pass: a ghost sends few edges (a weak-scaling domain's ghosts ~4 on
 * average, a quarter of them none, against an owned atom's ~46), so each of a block's warps
 * walks the edges of kGhostsPerWarp consecutive ghosts, not of one: a walk's setup and its
 * latency are paid per ghost group, not per ghost (bench/NOTES.md, "The ghost pass"). */
constexpr int kGhostsPerWarp = 4;
constexpr int kGhostNB = kNB * kGhostsPerWarp; /* ghosts per block of that pass */

template <typename REAL> struct BackwardArgs {
    Layer<REAL> L;    /* this layer */
    Layer<REAL> prev; /* the layer below (node ops of the epilogue), when layer > 0 */
    Geometry geo;
    int layer, n_local, n_all;
    int nbk; /* owned atoms per block: kNB, or fewer for few atoms (table mode, atoms_per_block) */
    int fused_epilogue; /* 1: finish the atoms here; 0: write dh1 and stop (ghosts present) */
    /* graph */
    const int64_t *recv_start, *edge_send, *edge_recv;
    const int64_t *send_start, *send_edges;
    const int *species;
    const REAL *edge_feat; /* [n_edges][nsh + n_basis]: Y and radial basis (edge_geometry.cu) */
    /* saved by the forward pass */
    const REAL *h1;       /* [n_all][L.in.tile_dim], tiled (model_dev.cuh) */
    const REAL *h1_table; /* layer 0 */
    /* [n_local + 1][ga_stride] dE/dA of this layer, tiled; row n_local is zeros (read for
     * edges without a reverse edge) */
    const REAL *ga;
    int ga_stride;
    /* outputs and scratch */
    double *edge_ggeo; /* [n_edges][nsh + n_basis]: dE/dY, dE/d(basis), summed over layers */
    int first_ggeo;    /* the first backward layer writes edge_ggeo instead of adding */
    /* per-path sender-feature gradients of a block's atoms, [kNB][dx_stride] per slot
     * ([kGhostNB][dx_stride] in the ghost-sender pass): a block holds one of dx_slots slots
     * while it runs (dx_busy[slot] = 1; dx_slots_ghost in the ghost-sender pass), so the
     * scratch is sized by the blocks that can run at once, not by the atoms (bench/NOTES.md,
     * memory) */
    REAL *dxpart;
    int dx_stride;
    int *dx_busy;
    int dx_slots, dx_slots_ghost;
    REAL *dh1;         /* [n_all][L.in.dim] dE/dh1 (when not fused, and for ghosts) */
    /* epilogue: dE/d(layer input) -> node backward of the layer below */
    const REAL *gpart_in; /* [n_local][W] self-connection and resnet part of dE/d(input) */
    const REAL *y_prev, *rho_prev;
    REAL *ga_out; /* dE/dA of the layer below (as ga) */
    REAL *gpart_out;
    int W, epi_len;
    int EC;
    int tf32; /* tensor cores (3xTF32) for the radial-MLP GEMMs, float only */
    int skip; /* measurement only (FNQ_SKIP, bench/NOTES.md): stages left out, kSkip* bits */
};

/* epilogue: the node backward runs in these kernels (no node GEMMs), so its scratch is counted;
 * nbk: owned atoms per block (table mode keeps a row of dE/dY per edge and warp of an atom) */
template <typename REAL>
size_t backward_smem_bytes(const Layer<REAL> &L, const Layer<REAL> &prev, int lmax, int EC,
                           int epi_len, bool epilogue, int nbk);
template <typename REAL> cudaError_t backward_configure(size_t smem);
template <typename REAL>
cudaError_t layer_backward_launch(const BackwardArgs<REAL> &a, size_t smem, cudaStream_t stream);
/* dE/dh1 of ghost atoms [n_local, n_all) over the edges they send */
template <typename REAL>
cudaError_t ghost_sender_launch(const BackwardArgs<REAL> &a, size_t smem, cudaStream_t stream);
/* epilogue for owned atoms from dh1 in global memory */
template <typename REAL>
cudaError_t backward_epilogue_launch(const BackwardArgs<REAL> &a, size_t smem, cudaStream_t stream);

} // namespace fnqcu
