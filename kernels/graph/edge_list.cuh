/*
 * edge_list.cuh: the caller's neighbour list (LAMMPS, compute_graph) turned into the backend's
 * graph on the GPU (edge_list.cu), so that a list of millions of pairs is not sorted and
 * indexed on the host. The result is the graph core/src/graph/graph.c builds: pairs inside the
 * cutoff, sorted by receiver in the caller's order within a receiver (a stable sort), the
 * same edge vectors to the bit, ghosts folded onto their owners alike. The host reads back per-atom counts to apply the limits; on a
 * violation it lets graph.c find the pair and word the message.
 */
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace fnqcu {

struct EdgeListArgs {
    int64_t n_local, n_all, n_in; /* owned atoms, with ghosts, the caller's pairs */
    const double *pos;            /* [n_all][3] */
    const int64_t *recv, *send;   /* [n_in] the caller's pairs */
    const double *shift;          /* [n_in][3] or nullptr */
    const int64_t *owner;         /* [n_all - n_local]: fold ghost senders onto owners, or nullptr */
    double rc2;
    /* scan: per pair its sort key (receiver, or n_local for a pair dropped) and its index */
    uint32_t *keys, *ids, *keys_sorted, *ids_sorted;
    /* per owned atom: kept pairs received, of them from owned senders, kept pairs sent, and the
     * smallest squared distance received (bits of a non-negative double: ordered as integers) */
    int32_t *degree, *from_owned, *sent;
    unsigned long long *min_d2;
    unsigned long long *first_bad; /* first pair with an index out of range, or ~0 */
    /* fill: the graph's edges */
    int64_t *edge_recv, *edge_send;
    double *edge_vec;
};

/* Zero the per-atom counters and mark each pair (keep or drop). */
cudaError_t edge_list_scan_launch(const EdgeListArgs &a, cudaStream_t stream);
/* Stable sort of the pairs by receiver (tmp == nullptr: size query into *tmp_bytes), then
 * write the n_kept edges in that order. */
cudaError_t edge_list_sort_launch(const EdgeListArgs &a, void *tmp, size_t *tmp_bytes,
                                  cudaStream_t stream);
cudaError_t edge_list_fill_launch(const EdgeListArgs &a, int64_t n_kept, cudaStream_t stream);

} // namespace fnqcu
