/*
 * graph_batch.c: many independent structures as one graph. Each structure gets its own
 * neighbour list (neighbor.c, its own cell and periodicity), and the lists are laid end to end
 * with the atoms renumbered by the structure's offset: no edge joins two structures, so the
 * model sees each one exactly as a call of its own would, and the whole batch runs as one
 * evaluation.
 *
 * Structures are listed side by side: each worker takes a run of consecutive structures into
 * a part of its own, then the parts are copied end to end. One structure's list uses a thread
 * for a few microseconds, far too little to share out; 4,096 eight-atom structures one after
 * another, each with its own parallel loops, took 4.7 s on 2 busy cores (0.55 s on one thread).
 * Parts join in structure order, so the graph does not depend on the thread count.
 */
#include "graph/graph.h"

#include <stdlib.h>
#include <string.h>

#include "api/status.h"
#include "backend/parallel.h"

void fnq__batch_parts_free(struct fnq_batch_parts *p)
{
    for (int c = 0; c < p->n; c++) {
        fnq__graph_buf_free(&p->one[c]);
        fnq__graph_buf_free(&p->part[c]);
    }
    free(p->one);
    free(p->part);
    memset(p, 0, sizeof(*p));
}

static enum fnq_status parts_reserve(struct fnq_batch_parts *p, int n)
{
    if (n <= p->n)
        return FNQ_STATUS_OK;
    fnq__batch_parts_free(p);
    p->one = calloc((size_t)n, sizeof(*p->one));
    p->part = calloc((size_t)n, sizeof(*p->part));
    if (!p->one || !p->part) {
        free(p->one), free(p->part);
        p->one = p->part = NULL;
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of host memory for a batch's lists");
    }
    p->n = n;
    return FNQ_STATUS_OK;
}

/* the list in `src` (atoms 0..src_atoms-1, edges 0..n_edges-1) into `dst` from atom atom0 and
 * edge e0 */
static void append(struct fnq_graph_buf *dst, const struct fnq_graph_buf *src, int64_t src_atoms,
                   int64_t n_edges, int64_t atom0, int64_t e0)
{
    for (int64_t e = 0; e < n_edges; e++) {
        dst->edge_recv[e0 + e] = src->edge_recv[e] + atom0;
        dst->edge_send[e0 + e] = src->edge_send[e] + atom0;
    }
    if (n_edges > 0) /* a list of no edges may have no arrays yet */
        memcpy(dst->edge_vec + 3 * e0, src->edge_vec, sizeof(double) * 3 * (size_t)n_edges);
    for (int64_t i = 0; i < src_atoms; i++)
        dst->recv_start[atom0 + i + 1] = src->recv_start[i + 1] + e0;
}

/* one structure's list, with a failure naming the structure and its atoms as batch indices */
static enum fnq_status structure_list(struct fnq_graph_buf *one, int64_t s,
                                      const int64_t *atom_offsets, const double *pos,
                                      const int32_t *species, const double *cells,
                                      const int32_t *pbc, const struct fnq_limits *lim)
{
    const int64_t atom0 = atom_offsets[s];
    const enum fnq_status st =
        fnq__graph_from_cell(one, atom_offsets[s + 1] - atom0, pos + 3 * atom0, species + atom0,
                             cells ? cells + 9 * s : NULL, pbc ? pbc + 3 * s : NULL, lim);
    return st == FNQ_STATUS_OK ? st : fnq__fail_in_structure(st, s, atom0);
}

/* structures s0..s1-1 into `part`, numbered from their first atom; the first structure that
 * fails (or s1), and the part's edge count */
static int64_t list_run(struct fnq_graph_buf *one, struct fnq_graph_buf *part, int64_t s0,
                        int64_t s1, const int64_t *atom_offsets, const double *pos,
                        const int32_t *species, const double *cells, const int32_t *pbc,
                        const struct fnq_limits *lim, int64_t *n_edges)
{
    const int64_t base = atom_offsets[s0], n_atoms = atom_offsets[s1] - base;
    *n_edges = 0;
    if (fnq__graph_reserve(part, n_atoms, 0) != FNQ_STATUS_OK)
        return s0;
    part->recv_start[0] = 0;
    for (int64_t s = s0; s < s1; s++) {
        if (structure_list(one, s, atom_offsets, pos, species, cells, pbc, lim) != FNQ_STATUS_OK ||
            fnq__graph_reserve_growing(part, n_atoms, *n_edges + one->g.n_edges) != FNQ_STATUS_OK)
            return s;
        append(part, one, one->g.n_local, one->g.n_edges, atom_offsets[s] - base, *n_edges);
        *n_edges += one->g.n_edges;
    }
    return s1;
}

enum fnq_status fnq__graph_from_batch(struct fnq_graph_buf *b, struct fnq_batch_parts *parts,
                                      int64_t n_structures, const int64_t *atom_offsets,
                                      const double *pos, const int32_t *species,
                                      const double *cells, const int32_t *pbc,
                                      const struct fnq_limits *lim)
{
    const int64_t n = atom_offsets[n_structures];
    int n_parts = fnq__max_threads();
    if (n_parts > n_structures)
        n_parts = (int)n_structures;
    if (n_parts < 1)
        n_parts = 1;
    FNQ_CHECK(parts_reserve(parts, n_parts));
    /* part c: the structures from the first that starts at or after atom n*c/n_parts */
    int64_t *run = malloc(sizeof(int64_t) * 3 * (size_t)(n_parts + 1));
    if (!run)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of host memory for a batch's lists");
    int64_t *stop = run + (n_parts + 1), *edges = stop + (n_parts + 1);
    for (int c = 0, s = 0; c <= n_parts; c++) {
        while (s < n_structures && atom_offsets[s] < n * c / n_parts)
            s++;
        run[c] = c == n_parts ? n_structures : s;
    }
#pragma omp parallel for schedule(static, 1) num_threads(n_parts)
    for (int c = 0; c < n_parts; c++)
        stop[c] = list_run(&parts->one[c], &parts->part[c], run[c], run[c + 1], atom_offsets, pos,
                           species, cells, pbc, lim, &edges[c]);
    for (int c = 0; c < n_parts; c++)
        if (stop[c] < run[c + 1]) {
            /* the first failure in structure order, again on this thread: its message is
             * the caller's (a worker's went to that worker's thread) */
            const int64_t s = stop[c];
            free(run);
            FNQ_CHECK(structure_list(&parts->one[0], s, atom_offsets, pos, species, cells, pbc,
                                     lim));
            return fnq__fail_in_structure(
                fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of host memory for its list"), s,
                atom_offsets[s]);
        }
    int64_t n_edges = 0;
    for (int c = 0; c < n_parts; c++) {
        const int64_t here = edges[c];
        edges[c] = n_edges; /* now where part c starts */
        n_edges += here;
    }
    enum fnq_status st = fnq__graph_reserve(b, n, n_edges);
    if (st != FNQ_STATUS_OK) {
        free(run);
        return st;
    }
    b->recv_start[0] = 0;
#pragma omp parallel for schedule(static, 1) num_threads(n_parts)
    for (int c = 0; c < n_parts; c++) {
        const int64_t a0 = atom_offsets[run[c]], a1 = atom_offsets[run[c + 1]];
        const int64_t count = (c + 1 < n_parts ? edges[c + 1] : n_edges) - edges[c];
        append(b, &parts->part[c], a1 - a0, count, a0, edges[c]);
    }
    free(run);
    b->g.n_local = n;
    b->g.n_all = n;
    b->g.n_edges = n_edges;
    b->g.species = species;
    /* every check already passed structure by structure; this makes the sender index */
    return fnq__graph_finish(b, lim);
}
