/*
 * edge_list.cu: the caller's pairs -> the backend's graph (edge_list.cuh). The vector and the
 * squared distance of a pair are computed with explicit rounding (no fused multiply-add), the
 * same arithmetic as graph.c on the host, so both keep the same pairs and store the same
 * vectors; counts are integer atomics, so nothing depends on the order threads run in.
 */
#include <cub/device/device_radix_sort.cuh>

#include "graph/edge_list.cuh"

namespace fnqcu {

static unsigned blocks_for(int64_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }

/* r = x_send - x_recv + shift, rounded as graph.c rounds it; returns |r|^2 */
__device__ __forceinline__ double pair_vector(const EdgeListArgs &a, int64_t e, int64_t i,
                                              int64_t j, double r[3])
{
    for (int k = 0; k < 3; k++)
        r[k] = __dadd_rn(__dadd_rn(a.pos[3 * j + k], -a.pos[3 * i + k]),
                         a.shift ? a.shift[3 * e + k] : 0.0);
    return __dadd_rn(__dadd_rn(__dmul_rn(r[0], r[0]), __dmul_rn(r[1], r[1])), __dmul_rn(r[2], r[2]));
}

/* the graph's sender: a ghost with an owner folded onto it (graph.h, fnq__sender_of) */
__device__ __forceinline__ int64_t sender_of(const EdgeListArgs &a, int64_t j)
{
    const int64_t owner = a.owner && j >= a.n_local ? a.owner[j - a.n_local] : -1;
    return owner >= 0 ? owner : j;
}

__global__ void edge_list_zero_kernel(EdgeListArgs a)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0)
        *a.first_bad = ~0ull;
    if (i >= a.n_local)
        return;
    a.degree[i] = 0;
    a.from_owned[i] = 0;
    a.sent[i] = 0;
    a.min_d2[i] = ~0ull;
}

__global__ void edge_list_scan_kernel(EdgeListArgs a)
{
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= a.n_in)
        return;
    const int64_t i = a.recv[e], j = a.send[e];
    a.ids[e] = (uint32_t)e;
    a.keys[e] = (uint32_t)a.n_local;
    if (i < 0 || i >= a.n_local || j < 0 || j >= a.n_all) {
        atomicMin(a.first_bad, (unsigned long long)e);
        return;
    }
    double r[3];
    const double d2 = pair_vector(a, e, i, j, r);
    if (!(d2 < a.rc2))
        return;
    a.keys[e] = (uint32_t)i;
    atomicAdd(&a.degree[i], 1);
    const int64_t js = sender_of(a, j);
    if (js < a.n_local) {
        atomicAdd(&a.from_owned[i], 1);
        atomicAdd(&a.sent[js], 1);
    }
    atomicMin(&a.min_d2[i], (unsigned long long)__double_as_longlong(d2));
}

__global__ void edge_list_fill_kernel(EdgeListArgs a, int64_t n_kept)
{
    const int64_t q = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= n_kept)
        return;
    const int64_t e = a.ids_sorted[q], i = a.recv[e], j = a.send[e];
    double r[3];
    pair_vector(a, e, i, j, r);
    a.edge_recv[q] = i;
    a.edge_send[q] = sender_of(a, j);
    for (int k = 0; k < 3; k++)
        a.edge_vec[3 * q + k] = r[k];
}

cudaError_t edge_list_scan_launch(const EdgeListArgs &a, cudaStream_t stream)
{
    edge_list_zero_kernel<<<blocks_for(a.n_local + 1, 256), 256, 0, stream>>>(a);
    if (a.n_in > 0)
        edge_list_scan_kernel<<<blocks_for(a.n_in, 256), 256, 0, stream>>>(a);
    return cudaGetLastError();
}

cudaError_t edge_list_sort_launch(const EdgeListArgs &a, void *tmp, size_t *tmp_bytes,
                                  cudaStream_t stream)
{
    int bits = 1; /* keys run to n_local (dropped pairs sort last) */
    while (bits < 32 && (int64_t(1) << bits) <= a.n_local)
        bits++;
    if (!tmp || a.n_in == 0)
        return tmp ? cudaSuccess
                   : cub::DeviceRadixSort::SortPairs(nullptr, *tmp_bytes, a.keys, a.keys_sorted,
                                                     a.ids, a.ids_sorted, (int64_t)a.n_in, 0,
                                                     bits, stream);
    return cub::DeviceRadixSort::SortPairs(tmp, *tmp_bytes, a.keys, a.keys_sorted, a.ids,
                                           a.ids_sorted, (int64_t)a.n_in, 0, bits, stream);
}

cudaError_t edge_list_fill_launch(const EdgeListArgs &a, int64_t n_kept, cudaStream_t stream)
{
    if (n_kept > 0)
        edge_list_fill_kernel<<<blocks_for(n_kept, 256), 256, 0, stream>>>(a, n_kept);
    return cudaGetLastError();
}

} // namespace fnqcu
