/*
 * allegro_edges.c: the active edges of an Allegro model's graph (not of zero length, within
 * their type pair's cutoff where the model has per-type cutoffs), per centre in edge order: the
 * host side of the GPU engine (kernels/allegro/allegro_engine.cu), which gathers their vectors and
 * types on the GPU. OpenMP in two passes (count per centre, then fill at each centre's
 * offset), so the list and its order do not depend on the number of threads.
 */
#include <math.h>

#include "allegro/allegro.h"

static int is_active(const struct fnq_allegro *al, int32_t n_species, int32_t ti, int32_t tj,
                     const double *v)
{
    const double d = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    return d > 0.0 && !(al->cut_by_type && d / al->cut_by_type[ti * n_species + tj] > 1.0);
}

int64_t fnq__allegro_count_active(const struct fnq_model *m, const struct fnq_graph *g,
                                  int64_t *start)
{
    start[0] = 0;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < g->n_local; i++) {
        int64_t count = 0;
        for (int64_t e = g->recv_start[i]; e < g->recv_start[i + 1]; e++)
            count += is_active(m->allegro, m->n_species, g->species[i],
                               g->species[g->edge_send[e]], g->edge_vec + 3 * e);
        start[i + 1] = count;
    }
    for (int64_t i = 0; i < g->n_local; i++)
        start[i + 1] += start[i];
    return start[g->n_local];
}

void fnq__allegro_fill_active(const struct fnq_model *m, const struct fnq_graph *g,
                              const int64_t *start, int64_t *index)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < g->n_local; i++) {
        int64_t a = start[i];
        for (int64_t e = g->recv_start[i]; e < g->recv_start[i + 1]; e++)
            if (is_active(m->allegro, m->n_species, g->species[i], g->species[g->edge_send[e]],
                          g->edge_vec + 3 * e))
                index[a++] = e;
    }
}
