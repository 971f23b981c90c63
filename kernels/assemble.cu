/*
 * assemble.cu: each atom gathers its own force and per-atom virial from the gradients of the
 * edges it receives and sends (by-sender index, no atomics):
 *   F_i = sum_{e recv i} g_e - sum_{e send i} g_e,  W_i = 1/2 sum over both of w_e,
 *   w_e = -sym(g_e (x) r_e);
 * then one block sums energies and virials in a fixed order (each thread a contiguous range,
 * then a tree), so the totals are bitwise reproducible.
 */
#include "assemble.cuh"

namespace fnqcu {

__device__ __forceinline__ void edge_virial(const double *g, const double *r, double *w)
{
    w[0] = -g[0] * r[0];
    w[1] = -g[1] * r[1];
    w[2] = -g[2] * r[2];
    w[3] = -0.5 * (g[1] * r[2] + g[2] * r[1]);
    w[4] = -0.5 * (g[0] * r[2] + g[2] * r[0]);
    w[5] = -0.5 * (g[0] * r[1] + g[1] * r[0]);
}

__global__ void assemble_kernel(AssembleArgs a)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n_all)
        return;
    double f[3] = {0, 0, 0}, v[6] = {0, 0, 0, 0, 0, 0}, w[6];
    if (i < a.n_local)
        for (int64_t e = a.recv_start[i]; e < a.recv_start[i + 1]; e++) {
            const double *g = a.edge_grad + 3 * e;
            f[0] += g[0], f[1] += g[1], f[2] += g[2];
            edge_virial(g, a.edge_vec + 3 * e, w);
            for (int k = 0; k < 6; k++)
                v[k] += 0.5 * w[k];
        }
    for (int64_t q = a.send_start[i]; q < a.send_start[i + 1]; q++) {
        const int64_t e = a.send_edges[q];
        const double *g = a.edge_grad + 3 * e;
        f[0] -= g[0], f[1] -= g[1], f[2] -= g[2];
        edge_virial(g, a.edge_vec + 3 * e, w);
        for (int k = 0; k < 6; k++)
            v[k] += 0.5 * w[k];
    }
    for (int k = 0; k < 3; k++)
        a.forces[3 * i + k] = f[k];
    for (int k = 0; k < 6; k++)
        a.atom_virial[6 * i + k] = v[k];
    if (i < a.n_local) {
        const int t = a.species[i];
        a.atom_energy[i] = a.energy_scale[t] * a.e_atom[i] + a.energy_shift[t];
    }
}

constexpr int kReduceThreads = 512; /* 512 x 7 doubles of static shared memory */

__global__ void __launch_bounds__(kReduceThreads) reduce_kernel(AssembleArgs a)
{
    __shared__ double red[kReduceThreads][7];
    const int tid = threadIdx.x;
    double s[7] = {0, 0, 0, 0, 0, 0, 0};
    const int64_t chunk_l = (a.n_local + kReduceThreads - 1) / kReduceThreads;
    for (int64_t i = tid * chunk_l; i < (tid + 1) * chunk_l && i < a.n_local; i++)
        s[0] += a.atom_energy[i];
    const int64_t chunk_a = (a.n_all + kReduceThreads - 1) / kReduceThreads;
    for (int64_t i = tid * chunk_a; i < (tid + 1) * chunk_a && i < a.n_all; i++)
        for (int k = 0; k < 6; k++)
            s[1 + k] += a.atom_virial[6 * i + k];
    for (int k = 0; k < 7; k++)
        red[tid][k] = s[k];
    __syncthreads();
    for (int h = kReduceThreads / 2; h > 0; h >>= 1) {
        if (tid < h)
            for (int k = 0; k < 7; k++)
                red[tid][k] += red[tid + h][k];
        __syncthreads();
    }
    if (tid < 7)
        a.totals[tid] = red[0][tid];
}

cudaError_t assemble_launch(const AssembleArgs &a, cudaStream_t stream)
{
    if (a.n_all > 0) {
        const int threads = 128;
        const int64_t blocks = (a.n_all + threads - 1) / threads;
        assemble_kernel<<<(unsigned)blocks, threads, 0, stream>>>(a);
        cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess)
            return err;
    }
    reduce_kernel<<<1, kReduceThreads, 0, stream>>>(a);
    return cudaGetLastError();
}

} // namespace fnqcu
