/*
 * assemble.cu: each atom gathers its own force and per-atom virial from the gradients of the
 * edges it receives and sends (by-sender index, no atomics):
 *   F_i = sum_{e recv i} g_e - sum_{e send i} g_e,  W_i = 1/2 sum over both of w_e,
 *   w_e = -sym(g_e (x) r_e);
 * its energy: the network's, scaled and shifted, plus the pair term of the edges it receives;
 * then one block sums energies and virials in a fixed order (each thread every 512th atom,
 * then a tree), so the totals are bitwise reproducible.
 */
#include "graph/assemble.cuh"

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

constexpr int kAssembleThreads = 128, kAtomsPerBlock = kAssembleThreads / 32;

/* one warp per atom: the lanes take every 32nd of its edges and a butterfly sums their parts
 * (a fixed order: reproducible); a thread per atom left ~2 warps per SM at 8,000 atoms, each
 * walking ~90 edges one dependent load after another */
__global__ void __launch_bounds__(kAssembleThreads) assemble_kernel(AssembleArgs a)
{
    const int64_t i = (int64_t)blockIdx.x * kAtomsPerBlock + threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    if (i >= a.n_all) /* the whole warp */
        return;
    /* force, virial, then the pair term's energy */
    double s[10] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, w[6];
    if (i < a.n_local)
        for (int64_t e = a.recv_start[i] + lane; e < a.recv_start[i + 1]; e += 32) {
            const double *g = a.edge_grad + 3 * e, *r = a.edge_vec + 3 * e;
            s[0] += g[0], s[1] += g[1], s[2] += g[2];
            edge_virial(g, r, w);
            for (int k = 0; k < 6; k++)
                s[3 + k] += 0.5 * w[k];
            if (a.pair.term.on) {
                double e_pair, de_dr;
                pair_term_edge(a.pair.term, a.species[i], a.species[a.pair.edge_send[e]],
                               sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]), &e_pair, &de_dr);
                s[9] += e_pair;
            }
        }
    for (int64_t q = a.send_start[i] + lane; q < a.send_start[i + 1]; q += 32) {
        const int64_t e = a.send_edges[q];
        const double *g = a.edge_grad + 3 * e;
        s[0] -= g[0], s[1] -= g[1], s[2] -= g[2];
        edge_virial(g, a.edge_vec + 3 * e, w);
        for (int k = 0; k < 6; k++)
            s[3 + k] += 0.5 * w[k];
    }
    for (int k = 0; k < 10; k++)
        for (int off = 16; off > 0; off >>= 1)
            s[k] += __shfl_xor_sync(0xffffffffu, s[k], off);
    if (lane < 3)
        a.forces[3 * i + lane] = s[lane];
    else if (lane < 9)
        a.atom_virial[6 * i + lane - 3] = s[lane];
    else if (lane == 9 && i < a.n_local) {
        const int t = a.species[i];
        a.atom_energy[i] = a.energy_scale[t] * a.e_atom[i] + a.energy_shift[t] + s[9];
    }
}

constexpr int kReduceThreads = 512; /* 512 x 7 doubles of static shared memory */

__global__ void __launch_bounds__(kReduceThreads) reduce_kernel(AssembleArgs a)
{
    __shared__ double red[kReduceThreads][7];
    const int tid = threadIdx.x;
    double s[7] = {0, 0, 0, 0, 0, 0, 0};
    /* each thread every 512th atom (coalesced loads) */
    for (int64_t i = tid; i < a.n_local; i += kReduceThreads)
        s[0] += a.atom_energy[i];
    for (int64_t i = tid; i < a.n_all; i += kReduceThreads)
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
        const int64_t blocks = (a.n_all + kAtomsPerBlock - 1) / kAtomsPerBlock;
        assemble_kernel<<<(unsigned)blocks, kAssembleThreads, 0, stream>>>(a);
        cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess)
            return err;
    }
    reduce_kernel<<<1, kReduceThreads, 0, stream>>>(a);
    return cudaGetLastError();
}

__global__ void add_rows_kernel(double *dst, const double *src, int64_t n)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        dst[i] += src[i];
}

cudaError_t add_rows_launch(double *dst, const double *src, int64_t n, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    const int threads = 256;
    add_rows_kernel<<<(unsigned)((n + threads - 1) / threads), threads, 0, stream>>>(dst, src, n);
    return cudaGetLastError();
}

} // namespace fnqcu
