/*
 * node_gemm.cuh: the node-wise work of a layer over all of its atoms at once (node_gemm.cu),
 * instead of in the layer kernels' epilogues on 4 atoms per block. The e3nn linears become
 * GEMMs whose rows are (atom, m) and whose columns are channels, on 128 x 32 (or 64) tiles in
 * shared memory (every weight read once per 128 rows, not once per 4 atoms); the norm and the
 * gate stay per atom in a small kernel between them. Forward, per layer but the last:
 *   y = linear_2(A) + self_connection(h)   (one GEMM launch)
 *   h' = gate(norm(y)) (+ h)               (node kernel)
 *   h1 = linear_1'(h') s                   (one GEMM launch, the next layer's sender rows)
 * Backward, per layer l > 0 (the node backward of layer l - 1):
 *   g = gpart + linear_1^T(dh1) s          (one GEMM launch, in place in gpart)
 *   gy = norm^T(gate^T(g))                 (node kernel, over y of layer l - 1)
 *   dE/dA = linear_2^T(gy); gpart' = self_connection^T(gy) (+ g)   (one GEMM launch)
 * Every output element has one owner and a fixed order of sums: reproducible results.
 */
#pragma once

#include "nequip/layer_backward.cuh"
#include "nequip/layer_forward.cuh"

namespace fnqcu {

/* Whether some node linear has weights per species (NequIP's self-connection): then the GEMMs
 * take the owned atoms in species order (species_order.cuh), else in atom order. */
template <typename REAL> bool node_linears_per_species(const DeviceModel<REAL> &dm);

/* Once per context, after the model's sizes are known (epi_len: its longest node vector): the
 * node kernels' shared memory, set here rather than at every launch (graphs are recorded
 * nearly every MD step). */
template <typename REAL> cudaError_t node_gemm_configure(int epi_len);

/* The node forward of layer a.layer (not the last), after its layer kernel wrote A. order: the
 * owned atoms in species order (species_order.cuh) where node_linears_per_species, else
 * nullptr. */
template <typename REAL>
cudaError_t node_forward_launch(const ForwardArgs<REAL> &a, const int *order,
                                cudaStream_t stream, int *launches);

/* The node backward that ends layer b.layer >= 1, once dh1 holds the owned atoms' rows. */
template <typename REAL>
cudaError_t node_backward_launch(const BackwardArgs<REAL> &b, const int *order,
                                 cudaStream_t stream, int *launches);

} // namespace fnqcu
