/*
 * graph.h: turning a configuration into the graph a backend evaluates: edges within the
 * cutoff sorted by receiver, their vectors, a by-sender index, and the input checks that
 * name the offending atoms (NaN coordinates, atoms too close, too many neighbours).
 */
#pragma once

#include "backend/backend.h"

struct fnq_limits {
    double cutoff;
    double min_distance;
    int64_t max_neighbors;
};

/* Arrays behind a struct fnq_graph, grown on demand and reused across evaluations. */
struct fnq_graph_buf {
    struct fnq_graph g;
    int64_t cap_atoms, cap_edges;
    int64_t *recv_start, *send_start, *send_edges, *edge_send, *edge_recv;
    double *edge_vec;
    int64_t *scratch;   /* counts / offsets */
    int64_t *edge_tmp;  /* [cap_edges] the by-sender index's buckets (graph_sender_index.c) */
    unsigned char *keep; /* [cap_pairs] which of a caller's pairs are inside the cutoff */
    int64_t cap_pairs;
};

/* The passes over edges that run in parallel cut them into this many blocks: a fixed count, so
 * what a block holds, and every result, do not depend on the number of threads. */
#define FNQ_GRAPH_BLOCKS 64

static inline int64_t fnq__graph_block_start(int64_t n, int block)
{
    return n * block / FNQ_GRAPH_BLOCKS;
}

void fnq__graph_buf_free(struct fnq_graph_buf *b);

/* send_start and send_edges from edge_send (graph_sender_index.c). */
void fnq__graph_sender_index(struct fnq_graph_buf *b);

/* Positions must be finite; names the first bad atom. */
enum fnq_status fnq__check_positions(int64_t n, const double *pos);

/* Build the periodic neighbour list (cell list; neighbor.c). */
enum fnq_status fnq__graph_from_cell(struct fnq_graph_buf *b, int64_t n, const double *pos,
                                     const int32_t *species, const double *cell,
                                     const int32_t *pbc, const struct fnq_limits *lim);

/* A batch's lists on their way, one pair of buffers per worker: `one` a structure's list,
 * `part` the worker's run of structures. */
struct fnq_batch_parts {
    int n;
    struct fnq_graph_buf *one, *part;
};

void fnq__batch_parts_free(struct fnq_batch_parts *p);

/* A batch of independent structures as one graph (graph_batch.c): structure s is atoms
 * atom_offsets[s]..atom_offsets[s+1]-1, with cell cells[9s..] and pbc[3s..] (either may be NULL
 * as for fnq__graph_from_cell), listed side by side. A failure names the first bad structure
 * (and its atoms as batch indices). */
enum fnq_status fnq__graph_from_batch(struct fnq_graph_buf *b, struct fnq_batch_parts *parts,
                                      int64_t n_structures, const int64_t *atom_offsets,
                                      const double *pos, const int32_t *species,
                                      const double *cells, const int32_t *pbc,
                                      const struct fnq_limits *lim);

/* Take a caller's edge list: keep pairs inside the cutoff, sort by receiver. With ghost_owner
 * (ghost n_local+k is an image of owned atom ghost_owner[k], or -1) every pair from a ghost
 * with an owner becomes a pair from that owner with the ghost's vector, and the ghost's force
 * lands on the owner. Without keep_ghost_rows every ghost has one: the graph has no ghosts
 * (n_all = n_local) and no row exchange is needed. With it (a caller's exchange fills the rows
 * of the ghosts marked -1, those other ranks own) the graph keeps the caller's numbering. */
enum fnq_status fnq__graph_from_edges(struct fnq_graph_buf *b, int64_t n_local, int64_t n_all,
                                      const double *pos, const int32_t *species, int64_t n_edges,
                                      const int64_t *recv, const int64_t *send,
                                      const double *shift, const int64_t *ghost_owner,
                                      int keep_ghost_rows, const struct fnq_limits *lim);

/* The atoms the graph has rows for: the owned ones when every ghost is folded onto an owner
 * (ghost_owner without a caller's exchange), else the caller's owned atoms and ghosts. */
static inline int64_t fnq__graph_rows(int64_t n_local, int64_t n_all, const int64_t *ghost_owner,
                                      int keep_ghost_rows)
{
    return ghost_owner && !keep_ghost_rows ? n_local : n_all;
}

/* The graph's sender of a caller's sender j: a ghost with an owner is folded onto it. */
static inline int64_t fnq__sender_of(int64_t j, int64_t n_local, const int64_t *ghost_owner)
{
    const int64_t owner = ghost_owner && j >= n_local ? ghost_owner[j - n_local] : -1;
    return owner >= 0 ? owner : j;
}

/* internal: reserve space, then finish (sender index, degree, distance checks) */
enum fnq_status fnq__graph_reserve(struct fnq_graph_buf *b, int64_t n_atoms, int64_t n_edges);
/* fnq__graph_reserve for lists that grow an atom or a structure at a time: the edge arrays at
 * least double when they grow, and keep what they hold. */
enum fnq_status fnq__graph_reserve_growing(struct fnq_graph_buf *b, int64_t n_atoms,
                                           int64_t n_edges);
enum fnq_status fnq__graph_finish(struct fnq_graph_buf *b, const struct fnq_limits *lim);
