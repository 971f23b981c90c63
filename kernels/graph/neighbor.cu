/*
 * neighbor.cu: count and fill passes of the cell-list search (one warp per atom, in the order
 * of the host's visit in core/src/graph/neighbor.c), and the by-sender index through a stable radix sort, so every ordering is
 * deterministic.
 */
#include <cub/device/device_radix_sort.cuh>

#include "graph/neighbor.cuh"

namespace fnqcu {

/* Atoms per block of the search kernels: one warp per atom. */
constexpr int kSearchThreads = 128, kAtomsPerBlock = kSearchThreads / 32;

/*
 * The host's visit (neighbor.c: host_visit) for atom i by a warp, in its order (bin offset, then atom order within the
 * bin), so both builders produce the same list. Lane k takes offset k of a chunk of 32: its bin,
 * image and candidate range, all lanes at once; the ranges are then walked as one list, 32
 * candidates at a time (each lane finds its candidate's offset by a binary search over the
 * ranges' ends), and a ballot gives each neighbour its place. One thread per atom walking the
 * offsets one after another took 0.22 ms per pass at 8,000 Si (~2 warps per SM, a chain of
 * dependent loads and 64-bit divisions per bin). Returns the count (every lane); with
 * out_send, writes the edges; *best: the smallest |r|^2.
 */
__device__ int64_t warp_visit(const fnq_cell_view &gr, const double *pos, int64_t i, double rc2,
                              int64_t *out_send, double *out_vec, double *best)
{
    const unsigned all = 0xffffffffu;
    const int lane = threadIdx.x & 31;
    const unsigned below = (1u << lane) - 1u;
    int64_t b[3];
    fnq__cell_of(&gr, i, b);
    const int64_t n1 = 2 * gr.reach[1] + 1, n2 = 2 * gr.reach[2] + 1;
    const int64_t n_off = (2 * gr.reach[0] + 1) * n1 * n2;
    int64_t count = 0;
    double mine = 1e300;
    for (int64_t k0 = 0; k0 < n_off; k0 += 32) {
        const int64_t k = k0 + lane;
        int64_t start = 0, len = 0, img[3] = {0, 0, 0};
        if (k < n_off) {
            const int64_t o[3] = {k / (n1 * n2) - gr.reach[0], (k / n2) % n1 - gr.reach[1],
                                  k % n2 - gr.reach[2]};
            int64_t bin;
            if (fnq__cell_offset(&gr, b, o, &bin, img)) {
                start = gr.bin_start[bin];
                len = gr.bin_start[bin + 1] - start;
            }
        }
        int64_t end = len; /* the end of this lane's range in the chunk's list */
        for (int d = 1; d < 32; d <<= 1) {
            const int64_t v = __shfl_up_sync(all, end, d);
            if (lane >= d)
                end += v;
        }
        const int64_t total = __shfl_sync(all, end, 31), first = start - (end - len);
        for (int64_t c0 = 0; c0 < total; c0 += 32) {
            const int64_t c = c0 + lane;
            int s = 0; /* the lane whose range holds c: the number of ranges ending at or before c */
            for (int step = 16; step > 0; step >>= 1)
                if (__shfl_sync(all, end, s + step - 1) <= c)
                    s += step;
            const int64_t q = __shfl_sync(all, first, s) + c;
            const int64_t simg[3] = {__shfl_sync(all, img[0], s), __shfl_sync(all, img[1], s),
                                     __shfl_sync(all, img[2], s)};
            int64_t j = -1;
            double r[3], d2 = -1.0;
            if (c < total) {
                j = gr.bin_atoms[q];
                d2 = fnq__cell_pair(&gr, pos, i, j, simg, r);
            }
            const bool hit = d2 >= 0.0 && d2 < rc2;
            const unsigned mask = __ballot_sync(all, hit);
            if (hit) {
                mine = fmin(mine, d2);
                if (out_send) {
                    const int64_t at = count + __popc(mask & below);
                    out_send[at] = j;
                    out_vec[3 * at + 0] = r[0];
                    out_vec[3 * at + 1] = r[1];
                    out_vec[3 * at + 2] = r[2];
                }
            }
            count += __popc(mask);
        }
    }
    for (int d = 16; d > 0; d >>= 1)
        mine = fmin(mine, __shfl_xor_sync(all, mine, d));
    *best = mine;
    return count;
}

__global__ void __launch_bounds__(kSearchThreads) neighbor_count_kernel(NeighborArgs a)
{
    const int64_t i = (int64_t)blockIdx.x * kAtomsPerBlock + threadIdx.x / 32;
    if (i >= a.n) /* the whole warp */
        return;
    double best;
    const int64_t c = warp_visit(a.view, a.pos, i, a.rc2, nullptr, nullptr, &best);
    if ((threadIdx.x & 31) == 0) {
        a.counts[i] = c;
        a.min_d2[i] = best;
    }
}

__global__ void __launch_bounds__(kSearchThreads) neighbor_fill_kernel(NeighborArgs a)
{
    const int64_t i = (int64_t)blockIdx.x * kAtomsPerBlock + threadIdx.x / 32;
    if (i >= a.n)
        return;
    const int64_t e0 = a.recv_start[i];
    double best;
    const int64_t k = warp_visit(a.view, a.pos, i, a.rc2, a.edge_send + e0, a.edge_vec + 3 * e0, &best);
    for (int64_t q = threadIdx.x & 31; q < k; q += 32)
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

static unsigned blocks_for(int64_t n, int per_block) { return (unsigned)((n + per_block - 1) / per_block); }

cudaError_t neighbor_count_launch(const NeighborArgs &a, cudaStream_t stream)
{
    if (a.n == 0)
        return cudaSuccess;
    neighbor_count_kernel<<<blocks_for(a.n, kAtomsPerBlock), kSearchThreads, 0, stream>>>(a);
    return cudaGetLastError();
}

cudaError_t neighbor_fill_launch(const NeighborArgs &a, cudaStream_t stream)
{
    if (a.n == 0)
        return cudaSuccess;
    neighbor_fill_kernel<<<blocks_for(a.n, kAtomsPerBlock), kSearchThreads, 0, stream>>>(a);
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
