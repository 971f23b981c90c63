/*
 * layer_forward.cuh: the fused forward kernel of one interaction layer (layer_forward.cu).
 */
#pragma once

#include "nequip/model_dev.cuh"
#include "nequip/node_ops.cuh"

namespace fnqcu {

template <typename REAL> struct ForwardArgs {
    Layer<REAL> L;    /* this layer */
    Layer<REAL> next; /* the next layer (its linear_1 and sender scale), unless last */
    Geometry geo;
    int layer, last, n_local;
    int nbk; /* atoms per block: kNB, or fewer for few atoms (table mode, atoms_per_block) */
    int node_split; /* 1: write A and stop; node_gemm.cu does the node work */
    /* graph: edges sorted by receiver */
    const int64_t *recv_start, *edge_send, *edge_recv;
    const int *species;
    const REAL *edge_feat; /* [n_edges][nsh + n_basis]: Y and radial basis (edge_geometry.cu) */
    /* inputs */
    const REAL *h1;       /* [n_all][L.in.tile_dim] sender features, tiled (layers >= 1) */
    const REAL *h1_table; /* [n_species][L.in.tile_dim] sender features of layer 0 (tiled) */
    const REAL *hin;      /* [n_local][W] layer input (layers >= 1) */
    const REAL *embed;    /* [n_species][L.in.dim] layer-0 input */
    int W;                /* row stride of hin, hout, gpart_out */
    int epi_len;          /* length of the epilogue scratch vectors */
    REAL *A;              /* [n_local][a_stride] messages (scratch) */
    int a_stride;
    /* outputs */
    REAL *hout, *h1_next; /* h1_next: [n_all][next in.tile_dim], tiled */
    REAL *y_save, *rho_save;
    /* last layer only */
    int n_readout;
    Linear<REAL> readout[4];
    Irreps readout_irreps[5];
    double *e_atom;
    const REAL *grad_top; /* [n_species][L.out.dim] */
    REAL *ga_out; /* [n_local + 1][ga_stride] dE/dA, tiled (the last row stays zero) */
    int ga_stride;
    REAL *gpart_out;
    int EC;
    int tf32; /* tensor cores (3xTF32) for the radial-MLP GEMMs, float only */
    int skip; /* measurement only (FNQ_SKIP, bench/NOTES.md): stages left out, kSkip* bits */
};

/* The atomic energies of the block's atoms r0 .. r0+nb (species t) through the readout linears
 * from h (rows h_len apart), scratch t1 and t2 (rows as long as the widest readout irreps). */
template <typename REAL>
__device__ void readout_energies(const ForwardArgs<REAL> &a, const int *t, int nb, int r0,
                                 const REAL *h, int h_len, REAL *t1, REAL *t2)
{
    const REAL *cur = h;
    int cur_len = h_len;
    for (int r = 0; r < a.n_readout; r++) {
        REAL *nx = (r & 1) ? t2 : t1;
        const int len = a.readout_irreps[r + 1].dim;
        linear_fwd<REAL, kNB>(a.readout[r], a.readout_irreps[r], a.readout_irreps[r + 1], t, nb,
                              cur, cur_len, nx, len, false);
        __syncthreads();
        cur = nx;
        cur_len = len;
    }
    if (threadIdx.x < nb)
        a.e_atom[r0 + threadIdx.x] = (double)cur[threadIdx.x * cur_len];
    __syncthreads();
}

/* Blocks per multiprocessor a forward kernel is built for. Without the node epilogue (the node
 * GEMMs do it) the float32 table-mode kernel needs little shared memory and runs three: 80
 * registers, a few spills, and more warps to hide its gathers' latency (bench/NOTES.md v18);
 * the others run two (128 registers). */
template <typename REAL> constexpr int forward_blocks_per_sm(bool table, bool split)
{
    return sizeof(REAL) == 4 && table && split ? 3 : 2;
}

/* epilogue: the node epilogue runs in the kernel (no node GEMMs), so its scratch is counted */
template <typename REAL>
size_t forward_smem_bytes(const Layer<REAL> &L, int lmax, int EC, int epi_len, bool epilogue);
template <typename REAL> cudaError_t forward_configure(size_t smem);
template <typename REAL>
cudaError_t layer_forward_launch(const ForwardArgs<REAL> &a, size_t smem, cudaStream_t stream);

} // namespace fnqcu
