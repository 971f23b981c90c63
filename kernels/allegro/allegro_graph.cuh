/*
 * allegro_graph.cuh: the Allegro engine's structure on the GPU, around the chunks (allegro_graph.cu).
 * The host uploads the whole graph and the list of active edges (core/src/allegro/allegro_edges.c); the
 * active edges' vectors, types and centres are gathered here; after the chunks, every graph
 * edge's gradient is the pair term's plus, on an active edge, the network's, and assemble.cu
 * turns them into forces, virials and energies as for a NequIP model.
 */
#pragma once

#include <stdint.h>

#include "geometry/pair_term.cuh"

namespace fnqcu {
namespace allegro {

/* Active edge a is graph edge index[a]: vec[a] = edge_vec[index[a]], its centre edge_recv[.],
 * ti / tj the centre's and the neighbour's species */
cudaError_t gather_active(int64_t n_active, const int64_t *index, const double *edge_vec,
                          const int64_t *edge_recv, const int64_t *edge_send,
                          const int32_t *species, double *vec, int32_t *ti, int32_t *tj,
                          int32_t *centre, cudaStream_t s);

/* edge_grad[e] = the pair term's dE/dr_e on each of the graph's ne edges (zero without a pair
 * term), then active_grad[a] added at graph edge index[a] */
cudaError_t graph_edge_gradients(const PairEdges &pe, int64_t ne, const double *edge_vec,
                                 int64_t n_active, const int64_t *index,
                                 const double *active_grad, double *edge_grad, cudaStream_t s);

} // namespace allegro
} // namespace fnqcu
