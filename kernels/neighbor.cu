/*
 * neighbor.cu: count and fill passes of the cell-list search (one thread per atom, the shared
 * fnq__cell_visit), and the by-sender index through a stable radix sort, so every ordering is
 * deterministic.
 */
#include <cub/device/device_radix_sort.cuh>

#include "neighbor.cuh"

namespace fnqcu {

__global__ void neighbor_count_kernel(NeighborArgs a)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n)
        return;
    double best;
    a.counts[i] = fnq__cell_visit(&a.view, a.pos, i, a.rc2, nullptr, nullptr, &best);
    a.min_d2[i] = best;
}

__global__ void neighbor_fill_kernel(NeighborArgs a)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n)
        return;
    const int64_t e0 = a.recv_start[i];
    const int64_t k =
        fnq__cell_visit(&a.view, a.pos, i, a.rc2, a.edge_send + e0, a.edge_vec + 3 * e0, nullptr);
    for (int64_t q = 0; q < k; q++)
        a.edge_recv[e0 + q] = i;
}

__global__ void iota_kernel(int64_t *v, int64_t n)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] = i;
}

__global__ void sender_start_kernel(const int64_t *keys, int64_t n_edges, int64_t n_all,
                                    int64_t *send_start)
{
    const int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j > n_all)
        return;
    int64_t lo = 0, hi = n_edges; /* first position with key >= j */
    while (lo < hi) {
        const int64_t mid = (lo + hi) / 2;
        if (keys[mid] < j)
            lo = mid + 1;
        else
            hi = mid;
    }
    send_start[j] = lo;
}

static unsigned blocks_for(int64_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }

cudaError_t neighbor_count_launch(const NeighborArgs &a, cudaStream_t stream)
{
    if (a.n == 0)
        return cudaSuccess;
    neighbor_count_kernel<<<blocks_for(a.n, 128), 128, 0, stream>>>(a);
    return cudaGetLastError();
}

cudaError_t neighbor_fill_launch(const NeighborArgs &a, cudaStream_t stream)
{
    if (a.n == 0)
        return cudaSuccess;
    neighbor_fill_kernel<<<blocks_for(a.n, 128), 128, 0, stream>>>(a);
    return cudaGetLastError();
}

cudaError_t sender_index_launch(const int64_t *edge_send, int64_t n_edges, int64_t n_all,
                                int64_t *keys_sorted, int64_t *ids_in, int64_t *send_edges,
                                int64_t *send_start, void *tmp, size_t *tmp_bytes,
                                cudaStream_t stream)
{
    int bits = 1;
    while (bits < 63 && (int64_t(1) << bits) <= n_all)
        bits++;
    /* keys are non-negative atom indices: sort them as unsigned */
    const uint64_t *kin = reinterpret_cast<const uint64_t *>(edge_send);
    uint64_t *kout = reinterpret_cast<uint64_t *>(keys_sorted);
    if (!tmp) /* size query */
        return cub::DeviceRadixSort::SortPairs(nullptr, *tmp_bytes, kin, kout, ids_in, send_edges,
                                               n_edges, 0, bits, stream);
    if (n_edges > 0) {
        iota_kernel<<<blocks_for(n_edges, 256), 256, 0, stream>>>(ids_in, n_edges);
        cudaError_t err = cub::DeviceRadixSort::SortPairs(tmp, *tmp_bytes, kin, kout, ids_in,
                                                          send_edges, n_edges, 0, bits, stream);
        if (err != cudaSuccess)
            return err;
    }
    sender_start_kernel<<<blocks_for(n_all + 1, 256), 256, 0, stream>>>(keys_sorted, n_edges,
                                                                         n_all, send_start);
    return cudaGetLastError();
}

} // namespace fnqcu
