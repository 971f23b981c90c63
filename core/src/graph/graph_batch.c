/*
 * graph_batch.c: many independent structures as one graph. Each structure gets its own
 * neighbour list (neighbor.c, its own cell and periodicity), and the lists are laid end to end
 * with the atoms renumbered by the structure's offset: no edge joins two structures, so the
 * model sees each one exactly as a call of its own would, and the whole batch runs as one
 * evaluation.
 */
#include "graph/graph.h"

#include <string.h>

#include "api/status.h"

/* room for n_edges edges in the batch buffer, growing geometrically (structures are appended
 * one at a time) and keeping what is there */
static enum fnq_status reserve_edges(struct fnq_graph_buf *b, int64_t n_atoms, int64_t n_edges)
{
    if (n_edges <= b->cap_edges)
        return fnq__graph_reserve(b, n_atoms, n_edges);
    const int64_t grown = 2 * b->cap_edges;
    return fnq__graph_reserve(b, n_atoms, n_edges > grown ? n_edges : grown);
}

/* structure s's list (in `one`) appended to the batch in `b` after edge `e0` */
static void append(struct fnq_graph_buf *b, const struct fnq_graph_buf *one, int64_t atom0,
                   int64_t e0)
{
    const struct fnq_graph *g = &one->g;
    for (int64_t e = 0; e < g->n_edges; e++) {
        b->edge_recv[e0 + e] = g->edge_recv[e] + atom0;
        b->edge_send[e0 + e] = g->edge_send[e] + atom0;
    }
    memcpy(b->edge_vec + 3 * e0, g->edge_vec, sizeof(double) * 3 * (size_t)g->n_edges);
    for (int64_t i = 0; i < g->n_local; i++)
        b->recv_start[atom0 + i + 1] = g->recv_start[i + 1] + e0;
}

enum fnq_status fnq__graph_from_batch(struct fnq_graph_buf *b, struct fnq_graph_buf *one,
                                      int64_t n_structures, const int64_t *atom_offsets,
                                      const double *pos, const int32_t *species,
                                      const double *cells, const int32_t *pbc,
                                      const struct fnq_limits *lim)
{
    const int64_t n = atom_offsets[n_structures];
    FNQ_CHECK(fnq__graph_reserve(b, n, 0));
    b->recv_start[0] = 0;
    int64_t n_edges = 0;
    for (int64_t s = 0; s < n_structures; s++) {
        const int64_t atom0 = atom_offsets[s], n_s = atom_offsets[s + 1] - atom0;
        enum fnq_status st = fnq__graph_from_cell(one, n_s, pos + 3 * atom0, species + atom0,
                                                  cells ? cells + 9 * s : NULL,
                                                  pbc ? pbc + 3 * s : NULL, lim);
        if (st != FNQ_STATUS_OK)
            return fnq__fail_in_structure(st, s, atom0);
        FNQ_CHECK(reserve_edges(b, n, n_edges + one->g.n_edges));
        append(b, one, atom0, n_edges);
        n_edges += one->g.n_edges;
    }
    b->g.n_local = n;
    b->g.n_all = n;
    b->g.n_edges = n_edges;
    b->g.species = species;
    /* every check already passed structure by structure; this makes the sender index */
    return fnq__graph_finish(b, lim);
}
