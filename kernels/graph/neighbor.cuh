/*
 * neighbor.cuh: the neighbour list on the GPU (neighbor.cu). The host prepares the cell grid in
 * O(N) (core/src/graph/cell_grid.h); the device does the O(N x neighbours) search, a warp per atom,
 * in the order of the CPU builder's per-atom visit, so both produce the same edges in the same
 * order.
 */
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "graph/cell_grid.h"
}

namespace fnqcu {

struct NeighborArgs {
    struct fnq_cell_view view; /* device pointers */
    const double *pos;
    int64_t n;
    double rc2;
    int64_t *counts;
    double *min_d2;
    const int64_t *recv_start;
    int64_t *edge_send, *edge_recv;
    double *edge_vec;
};

cudaError_t neighbor_count_launch(const NeighborArgs &a, cudaStream_t stream);
cudaError_t neighbor_fill_launch(const NeighborArgs &a, cudaStream_t stream);

/* By-sender index of the edges: send_edges = edge ids grouped by sender (ascending within a
 * sender), send_start[j] = first position of sender j. tmp/tmp_bytes: CUB scratch (query with
 * tmp = nullptr). keys: n_edges int64 scratch. */
cudaError_t sender_index_launch(const int64_t *edge_send, int64_t n_edges, int64_t n_all,
                                int64_t *keys_sorted, int64_t *ids_in, int64_t *send_edges,
                                int64_t *send_start, void *tmp, size_t *tmp_bytes,
                                cudaStream_t stream);

} // namespace fnqcu
