/*
 * test_neighbors.c: the cell-list neighbour list equals a brute-force search over periodic
 * images, edge for edge (same pairs, same vectors), for triclinic cells, cells thinner than the
 * cutoff (many images), partly periodic slabs and wires, and molecules without a cell. Also
 * checks that every pair appears in both directions with opposite vectors.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fnq_test.h"
#include "graph/graph.h"

struct pair {
    int64_t i, j;
    double r[3];
};

static int cmp_pair(const void *a, const void *b)
{
    const struct pair *p = a, *q = b;
    if (p->i != q->i) return p->i < q->i ? -1 : 1;
    if (p->j != q->j) return p->j < q->j ? -1 : 1;
    for (int k = 0; k < 3; k++)
        if (fabs(p->r[k] - q->r[k]) > 1e-9) return p->r[k] < q->r[k] ? -1 : 1;
    return 0;
}

static void run_case(const char *label, int64_t n, const double *cell, const int32_t *pbc,
                     double rc, double box)
{
    double *pos = malloc(sizeof(double) * 3 * (size_t)n);
    int32_t *species = calloc((size_t)n, sizeof(int32_t));
    for (int64_t i = 0; i < n; i++) {
        double f[3] = {test_rand() * 1.4 - 0.2, test_rand() * 1.4 - 0.2, test_rand() * 1.4 - 0.2};
        for (int k = 0; k < 3; k++)
            pos[3 * i + k] = cell ? f[0] * cell[k] + f[1] * cell[3 + k] + f[2] * cell[6 + k]
                                  : f[k] * box;
    }
    struct fnq_graph_buf b;
    memset(&b, 0, sizeof(b));
    struct fnq_limits lim = {rc, 0.0, 1 << 30};
    enum fnq_status st = fnq__graph_from_cell(&b, n, pos, species, cell, pbc, &lim);
    CHECK(st == FNQ_STATUS_OK, "%s: %s", label, fnq_last_error());
    if (st != FNQ_STATUS_OK)
        return;

    /* brute force: images up to K in each periodic direction */
    int K[3];
    for (int a = 0; a < 3; a++)
        K[a] = (pbc && pbc[a]) ? 12 : 0;
    size_t cap = 1 << 16, nb = 0;
    struct pair *bf = malloc(sizeof(struct pair) * cap);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
            for (int s0 = -K[0]; s0 <= K[0]; s0++)
                for (int s1 = -K[1]; s1 <= K[1]; s1++)
                    for (int s2 = -K[2]; s2 <= K[2]; s2++) {
                        if (i == j && !s0 && !s1 && !s2)
                            continue;
                        double r[3];
                        for (int k = 0; k < 3; k++)
                            r[k] = pos[3 * j + k] - pos[3 * i + k] +
                                   (cell ? s0 * cell[k] + s1 * cell[3 + k] + s2 * cell[6 + k] : 0);
                        if (r[0] * r[0] + r[1] * r[1] + r[2] * r[2] >= rc * rc)
                            continue;
                        if (nb == cap)
                            bf = realloc(bf, sizeof(struct pair) * (cap *= 2));
                        bf[nb].i = i, bf[nb].j = j;
                        memcpy(bf[nb++].r, r, sizeof(r));
                    }
    const struct fnq_graph *g = &b.g;
    struct pair *got = malloc(sizeof(struct pair) * (size_t)(g->n_edges + 1));
    for (int64_t e = 0; e < g->n_edges; e++) {
        got[e].i = g->edge_recv[e], got[e].j = g->edge_send[e];
        memcpy(got[e].r, g->edge_vec + 3 * e, 3 * sizeof(double));
        CHECK(e == 0 || g->edge_recv[e] >= g->edge_recv[e - 1], "%s: edges not sorted", label);
    }
    printf("%s: %lld atoms, %lld edges (brute force %zu)\n", label, (long long)n,
           (long long)g->n_edges, nb);
    CHECK((size_t)g->n_edges == nb, "%s: %lld edges, brute force finds %zu", label,
          (long long)g->n_edges, nb);
    qsort(got, (size_t)g->n_edges, sizeof(struct pair), cmp_pair);
    qsort(bf, nb, sizeof(struct pair), cmp_pair);
    for (size_t e = 0; e < nb && e < (size_t)g->n_edges; e++)
        if (cmp_pair(&got[e], &bf[e]) != 0) {
            CHECK(0, "%s: edge %zu differs: (%lld,%lld) vs (%lld,%lld)", label, e,
                  (long long)got[e].i, (long long)got[e].j, (long long)bf[e].i, (long long)bf[e].j);
            break;
        }
    /* reverse of every edge, with the exactly negated vector */
    for (int64_t e = 0; e < g->n_edges; e++) {
        struct pair rev = {got[e].j, got[e].i, {-got[e].r[0], -got[e].r[1], -got[e].r[2]}};
        CHECK(bsearch(&rev, got, (size_t)g->n_edges, sizeof(struct pair), cmp_pair) != NULL,
              "%s: edge (%lld,%lld) has no reverse", label, (long long)got[e].i,
              (long long)got[e].j);
    }
    free(bf), free(got), free(pos), free(species);
    fnq__graph_buf_free(&b);
}

int main(void)
{
    const int32_t all[3] = {1, 1, 1}, slab[3] = {1, 1, 0}, wire[3] = {0, 0, 1};
    const double tri[9] = {9.0, 0.0, 0.0, 3.1, 8.2, 0.0, -2.0, 1.5, 7.7};
    const double thin[9] = {2.5, 0.0, 0.0, 1.2, 2.2, 0.0, 0.3, -0.4, 2.9};
    const double skew[9] = {6.0, 0.0, 0.0, 5.5, 1.2, 0.0, 0.4, 0.5, 6.5};
    const double slabcell[9] = {5.1, 0.0, 0.0, 2.0, 4.6, 0.0, 0.0, 0.0, 12.0};
    const double wirecell[9] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 0.2, 3.0};
    run_case("triclinic", 40, tri, all, 6.0, 0);
    run_case("thin cell (many images)", 3, thin, all, 6.0, 0);
    run_case("strongly skewed cell", 6, skew, all, 5.0, 0);
    run_case("slab", 20, slabcell, slab, 6.0, 0);
    run_case("wire with zero cell vectors", 8, wirecell, wire, 5.0, 0);
    run_case("molecule", 30, NULL, NULL, 4.0, 9.0);
    run_case("sparse molecule", 25, NULL, NULL, 6.0, 25.0);
    return test_finish("neighbour list");
}
