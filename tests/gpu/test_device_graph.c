/*
 * test_device_graph.c: fnq_ctx_compute_graph_device (inputs in GPU memory, as torch or cupy
 * hold them) against fnq_ctx_compute_graph on host copies of the same arrays (skipped without
 * a GPU):
 *   - rattled diamond Si with shifts, the same atoms with only the pairs inside the cell and no
 *     shift array, and a multi-element triclinic cell: energy, per-atom energies, forces and
 *     virial bitwise identical, float32 and float64, also on a second (replayed) call;
 *   - bad input gives the host route's status and message: a species index out of range, a
 *     NaN position, two atoms too close, a receiver that is not an atom, too many neighbours;
 *     a host pointer is refused by name; the context still works afterwards;
 *   - fnq_ctx_compute_graph_repeat_device (positions read and forces added on the GPU, as a
 *     KOKKOS LAMMPS has them) against fnq_ctx_compute_graph_repeat on moved atoms, with and
 *     without ghost images folded onto their owners: energy and virial bitwise, device forces
 *     bitwise the host forces added to what the array held; a NaN coordinate is named, host
 *     memory refused, and the context recovers.
 */
#include <cuda_runtime.h>

#include "fnq_test.h"

/* one evaluation's status, message and results */
struct outcome {
    enum fnq_status st;
    char msg[1024];
    double e, v[6];
    double *f, *ea;
    int64_t edges;
};

static void outcome_init(struct outcome *o, int64_t n)
{
    memset(o, 0, sizeof(*o));
    o->f = malloc(sizeof(double) * 3 * (size_t)n);
    o->ea = malloc(sizeof(double) * (size_t)n);
}

static void outcome_free(struct outcome *o) { free(o->f), free(o->ea); }

static void finish(struct fnq_ctx *c, struct outcome *o)
{
    snprintf(o->msg, sizeof(o->msg), "%s", o->st == FNQ_STATUS_OK ? "" : fnq_last_error());
    o->edges = fnq_ctx_last_num_edges(c);
}

static void *upload(const void *src, size_t bytes)
{
    void *d = NULL;
    if (cudaMalloc(&d, bytes ? bytes : 8) != cudaSuccess ||
        cudaMemcpy(d, src, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
        fprintf(stderr, "FAIL: cudaMalloc/cudaMemcpy of %zu bytes\n", bytes);
        exit(1);
    }
    return d;
}

static void eval_host(struct fnq_ctx *c, const struct test_structure *s, const struct test_pairs *p,
                      struct outcome *o)
{
    o->st = fnq_ctx_compute_graph(c, s->n, s->n, s->pos, s->species, p->n, p->recv, p->send,
                                  p->shift, NULL, &o->e, o->ea, o->f, o->v, NULL);
    finish(c, o);
}

static void eval_device(struct fnq_ctx *c, const struct test_structure *s, const struct test_pairs *p,
                        struct outcome *o)
{
    const size_t n = (size_t)s->n, ne = (size_t)p->n;
    double *pos = upload(s->pos, sizeof(double) * 3 * n);
    int32_t *sp = upload(s->species, sizeof(int32_t) * n);
    int64_t *recv = upload(p->recv, sizeof(int64_t) * ne);
    int64_t *send = upload(p->send, sizeof(int64_t) * ne);
    double *shift = p->shift ? upload(p->shift, sizeof(double) * 3 * ne) : NULL;
    o->st = fnq_ctx_compute_graph_device(c, s->n, pos, sp, p->n, recv, send, shift, &o->e, o->ea,
                                         o->f, o->v);
    finish(c, o);
    cudaFree(pos), cudaFree(sp), cudaFree(recv), cudaFree(send), cudaFree(shift);
}

static int same_results(const struct outcome *a, const struct outcome *b, int64_t n)
{
    return a->st == FNQ_STATUS_OK && b->st == FNQ_STATUS_OK && a->e == b->e &&
           a->edges == b->edges && memcmp(a->v, b->v, sizeof(a->v)) == 0 &&
           memcmp(a->f, b->f, sizeof(double) * 3 * (size_t)n) == 0 &&
           memcmp(a->ea, b->ea, sizeof(double) * (size_t)n) == 0;
}

static void check_same(struct fnq_ctx *c, const char *label, const struct test_structure *s,
                       const struct test_pairs *p)
{
    struct outcome host, dev[2];
    outcome_init(&host, s->n), outcome_init(&dev[0], s->n), outcome_init(&dev[1], s->n);
    eval_host(c, s, p, &host);
    CHECK(host.st == FNQ_STATUS_OK, "%s: host arrays failed: %s", label, host.msg);
    for (int k = 0; k < 2; k++) {
        eval_device(c, s, p, &dev[k]);
        const int same = same_results(&host, &dev[k], s->n);
        printf("%s (%lld atoms, %lld pairs, %lld edges), device arrays, call %d: bitwise the "
               "host arrays' results: %s (E = %.10f eV)\n",
               label, (long long)s->n, (long long)p->n, (long long)dev[k].edges, k + 1,
               same ? "yes" : "NO", dev[k].e);
        CHECK(same, "%s: device arrays gave other results than host arrays (%s; E %.17g vs %.17g)",
              label, dev[k].msg, dev[k].e, host.e);
    }
    outcome_free(&host), outcome_free(&dev[0]), outcome_free(&dev[1]);
}

/* bad input: the device route fails as the host route does, with the same message */
static void check_bad(struct fnq_ctx *c, const struct fnq_model *m)
{
    const char *expect[5] = {"species index", "non-finite", "closer than", "receiver",
                             "more than the limit"};
    for (int bad = 0; bad < 5; bad++) {
        struct test_structure s;
        test_diamond(&s, m, 2, 0.1);
        if (bad == 0)
            s.species[7] = fnq_model_num_species(m);
        if (bad == 1)
            s.pos[3 * 9 + 1] = NAN;
        if (bad == 2) /* atom 5 onto its neighbour 4 */
            for (int k = 0; k < 3; k++)
                s.pos[3 * 5 + k] = s.pos[3 * 4 + k] + 0.05;
        struct test_pairs p;
        test_brute_pairs(&s, fnq_model_cutoff(m) + 0.5, 0, &p);
        if (bad == 3)
            p.recv[p.n / 2] = s.n; /* not an atom */
        fnq_ctx_set_max_neighbors(c, bad == 4 ? 20 : 1024);
        struct outcome host, dev;
        outcome_init(&host, s.n), outcome_init(&dev, s.n);
        eval_host(c, &s, &p, &host);
        eval_device(c, &s, &p, &dev);
        printf("bad input %d, device arrays: %s: %s\n", bad, fnq_status_string(dev.st), dev.msg);
        CHECK(dev.st == FNQ_STATUS_INVALID_ARG && dev.st == host.st &&
                  strcmp(dev.msg, host.msg) == 0 && strstr(dev.msg, expect[bad]) &&
                  strstr(dev.msg, "atom"),
              "bad input %d: device arrays said \"%s\", host arrays \"%s\" (expected \"%s\")", bad,
              dev.msg, host.msg, expect[bad]);
        outcome_free(&host), outcome_free(&dev);
        test_pairs_free(&p);
        test_structure_free(&s);
    }
    fnq_ctx_set_max_neighbors(c, 1024);

    /* host memory where device memory belongs */
    struct test_structure s;
    test_diamond(&s, m, 2, 0.1);
    struct test_pairs p;
    test_brute_pairs(&s, fnq_model_cutoff(m), 0, &p);
    double *pos = upload(s.pos, sizeof(double) * 3 * (size_t)s.n);
    int32_t *sp = upload(s.species, sizeof(int32_t) * (size_t)s.n);
    double e;
    enum fnq_status st = fnq_ctx_compute_graph_device(c, s.n, pos, sp, p.n, p.recv, p.send,
                                                      p.shift, &e, NULL, NULL, NULL);
    printf("host pair arrays as device arrays: %s: %s\n", fnq_status_string(st),
           fnq_last_error());
    CHECK(st == FNQ_STATUS_INVALID_ARG && strstr(fnq_last_error(), "edge_recv is not memory"),
          "host pair arrays were not refused by name: %s", fnq_last_error());
    st = fnq_ctx_compute_graph_device(c, s.n, s.pos, sp, 0, NULL, NULL, NULL, &e, NULL, NULL,
                                      NULL);
    CHECK(st == FNQ_STATUS_INVALID_ARG && strstr(fnq_last_error(), "positions is not memory"),
          "host positions were not refused by name: %s", fnq_last_error());
    cudaFree(pos), cudaFree(sp);

    /* the context recovers */
    check_same(c, "after bad input: Si", &s, &p);
    test_pairs_free(&p);
    test_structure_free(&s);
}

/* The shifted pairs of p as explicit ghost images (one per sender and shift), each folded
 * onto its owner: the caller's arrays of a LAMMPS rank alone (n_all > n_local, no shifts). */
struct ghosted {
    int64_t n_all, n_pairs;
    double *pos;
    int32_t *species;
    int64_t *owner, *recv, *send; /* owner[n_all - n] */
};

static void make_ghosted(const struct test_structure *s, const struct test_pairs *p,
                         struct ghosted *g)
{
    const int64_t n = s->n, cap = n + p->n;
    g->pos = malloc(sizeof(double) * 3 * (size_t)cap);
    g->species = malloc(sizeof(int32_t) * (size_t)cap);
    g->owner = malloc(sizeof(int64_t) * (size_t)cap);
    g->recv = malloc(sizeof(int64_t) * (size_t)p->n);
    g->send = malloc(sizeof(int64_t) * (size_t)p->n);
    double *shift_of = malloc(sizeof(double) * 3 * (size_t)cap);
    memcpy(g->pos, s->pos, sizeof(double) * 3 * (size_t)n);
    memcpy(g->species, s->species, sizeof(int32_t) * (size_t)n);
    int64_t na = n;
    for (int64_t e = 0; e < p->n; e++) {
        const double *sh = p->shift + 3 * e;
        int64_t j = p->send[e];
        if (sh[0] != 0.0 || sh[1] != 0.0 || sh[2] != 0.0) {
            int64_t k = n;
            while (k < na && !(g->owner[k - n] == j && !memcmp(shift_of + 3 * k, sh, 24)))
                k++;
            if (k == na) {
                for (int c = 0; c < 3; c++)
                    g->pos[3 * k + c] = s->pos[3 * j + c] + sh[c];
                memcpy(shift_of + 3 * k, sh, 24);
                g->species[k] = s->species[j];
                g->owner[k - n] = j;
                na++;
            }
            j = k;
        }
        g->recv[e] = p->recv[e], g->send[e] = j;
    }
    g->n_all = na, g->n_pairs = p->n;
    free(shift_of);
}

static void ghosted_free(struct ghosted *g)
{
    free(g->pos), free(g->species), free(g->owner), free(g->recv), free(g->send);
}

/* positions moved by up to 0.05 A; a ghost moves with its owner */
static void move_atoms(const struct ghosted *g, int64_t n, double *moved)
{
    for (int64_t i = 0; i < g->n_all; i++) {
        const int64_t o = i < n ? i : g->owner[i - n];
        for (int c = 0; c < 3; c++)
            moved[3 * i + c] = g->pos[3 * i + c] + 0.05 * sin(1.3 * (double)(3 * o + c));
    }
}

/* The device repeat against the host repeat on the same moved atoms (ghosts: images folded by
 * ghost_owner, else the pairs' shifts). The device forces array starts with values of its own,
 * to which the forces must be added. */
static void check_repeat(struct fnq_ctx *c, const char *label, const struct test_structure *s,
                         const struct test_pairs *p, int ghosts)
{
    struct ghosted g;
    make_ghosted(s, p, &g);
    const int64_t n = s->n, na = ghosts ? g.n_all : n;
    const size_t rows = 3 * (size_t)na;
    double *moved = malloc(sizeof(double) * 3 * (size_t)g.n_all);
    move_atoms(&g, n, moved);
    double *f_host = malloc(sizeof(double) * rows), *f_dev = malloc(sizeof(double) * rows);
    double *f_start = malloc(sizeof(double) * rows);
    for (size_t k = 0; k < rows; k++)
        f_start[k] = 0.25 * cos((double)k);
    double e0, v0[6], e1, v1[6];
    if (ghosts)
        CHECK_OK(fnq_ctx_compute_graph(c, n, na, g.pos, g.species, g.n_pairs, g.recv, g.send,
                                       NULL, g.owner, &e0, NULL, f_host, v0, NULL));
    else
        CHECK_OK(fnq_ctx_compute_graph(c, n, n, s->pos, s->species, p->n, p->recv, p->send,
                                       p->shift, NULL, &e0, NULL, f_host, v0, NULL));
    CHECK_OK(fnq_ctx_compute_graph_repeat(c, moved, &e0, NULL, f_host, v0, NULL));
    double *d_pos = upload(moved, sizeof(double) * rows);
    double *d_f = upload(f_start, sizeof(double) * rows);
    enum fnq_status st = fnq_ctx_compute_graph_repeat_device(c, d_pos, d_f, &e1, v1);
    CHECK(st == FNQ_STATUS_OK, "%s: device repeat failed: %s", label, fnq_last_error());
    cudaMemcpy(f_dev, d_f, sizeof(double) * rows, cudaMemcpyDeviceToHost);
    int same = e0 == e1 && memcmp(v0, v1, sizeof(v0)) == 0;
    for (size_t k = 0; k < rows; k++)
        same &= f_dev[k] == f_start[k] + f_host[k];
    printf("%s (%lld atoms, %lld with ghosts), device repeat: energy, virial and added forces "
           "bitwise the host repeat's: %s (E = %.10f eV)\n",
           label, (long long)n, (long long)na, same ? "yes" : "NO", e1);
    CHECK(same, "%s: device repeat differs from the host repeat (E %.17g vs %.17g)", label, e1, e0);

    /* a NaN coordinate is named as the host route names it; host memory is refused */
    moved[3 * 2 + 1] = NAN;
    cudaMemcpy(d_pos, moved, sizeof(double) * rows, cudaMemcpyHostToDevice);
    st = fnq_ctx_compute_graph_repeat_device(c, d_pos, d_f, &e1, v1);
    printf("%s, NaN coordinate on the device: %s: %s\n", label, fnq_status_string(st),
           fnq_last_error());
    CHECK(st == FNQ_STATUS_INVALID_ARG && strstr(fnq_last_error(), "non-finite") &&
              strstr(fnq_last_error(), "atom 2"),
          "%s: a NaN device coordinate was not named: %s", label, fnq_last_error());
    st = fnq_ctx_compute_graph_repeat_device(c, d_pos, d_f, &e1, v1);
    CHECK(st == FNQ_STATUS_INVALID_ARG && strstr(fnq_last_error(), "no earlier"),
          "%s: a failed repeat left something to repeat: %s", label, fnq_last_error());
    CHECK_OK(fnq_ctx_compute_graph(c, n, n, s->pos, s->species, p->n, p->recv, p->send,
                                   p->shift, NULL, &e0, NULL, NULL, NULL, NULL));
    st = fnq_ctx_compute_graph_repeat_device(c, moved, d_f, &e1, v1);
    CHECK(st == FNQ_STATUS_INVALID_ARG && strstr(fnq_last_error(), "positions is not memory"),
          "%s: host positions were not refused by name: %s", label, fnq_last_error());
    CHECK_OK(fnq_ctx_compute_graph(c, n, n, s->pos, s->species, p->n, p->recv, p->send,
                                   p->shift, NULL, &e0, NULL, NULL, NULL, NULL));
    cudaMemcpy(d_pos, s->pos, sizeof(double) * 3 * (size_t)n, cudaMemcpyHostToDevice);
    st = fnq_ctx_compute_graph_repeat_device(c, d_pos, f_dev, &e1, v1);
    CHECK(st == FNQ_STATUS_INVALID_ARG && strstr(fnq_last_error(), "forces is not memory"),
          "%s: host forces were not refused by name: %s", label, fnq_last_error());
    cudaFree(d_pos), cudaFree(d_f);
    free(moved), free(f_host), free(f_dev), free(f_start);
    ghosted_free(&g);
}

int main(void)
{
    test_require_gpu();
    struct fnq_model *m = test_load_model("nequix-mp-1");
    const double reach = fnq_model_cutoff(m) + 0.5;
    struct test_structure si, tri;
    test_diamond(&si, m, 3, 0.1);
    const int32_t pbc[3] = {1, 1, 1};
    const int32_t kinds[5] = {test_species(m, "Li"), test_species(m, "O"), test_species(m, "Fe"),
                              test_species(m, "P"), test_species(m, "Mg")};
    const double cell[9] = {13.0, 0.0, 0.0, 2.4, 12.1, 0.0, -1.9, 1.7, 12.6};
    test_random_structure(&tri, 120, cell, pbc, kinds, 5, 1.9);
    struct test_pairs si_pairs, si_cell_pairs, tri_pairs;
    test_brute_pairs(&si, reach, 0, &si_pairs);
    test_brute_pairs(&si, reach, 1, &si_cell_pairs);
    test_brute_pairs(&tri, reach, 0, &tri_pairs);
    for (int dt = 0; dt < 2; dt++) {
        struct fnq_ctx *c;
        CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CUDA, 0, dt ? FNQ_DTYPE_F64 : FNQ_DTYPE_F32, &c));
        printf("-- %s\n", dt ? "float64" : "float32");
        check_same(c, "Si periodic", &si, &si_pairs);
        check_same(c, "Si in-cell pairs, no shifts", &si, &si_cell_pairs);
        check_same(c, "multi-element triclinic", &tri, &tri_pairs);
        check_repeat(c, "Si periodic", &si, &si_pairs, 0);
        check_repeat(c, "Si with ghost images", &si, &si_pairs, 1);
        check_repeat(c, "multi-element triclinic with ghost images", &tri, &tri_pairs, 1);
        if (dt == 0)
            check_bad(c, m);
        fnq_ctx_free(c);
    }
    test_pairs_free(&si_pairs), test_pairs_free(&si_cell_pairs), test_pairs_free(&tri_pairs);
    test_structure_free(&si), test_structure_free(&tri);
    fnq_model_free(m);
    return test_finish("device graph");
}
