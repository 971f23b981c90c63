/*
 * layer_backward.cuh: the fused backward kernel of one interaction layer (layer_backward.cu),
 * the kernel for ghost senders, and the stand-alone node epilogue used when ghost rows must be
 * exchanged between the edge pass and the epilogue.
 */
#pragma once

#include "model_dev.cuh"

namespace fnqcu {

template <typename REAL> struct BackwardArgs {
    Layer<REAL> L;    /* this layer */
    Layer<REAL> prev; /* the layer below (node ops of the epilogue), when layer > 0 */
    Geometry geo;
    int layer;
    int n_local;
    int fused_epilogue; /* 1: finish the atom here; 0: write dh1 and stop (ghosts present) */
    /* graph */
    const int64_t *recv_start, *edge_send;
    const int *species;
    const double *edge_vec;
    const int64_t *send_start, *send_edges, *edge_recv; /* ghost kernel */
    /* layer inputs saved by the forward pass */
    const REAL *h1;       /* [n_all][L.in.dim] */
    const REAL *h1_table; /* layer 0 */
    const REAL *ga;       /* [n_local][ga_stride] dE/dA of this layer */
    int ga_stride;
    /* outputs */
    double *edge_grad; /* [n_edges][3], accumulated over layers */
    REAL *dh1;         /* [n_all][L.in.dim] dE/dh1 (written when not fused, and by ghosts) */
    /* epilogue: dE/d(layer input) -> node backward of the layer below */
    const REAL *gpart_in; /* [n_local][W] self-connection and resnet part of dE/d(input) */
    const REAL *y_prev, *rho_prev;
    REAL *ga_out;   /* dE/dA of the layer below */
    REAL *gpart_out;
    int W, epi_len;
    int EC, TC;
};

template <typename REAL>
size_t backward_smem_bytes(const Layer<REAL> &L, int lmax, int EC, int TC, int epi_len);
template <typename REAL>
size_t ghost_smem_bytes(const Layer<REAL> &L, int lmax, int EC, int TC);
template <typename REAL> size_t epilogue_smem_bytes(int epi_len);

template <typename REAL>
cudaError_t layer_backward_launch(const BackwardArgs<REAL> &a, int n_blocks, size_t smem,
                                  cudaStream_t stream);
/* dE/dh1 of ghost atoms [n_local, n_all) over the edges they send */
template <typename REAL>
cudaError_t ghost_sender_launch(const BackwardArgs<REAL> &a, int n_local, int n_all, size_t smem,
                                cudaStream_t stream);
/* epilogue for owned atoms from dh1 in global memory */
template <typename REAL>
cudaError_t backward_epilogue_launch(const BackwardArgs<REAL> &a, int n_blocks, size_t smem,
                                     cudaStream_t stream);

} // namespace fnqcu
