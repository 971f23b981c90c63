/*
 * assemble.cuh: forces, per-atom virials and energies from the per-edge energy gradients, and
 * the deterministic sums of energy and virial (assemble.cu).
 */
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "geometry/pair_term.cuh"

namespace fnqcu {

struct AssembleArgs {
    int64_t n_local, n_all;
    const int64_t *recv_start, *send_start, *send_edges;
    const double *edge_grad, *edge_vec;
    const double *e_atom; /* network output per owned atom */
    const int *species;
    const double *energy_scale, *energy_shift;
    PairEdges pair; /* the pair term's edge energies join their receivers' energies */
    double *forces;      /* [n_all][3] */
    double *atom_virial; /* [n_all][6] */
    double *atom_energy; /* [n_local] */
    double *totals;      /* [7]: energy, virial (Voigt xx yy zz yz xz xy) */
};

cudaError_t assemble_launch(const AssembleArgs &a, cudaStream_t stream);

/* dst[i] += src[i] for i < n: the forces added into a caller's device array
 * (fnq_ctx_compute_graph_repeat_device), in double as a host caller would add them */
cudaError_t add_rows_launch(double *dst, const double *src, int64_t n, cudaStream_t stream);

} // namespace fnqcu
