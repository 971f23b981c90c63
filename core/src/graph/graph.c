/*
 * graph.c: graph buffers, the caller's-edge-list path, and the checks shared by both paths.
 */
#include "graph/graph.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/status.h"

void fnq__graph_buf_free(struct fnq_graph_buf *b)
{
    free(b->recv_start), free(b->send_start), free(b->send_edges);
    free(b->edge_send), free(b->edge_recv), free(b->edge_vec), free(b->scratch);
    free(b->edge_tmp), free(b->keep);
    memset(b, 0, sizeof(*b));
}

static int grow(void **p, size_t bytes)
{
    void *q = realloc(*p, bytes ? bytes : 1);
    if (!q)
        return -1;
    *p = q;
    return 0;
}

enum fnq_status fnq__graph_reserve(struct fnq_graph_buf *b, int64_t n_atoms, int64_t n_edges)
{
    int fail = 0;
    /* per-atom arrays have n_atoms + 1 entries: a graph of no atoms (a rank that owns none)
     * still needs one */
    if (n_atoms > b->cap_atoms || !b->scratch) {
        fail |= grow((void **)&b->recv_start, sizeof(int64_t) * (size_t)(n_atoms + 1));
        fail |= grow((void **)&b->send_start, sizeof(int64_t) * (size_t)(n_atoms + 1));
        fail |= grow((void **)&b->scratch, sizeof(int64_t) * (size_t)(n_atoms + 1));
        if (!fail)
            b->cap_atoms = n_atoms;
    }
    if (!fail && n_edges > b->cap_edges) {
        fail |= grow((void **)&b->send_edges, sizeof(int64_t) * (size_t)n_edges);
        fail |= grow((void **)&b->edge_send, sizeof(int64_t) * (size_t)n_edges);
        fail |= grow((void **)&b->edge_recv, sizeof(int64_t) * (size_t)n_edges);
        fail |= grow((void **)&b->edge_vec, sizeof(double) * 3 * (size_t)n_edges);
        fail |= grow((void **)&b->edge_tmp, sizeof(int64_t) * (size_t)n_edges);
        if (!fail)
            b->cap_edges = n_edges;
    }
    if (fail)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY,
                         "out of host memory for a graph of %lld atoms and %lld edges",
                         (long long)n_atoms, (long long)n_edges);
    return FNQ_STATUS_OK;
}

enum fnq_status fnq__graph_reserve_growing(struct fnq_graph_buf *b, int64_t n_atoms,
                                           int64_t n_edges)
{
    if (n_edges <= b->cap_edges)
        return fnq__graph_reserve(b, n_atoms, n_edges);
    const int64_t grown = 2 * b->cap_edges;
    return fnq__graph_reserve(b, n_atoms, n_edges > grown ? n_edges : grown);
}

enum fnq_status fnq__check_positions(int64_t n, const double *pos)
{
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            if (!isfinite(pos[3 * i + k]))
                return fnq__fail_atoms(FNQ_STATUS_INVALID_ARG, i, -1,
                                       "atom %lld has a non-finite coordinate (%c = %g)",
                                       (long long)i, "xyz"[k], pos[3 * i + k]);
    return FNQ_STATUS_OK;
}

/* Everything after the edges are in place, sorted by receiver with recv_start filled. */
enum fnq_status fnq__graph_finish(struct fnq_graph_buf *b, const struct fnq_limits *lim)
{
    struct fnq_graph *g = &b->g;
    const int64_t ne = g->n_edges;
    /* distance check: the first offending pair in edge order, so the message is stable */
    const double md2 = lim->min_distance * lim->min_distance;
    int64_t first_close = ne;
#pragma omp parallel for schedule(static) reduction(min : first_close)
    for (int64_t e = 0; e < ne; e++) {
        const double *r = b->edge_vec + 3 * e;
        const double d2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
        if ((d2 < md2 || d2 == 0.0) && e < first_close)
            first_close = e;
    }
    if (first_close < ne) {
        const int64_t e = first_close;
        const double *r = b->edge_vec + 3 * e;
        return fnq__fail_atoms(FNQ_STATUS_INVALID_ARG, b->edge_recv[e], b->edge_send[e],
                               "atoms %lld and %lld are %.6g A apart, closer than the minimum "
                               "distance of %g A (overlapping atoms or positions in the wrong "
                               "units?)",
                               (long long)b->edge_recv[e], (long long)b->edge_send[e],
                               sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]), lim->min_distance);
    }
    g->max_degree = 0;
    for (int64_t i = 0; i < g->n_local; i++) {
        int64_t deg = b->recv_start[i + 1] - b->recv_start[i];
        if (deg > lim->max_neighbors)
            return fnq__fail_atoms(FNQ_STATUS_INVALID_ARG, i, -1,
                                   "atom %lld has %lld neighbours within the %g A cutoff, more "
                                   "than the limit of %lld (positions in the wrong units? raise "
                                   "it with fnq_ctx_set_max_neighbors)",
                                   (long long)i, (long long)deg, lim->cutoff,
                                   (long long)lim->max_neighbors);
        if (deg > g->max_degree)
            g->max_degree = deg;
    }
    fnq__graph_sender_index(b);

    /* The backward pass takes the sender gradient of an owned atom from the reverses of its own
     * edges, so between owned atoms the list must hold both directions of every pair. */
    int64_t first_half = g->n_local; /* the first owned atom whose list is not full */
#pragma omp parallel for schedule(static) reduction(min : first_half)
    for (int64_t j = 0; j < g->n_local; j++) {
        int64_t from_owned = 0;
        for (int64_t e = b->recv_start[j]; e < b->recv_start[j + 1]; e++)
            from_owned += b->edge_send[e] < g->n_local;
        if (b->send_start[j + 1] - b->send_start[j] != from_owned && j < first_half)
            first_half = j;
    }
    if (first_half < g->n_local) {
        const int64_t j = first_half;
        int64_t from_owned = 0;
        for (int64_t e = b->recv_start[j]; e < b->recv_start[j + 1]; e++)
            from_owned += b->edge_send[e] < g->n_local;
        return fnq__fail_atoms(FNQ_STATUS_INVALID_ARG, j, -1,
                               "the neighbour list is not full: owned atom %lld receives "
                               "%lld edges from owned atoms but sends %lld (both directions "
                               "of every pair within the cutoff are needed)",
                               (long long)j, (long long)from_owned,
                               (long long)(b->send_start[j + 1] - b->send_start[j]));
    }

    g->recv_start = b->recv_start;
    g->edge_send = b->edge_send;
    g->edge_recv = b->edge_recv;
    g->edge_vec = b->edge_vec;
    g->send_start = b->send_start;
    g->send_edges = b->send_edges;
    return FNQ_STATUS_OK;
}

/* pair e's vector: the sender's position less the receiver's, plus its shift */
static inline void pair_vector(const double *pos, const int64_t *recv, const int64_t *send,
                               const double *shift, int64_t e, double r[3])
{
    for (int k = 0; k < 3; k++)
        r[k] = pos[3 * send[e] + k] - pos[3 * recv[e] + k] + (shift ? shift[3 * e + k] : 0.0);
}

/* pair e as edge q of the graph (a ghost sender folded onto its owner) */
static inline void put_edge(struct fnq_graph_buf *b, int64_t q, int64_t e, int64_t n_local,
                            const double *pos, const int64_t *recv, const int64_t *send,
                            const double *shift, const int64_t *ghost_owner)
{
    b->edge_recv[q] = recv[e];
    b->edge_send[q] = fnq__sender_of(send[e], n_local, ghost_owner);
    pair_vector(pos, recv, send, shift, e, b->edge_vec + 3 * q);
}

static enum fnq_status bad_pair(int64_t e, int64_t n_local, int64_t n_all, const int64_t *recv,
                                const int64_t *send)
{
    if (recv[e] < 0 || recv[e] >= n_local)
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "edge %lld: receiver %lld is not an owned atom (0..%lld)", (long long)e,
                         (long long)recv[e], (long long)(n_local - 1));
    return fnq__fail(FNQ_STATUS_INVALID_ARG, "edge %lld: sender %lld is not an atom (0..%lld)",
                     (long long)e, (long long)send[e], (long long)(n_all - 1));
}

/* The caller's pairs inside the cutoff, sorted by receiver and in the caller's order within
 * one. Lists that come grouped by receiver in ascending order (LAMMPS', ASE's, ours) are
 * compacted by every thread, a block each; others sorted by one thread. */
enum fnq_status fnq__graph_from_edges(struct fnq_graph_buf *b, int64_t n_local, int64_t n_all,
                                      const double *pos, const int32_t *species, int64_t n_edges,
                                      const int64_t *recv, const int64_t *send,
                                      const double *shift, const int64_t *ghost_owner,
                                      int keep_ghost_rows, const struct fnq_limits *lim)
{
    FNQ_CHECK(fnq__check_positions(n_all, pos));
    const double rc2 = lim->cutoff * lim->cutoff;
    FNQ_CHECK(fnq__graph_reserve(b, n_all, 0));
    if (n_edges > b->cap_pairs) {
        unsigned char *k = realloc(b->keep, (size_t)n_edges);
        if (!k)
            return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of host memory for %lld pairs",
                             (long long)n_edges);
        b->keep = k, b->cap_pairs = n_edges;
    }
    /* which pairs are inside the cutoff, how many each block keeps, the first bad index */
    int64_t kept_before[FNQ_GRAPH_BLOCKS + 1], bad = n_edges;
    int ascending = 1;
#pragma omp parallel for schedule(static) reduction(min : bad) reduction(&& : ascending)
    for (int t = 0; t < FNQ_GRAPH_BLOCKS; t++) {
        int64_t kept = 0;
        for (int64_t e = fnq__graph_block_start(n_edges, t);
             e < fnq__graph_block_start(n_edges, t + 1); e++) {
            if (recv[e] < 0 || recv[e] >= n_local || send[e] < 0 || send[e] >= n_all) {
                bad = e < bad ? e : bad;
                break;
            }
            ascending = ascending && (e == 0 || recv[e] >= recv[e - 1]);
            double r[3];
            pair_vector(pos, recv, send, shift, e, r);
            b->keep[e] = r[0] * r[0] + r[1] * r[1] + r[2] * r[2] < rc2;
            kept += b->keep[e];
        }
        kept_before[t + 1] = kept;
    }
    if (bad < n_edges)
        return bad_pair(bad, n_local, n_all, recv, send);
    kept_before[0] = 0;
    for (int t = 0; t < FNQ_GRAPH_BLOCKS; t++)
        kept_before[t + 1] += kept_before[t];
    const int64_t kept = kept_before[FNQ_GRAPH_BLOCKS];
    FNQ_CHECK(fnq__graph_reserve(b, n_all, kept));
    if (ascending) {
#pragma omp parallel for schedule(static)
        for (int t = 0; t < FNQ_GRAPH_BLOCKS; t++) {
            int64_t q = kept_before[t];
            for (int64_t e = fnq__graph_block_start(n_edges, t);
                 e < fnq__graph_block_start(n_edges, t + 1); e++)
                if (b->keep[e])
                    put_edge(b, q++, e, n_local, pos, recv, send, shift, ghost_owner);
        }
        /* receiver i's first edge: the first with a receiver >= i */
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i <= n_local; i++) {
            int64_t lo = 0, hi = kept;
            while (lo < hi) {
                const int64_t mid = lo + (hi - lo) / 2;
                if (b->edge_recv[mid] < i)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            b->recv_start[i] = lo;
        }
    } else { /* a counting sort by receiver */
        int64_t *next = b->scratch;
        memset(next, 0, sizeof(int64_t) * (size_t)(n_local + 1));
        for (int64_t e = 0; e < n_edges; e++)
            next[recv[e] + 1] += b->keep[e];
        b->recv_start[0] = 0;
        for (int64_t i = 0; i < n_local; i++)
            b->recv_start[i + 1] = b->recv_start[i] + next[i + 1];
        memcpy(next, b->recv_start, sizeof(int64_t) * (size_t)n_local);
        for (int64_t e = 0; e < n_edges; e++)
            if (b->keep[e])
                put_edge(b, next[recv[e]]++, e, n_local, pos, recv, send, shift, ghost_owner);
    }
    b->g.n_local = n_local;
    b->g.n_all = fnq__graph_rows(n_local, n_all, ghost_owner, keep_ghost_rows);
    b->g.n_edges = kept;
    b->g.species = species;
    return fnq__graph_finish(b, lim);
}
