/*
 * test_graph_edges.c: the graph built from a caller's pairs (graph.c, graph_sender_index.c)
 * against a reference written here the plain way (per receiver in order, its pairs inside the
 * cutoff in the caller's order; per sender its edges ascending), bit for bit, on 1 to 4 OpenMP
 * threads: pairs grouped by receiver (the parallel path) and shuffled (the sorting path), ghosts
 * folded onto owners and kept, fewer pairs than blocks, none. Bad pairs are named by the first.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "fnq_test.h"
#include "graph/graph.h"

struct pairs {
    int64_t n_local, n_all, n; /* atoms owned, with ghosts; pairs */
    double *pos, *shift;
    int64_t *recv, *send, *owner;
    int32_t *species;
};

static uint64_t rng = 12345;
static double uniform(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* every ordered pair of distinct owned atoms, and ghost -> owned, grouped by receiver. With
 * ghosts, each owned atom has two, its images one box length along +x and -x; some owned pairs
 * carry a shift of a box length (+ one way, - the other), so that the list stays full */
static struct pairs make_pairs(int64_t n_local, int ghosts, int shuffle)
{
    const int64_t n_ghost = ghosts ? 2 * n_local : 0;
    struct pairs p = {n_local, n_local + n_ghost, 0};
    p.pos = malloc(sizeof(double) * 3 * (size_t)p.n_all);
    p.species = calloc((size_t)p.n_all, sizeof(int32_t));
    p.owner = n_ghost ? malloc(sizeof(int64_t) * (size_t)n_ghost) : NULL;
    for (int64_t i = 0; i < n_local; i++)
        for (int k = 0; k < 3; k++)
            p.pos[3 * i + k] = 6.0 * uniform();
    for (int64_t g = 0; g < n_ghost; g++) {
        p.owner[g] = g % n_local;
        for (int k = 0; k < 3; k++)
            p.pos[3 * (n_local + g) + k] =
                p.pos[3 * p.owner[g] + k] + (k == 0 ? (g < n_local ? 6.0 : -6.0) : 0.0);
    }
    const int64_t cap = n_local * (p.n_all - 1);
    p.recv = malloc(sizeof(int64_t) * (size_t)(cap + 1));
    p.send = malloc(sizeof(int64_t) * (size_t)(cap + 1));
    p.shift = malloc(sizeof(double) * 3 * (size_t)(cap + 1));
    for (int64_t i = 0; i < n_local; i++)
        for (int64_t j = 0; j < p.n_all; j++)
            if (j != i) {
                p.recv[p.n] = i, p.send[p.n] = j;
                const double s = j < n_local && (i + j) % 7 == 0 ? (i < j ? 6.0 : -6.0) : 0.0;
                for (int k = 0; k < 3; k++)
                    p.shift[3 * p.n + k] = k == 1 ? s : 0.0;
                p.n++;
            }
    for (int64_t e = p.n - 1; shuffle && e > 0; e--) {
        const int64_t f = (int64_t)(uniform() * (double)(e + 1));
        int64_t t = p.recv[e];
        p.recv[e] = p.recv[f], p.recv[f] = t;
        t = p.send[e], p.send[e] = p.send[f], p.send[f] = t;
        for (int k = 0; k < 3; k++) {
            const double s = p.shift[3 * e + k];
            p.shift[3 * e + k] = p.shift[3 * f + k], p.shift[3 * f + k] = s;
        }
    }
    return p;
}

static void free_pairs(struct pairs *p)
{
    free(p->pos), free(p->shift), free(p->recv), free(p->send), free(p->owner), free(p->species);
}

/* the reference: the graph checked edge for edge against the plain construction */
static void check_graph(const char *label, const struct pairs *p, const struct fnq_graph *g,
                        double rc, int fold)
{
    int64_t q = 0;
    for (int64_t i = 0; i < p->n_local; i++) {
        CHECK(g->recv_start[i] == q, "%s: receiver %lld starts at %lld, not %lld", label,
              (long long)i, (long long)g->recv_start[i], (long long)q);
        for (int64_t e = 0; e < p->n; e++) {
            if (p->recv[e] != i)
                continue;
            double r[3];
            for (int k = 0; k < 3; k++)
                r[k] = p->pos[3 * p->send[e] + k] - p->pos[3 * i + k] + p->shift[3 * e + k];
            if (r[0] * r[0] + r[1] * r[1] + r[2] * r[2] >= rc * rc)
                continue;
            const int64_t j = p->send[e], s = fold && j >= p->n_local ? p->owner[j - p->n_local]
                                                                      : j;
            if (q >= g->n_edges || g->edge_recv[q] != i || g->edge_send[q] != s ||
                memcmp(g->edge_vec + 3 * q, r, sizeof(r)) != 0) {
                CHECK(0, "%s: edge %lld differs", label, (long long)q);
                return;
            }
            q++;
        }
    }
    CHECK(g->recv_start[p->n_local] == q && g->n_edges == q, "%s: %lld edges, expected %lld",
          label, (long long)g->n_edges, (long long)q);
    int64_t k = 0;
    for (int64_t j = 0; j < g->n_all; j++) {
        CHECK(g->send_start[j] == k, "%s: sender %lld starts at %lld, not %lld", label,
              (long long)j, (long long)g->send_start[j], (long long)k);
        for (int64_t e = 0; e < g->n_edges; e++)
            if (g->edge_send[e] == j && g->send_edges[k++] != e) {
                CHECK(0, "%s: sender %lld's edges differ at %lld", label, (long long)j,
                      (long long)k - 1);
                return;
            }
    }
    CHECK(g->send_start[g->n_all] == g->n_edges, "%s: senders end at %lld", label,
          (long long)g->send_start[g->n_all]);
}

static void run_case(const char *label, int64_t n_local, int ghosts, int shuffle, int fold,
                     double rc)
{
    struct pairs p = make_pairs(n_local, ghosts, shuffle);
    const struct fnq_limits lim = {rc, 1e-9, 1000000};
    for (int threads = 1; threads <= 4; threads++) {
#ifdef _OPENMP
        omp_set_num_threads(threads);
#endif
        char name[160];
        snprintf(name, sizeof(name), "%s, %d thread(s)", label, threads);
        struct fnq_graph_buf b;
        memset(&b, 0, sizeof(b));
        const enum fnq_status st =
            fnq__graph_from_edges(&b, p.n_local, p.n_all, p.pos, p.species, p.n, p.recv, p.send,
                                  p.shift, fold ? p.owner : NULL, !fold, &lim);
        CHECK(st == FNQ_STATUS_OK, "%s: %s", name, fnq_last_error());
        if (st == FNQ_STATUS_OK)
            check_graph(name, &p, &b.g, rc, fold);
        fnq__graph_buf_free(&b);
    }
    free_pairs(&p);
}

/* out-of-range indices: the first bad pair is named, whichever block finds it */
static void check_bad_pairs(void)
{
    struct pairs p = make_pairs(40, 0, 0);
    const struct fnq_limits lim = {100.0, 1e-9, 1000000};
    p.send[p.n - 3] = 99;
    p.recv[p.n / 2] = -1;
    struct fnq_graph_buf b;
    memset(&b, 0, sizeof(b));
    const enum fnq_status st = fnq__graph_from_edges(&b, p.n_local, p.n_all, p.pos, p.species,
                                                     p.n, p.recv, p.send, p.shift, NULL, 0, &lim);
    char want[96];
    snprintf(want, sizeof(want), "edge %lld: receiver -1 is not an owned atom",
             (long long)(p.n / 2));
    CHECK(st == FNQ_STATUS_INVALID_ARG && strstr(fnq_last_error(), want),
          "bad pairs: got '%s', wanted '%s'", fnq_last_error(), want);
    fnq__graph_buf_free(&b);
    free_pairs(&p);
}

int main(void)
{
    run_case("grouped", 150, 0, 0, 0, 4.0);
    run_case("shuffled", 150, 0, 1, 0, 4.0);
    run_case("grouped, ghosts folded", 90, 1, 0, 1, 4.0);
    run_case("shuffled, ghosts folded", 90, 1, 1, 1, 4.0);
    run_case("grouped, ghost rows kept", 90, 1, 0, 0, 4.0);
    run_case("fewer pairs than blocks", 5, 0, 0, 0, 100.0);
    run_case("no pairs", 1, 0, 0, 0, 4.0);
    check_bad_pairs();
    return test_finish("graph from pairs");
}
