/*
 * allegro_graph.cu: the Allegro engine's per-edge work around the chunks (allegro_graph.cuh).
 * One thread an edge; every edge's value is written by one thread, so no order to fix.
 */
#include "allegro/allegro_graph.cuh"

namespace fnqcu {
namespace allegro {
namespace {

constexpr int kThreads = 256;

inline unsigned blocks_for(int64_t n) { return (unsigned)((n + kThreads - 1) / kThreads); }

__global__ void gather_active_kernel(int64_t n_active, const int64_t *index,
                                     const double *edge_vec, const int64_t *edge_recv,
                                     const int64_t *edge_send, const int32_t *species,
                                     double *vec, int32_t *ti, int32_t *tj, int32_t *centre)
{
    const int64_t a = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (a >= n_active)
        return;
    const int64_t e = index[a], i = edge_recv[e];
    for (int k = 0; k < 3; k++)
        vec[3 * a + k] = edge_vec[3 * e + k];
    centre[a] = (int32_t)i;
    ti[a] = species[i];
    tj[a] = species[edge_send[e]];
}

__global__ void pair_gradient_kernel(PairEdges pe, int64_t ne, const double *edge_vec,
                                     double *edge_grad)
{
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= ne)
        return;
    double g[3] = {0.0, 0.0, 0.0};
    if (pe.term.on) {
        const double *v = edge_vec + 3 * e;
        const double r = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        double energy, de_dr;
        pair_term_edge(pe.term, pe.species[pe.edge_recv[e]], pe.species[pe.edge_send[e]], r,
                       &energy, &de_dr);
        for (int k = 0; k < 3; k++)
            g[k] = de_dr * v[k] / r; /* as core/src/backend/pair_potential.c */
    }
    for (int k = 0; k < 3; k++)
        edge_grad[3 * e + k] = g[k];
}

__global__ void add_active_kernel(int64_t n_active, const int64_t *index,
                                  const double *active_grad, double *edge_grad)
{
    const int64_t a = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (a >= n_active)
        return;
    const int64_t e = index[a];
    for (int k = 0; k < 3; k++)
        edge_grad[3 * e + k] += active_grad[3 * a + k];
}

} // namespace

cudaError_t gather_active(int64_t n_active, const int64_t *index, const double *edge_vec,
                          const int64_t *edge_recv, const int64_t *edge_send,
                          const int32_t *species, double *vec, int32_t *ti, int32_t *tj,
                          int32_t *centre, cudaStream_t s)
{
    if (n_active == 0) /* a launch of no blocks is an error */
        return cudaSuccess;
    gather_active_kernel<<<blocks_for(n_active), kThreads, 0, s>>>(
        n_active, index, edge_vec, edge_recv, edge_send, species, vec, ti, tj, centre);
    return cudaGetLastError();
}

cudaError_t graph_edge_gradients(const PairEdges &pe, int64_t ne, const double *edge_vec,
                                 int64_t n_active, const int64_t *index,
                                 const double *active_grad, double *edge_grad, cudaStream_t s)
{
    if (ne == 0)
        return cudaSuccess;
    pair_gradient_kernel<<<blocks_for(ne), kThreads, 0, s>>>(pe, ne, edge_vec, edge_grad);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess || n_active == 0)
        return err;
    add_active_kernel<<<blocks_for(n_active), kThreads, 0, s>>>(n_active, index, active_grad,
                                                                edge_grad);
    return cudaGetLastError();
}

} // namespace allegro
} // namespace fnqcu
