/*
 * edge_geometry.cuh: the per-edge geometry of one evaluation, computed once instead of in every
 * layer kernel (edge_geometry.cu).
 *
 *   before the layers: feat[e] = (Y(r_e / |r_e|), basis(|r_e|)) in REAL, nsh + n_rfeat values
 *     per edge, read by every forward and backward layer kernel (radial table mode: (k, t)
 *     with |r_e| = (k + t) h instead of the basis);
 *   the backward layers sum dE/dY and dE/d(basis) (table mode: dE/dt) of each edge into
 *     ggeo[e] (double, same row layout), the first one to run writing instead of adding;
 *   after the layers: g_e = dE/dr_e from ggeo through Y's and the basis' derivatives, plus
 *     the model's pair term (pair_term.cuh).
 * Y and the basis are the same functions of r_e in every layer, so the chain rule through them
 * is needed once per edge and evaluation, not once per layer.
 */
#pragma once

#include "nequip/model_dev.cuh"

namespace fnqcu {

/* The edge count is read on the device (*n_edges, the receivers' last start) and the launch
 * covers n_launch >= it: a recorded CUDA graph then serves every step whose edges still fit,
 * in MD nearly every step between two neighbour-list builds (cuda_run.cu). */
template <typename REAL>
cudaError_t edge_features_launch(const Geometry &g, const double *edge_vec,
                                 const int64_t *n_edges, int64_t n_launch, REAL *feat,
                                 cudaStream_t stream);

/* pe: the model's pair term, whose dE/dr joins each edge's gradient (pair_term.cuh) */
cudaError_t edge_grad_launch(const Geometry &g, const double *edge_vec, const int64_t *n_edges,
                             int64_t n_launch, const double *ggeo, const PairEdges &pe,
                             double *edge_grad, cudaStream_t stream);

} // namespace fnqcu
