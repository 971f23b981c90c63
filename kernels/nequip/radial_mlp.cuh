/*
 * radial_mlp.cuh: the radial MLP's hidden layers for one super-chunk of staged edges, shared by
 * the forward and backward layer kernels. The last layer is not here: it runs per round of
 * columns, inside each kernel's own loop.
 */
#pragma once

#include "gemm/block_gemm.cuh"
#include "runtime/common.cuh"
#include "nequip/model_dev.cuh"

namespace fnqcu {

/* act[k+1] = activation(act[k] . W_k) for k < n_mlp - 1 over np edge rows (act[0]: the
 * radial basis). pre (may be null): where the pre-activations of layer k+1 are kept, for the
 * backward pass; without it they are activated in place. Columns past a layer's width are
 * zeroed, so the next GEMM sees zero padding. scratch: shared memory free at this point, for
 * split-K. Ends with a barrier. */
template <typename REAL>
__device__ void radial_mlp_hidden(const Layer<REAL> &L, unsigned char *smem,
                                  const size_t *off_act, const size_t *off_pre, const int *ld,
                                  int np, bool tf32, REAL *scratch, int scratch_len)
{
    for (int k = 0; k + 1 < L.n_mlp; k++) {
        REAL *in = (REAL *)(smem + off_act[k]), *out = (REAL *)(smem + off_act[k + 1]);
        REAL *pre = off_pre ? (REAL *)(smem + off_pre[k + 1]) : out;
        block_gemm<REAL>(np, L.pad[k + 1], L.pad[k], in, ld[k], L.mlp_wp[k], L.pad[k + 1], pre,
                         ld[k + 1], false, tf32, scratch, scratch_len);
        __syncthreads();
        const int w = L.size[k + 1];
        for (int idx = threadIdx.x; idx < np * ld[k + 1]; idx += blockDim.x) {
            const int q = idx % ld[k + 1];
            out[idx] = q < w ? act_apply<REAL>(L.mlp_act.kind, REAL(L.mlp_act.scale), pre[idx])
                             : REAL(0);
        }
        __syncthreads();
    }
}

} // namespace fnqcu
