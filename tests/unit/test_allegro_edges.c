/*
 * test_allegro_edges.c: the GPU engine's active-edge list (core/src/allegro/allegro_edges.c) equals a
 * plain walk over the graph with the CPU engine's rule (allegro_eval.inc: an edge takes part
 * where d / r_c(t_i, t_j) <= 1 with per-edge-type cutoffs, else always, and never at zero
 * length): the same edges, in edge order, each centre's from its offset; and the same list
 * whatever the number of OpenMP threads.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "allegro/allegro.h"
#include "fnq_test.h"
#include "graph/graph.h"

/* the plain walk: start[n_local + 1] and index[] (returns the count) */
static int64_t walk(const struct fnq_model *m, const struct fnq_graph *g, int64_t *start,
                    int64_t *index)
{
    const double *cut = m->allegro->cut_by_type;
    int64_t a = 0;
    for (int64_t i = 0; i < g->n_local; i++) {
        start[i] = a;
        for (int64_t e = g->recv_start[i]; e < g->recv_start[i + 1]; e++) {
            const double *v = g->edge_vec + 3 * e;
            const double d = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
            const int32_t ti = g->species[i], tj = g->species[g->edge_send[e]];
            if (d > 0.0 && (!cut || d / cut[ti * m->n_species + tj] <= 1.0))
                index[a++] = e;
        }
    }
    start[g->n_local] = a;
    return a;
}

static void run_case(const char *label, const double *cut_by_type, int threads)
{
#ifdef _OPENMP
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
    const int64_t n = 60;
    const double cell[9] = {9.0, 0.0, 0.0, 3.1, 8.2, 0.0, -2.0, 1.5, 7.7};
    const int32_t pbc[3] = {1, 1, 1};
    double pos[3 * 60];
    int32_t species[60];
    for (int64_t i = 0; i < n; i++) {
        const double f[3] = {test_rand(), test_rand(), test_rand()};
        for (int k = 0; k < 3; k++)
            pos[3 * i + k] = f[0] * cell[k] + f[1] * cell[3 + k] + f[2] * cell[6 + k];
        species[i] = (int32_t)(test_rand() * 2.0) % 2;
    }
    struct fnq_graph_buf b;
    memset(&b, 0, sizeof(b));
    const struct fnq_limits lim = {5.0, 0.0, 1 << 30};
    enum fnq_status st = fnq__graph_from_cell(&b, n, pos, species, cell, pbc, &lim);
    CHECK(st == FNQ_STATUS_OK, "%s: %s", label, fnq_last_error());
    if (st != FNQ_STATUS_OK)
        return;
    const struct fnq_graph *g = &b.g;
    struct fnq_allegro al;
    memset(&al, 0, sizeof(al));
    al.cut_by_type = (double *)cut_by_type;
    struct fnq_model m;
    memset(&m, 0, sizeof(m));
    m.n_species = 2, m.cutoff = 5.0, m.allegro = &al;

    const size_t ne = (size_t)g->n_edges + 1;
    int64_t *want_start = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *want_index = malloc(sizeof(int64_t) * ne);
    int64_t *start = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *index = malloc(sizeof(int64_t) * ne);
    const int64_t want = walk(&m, g, want_start, want_index);
    const int64_t got = fnq__allegro_count_active(&m, g, start);
    fnq__allegro_fill_active(&m, g, start, index);
    printf("%s, %d threads: %lld of %lld edges active\n", label, threads, (long long)got,
           (long long)g->n_edges);
    CHECK(got == want, "%s: %lld active edges, the walk finds %lld", label, (long long)got,
          (long long)want);
    CHECK(!cut_by_type || want < g->n_edges, "%s: the per-type cutoffs dropped no edge", label);
    CHECK(memcmp(start, want_start, sizeof(int64_t) * (size_t)(n + 1)) == 0,
          "%s: the centres' offsets differ from the walk's", label);
    if (got == want)
        for (int64_t a = 0; a < got; a++)
            if (index[a] != want_index[a]) {
                CHECK(0, "%s: active edge %lld is graph edge %lld, the walk says %lld", label,
                      (long long)a, (long long)index[a], (long long)want_index[a]);
                break;
            }
    free(want_start), free(want_index), free(start), free(index);
    fnq__graph_buf_free(&b);
}

int main(void)
{
    /* (centre, neighbour): not symmetric, as nequip-allegro's per_edge_type_cutoff allows */
    const double cut[4] = {3.0, 4.5, 3.5, 5.0};
    const int threads[3] = {1, 2, 7};
    for (int q = 0; q < 3; q++) {
        test_rng_state = 11; /* the same structures at every thread count */
        run_case("per-edge-type cutoffs", cut, threads[q]);
        test_rng_state = 12;
        run_case("one cutoff", NULL, threads[q]);
    }
    return test_finish("Allegro active edges");
}
