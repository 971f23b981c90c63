/*
 * test_device_graph.c: fnq_ctx_compute_graph_device (inputs in GPU memory, as torch or cupy
 * hold them) against fnq_ctx_compute_graph on host copies of the same arrays (skipped without
 * a GPU):
 *   - rattled diamond Si with shifts, the same atoms with only the pairs inside the cell and no
 *     shift array, and a multi-element triclinic cell: energy, per-atom energies, forces and
 *     virial bitwise identical, float32 and float64, also on a second (replayed) call;
 *   - bad input gives the host route's status and message: a species index out of range, a
 *     NaN position, two atoms too close, a receiver that is not an atom, too many neighbours;
 *     a host pointer is refused by name; the context still works afterwards.
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
        if (dt == 0)
            check_bad(c, m);
        fnq_ctx_free(c);
    }
    test_pairs_free(&si_pairs), test_pairs_free(&si_cell_pairs), test_pairs_free(&tri_pairs);
    test_structure_free(&si), test_structure_free(&tri);
    fnq_model_free(m);
    return test_finish("device graph");
}
