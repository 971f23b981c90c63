/*
 * test_graph_api.c: the caller's-neighbour-list entry point (what LAMMPS uses) gives the same
 * results as the library's own periodic neighbour list. The caller passes owned atoms plus
 * explicit ghost images (several images of the same atom in a small cell) and a full list
 * that includes pairs beyond the cutoff (a skin). Checked for ghost_owner and for the comm
 * callbacks: energy, per-atom energies, forces (ghost forces folded into their owners),
 * virial, and that per-atom virials sum to the virial. Tolerance 1e-10 relative. A CPU
 * context refuses the device-array entry points, fnq_ctx_compute_graph_device and
 * fnq_ctx_compute_graph_repeat_device, by name.
 * fnq_ctx_compute_graph_repeat equals a full call with the same positions.
 * Bad input names its atoms through fnq_last_error_atoms (too close, too many neighbours,
 * non-finite coordinate, bad species, bad ghost owner), cleared by the next success.
 */
#include "fnq_test.h"

struct ghosts {
    int64_t n_all;
    double *pos;
    int32_t *species;
    int64_t *owner; /* for every atom; identity for owned ones */
    int *c_shift;   /* for every atom: the image's shift along the third cell vector */
};

/* all images within reach of the cell, excluding the original cell */
static void make_ghosts(const struct test_structure *s, double reach, struct ghosts *g)
{
    int K = 4;
    int64_t cap = s->n * (2 * K + 1) * (2 * K + 1) * (2 * K + 1);
    g->pos = malloc(sizeof(double) * 3 * (size_t)cap);
    g->species = malloc(sizeof(int32_t) * (size_t)cap);
    g->owner = malloc(sizeof(int64_t) * (size_t)cap);
    g->c_shift = calloc((size_t)cap, sizeof(int));
    int64_t n = 0;
    for (int64_t i = 0; i < s->n; i++) {
        memcpy(g->pos + 3 * n, s->pos + 3 * i, 3 * sizeof(double));
        g->species[n] = s->species[i];
        g->owner[n++] = i;
    }
    for (int a = -K; a <= K; a++)
        for (int b = -K; b <= K; b++)
            for (int c = -K; c <= K; c++) {
                if (!a && !b && !c)
                    continue;
                for (int64_t j = 0; j < s->n; j++) {
                    double x[3];
                    for (int k = 0; k < 3; k++)
                        x[k] = s->pos[3 * j + k] + a * s->cell[k] + b * s->cell[3 + k] +
                               c * s->cell[6 + k];
                    /* keep it if it is within reach of any owned atom */
                    int keep = 0;
                    for (int64_t i = 0; i < s->n && !keep; i++) {
                        double d2 = 0;
                        for (int k = 0; k < 3; k++)
                            d2 += (x[k] - s->pos[3 * i + k]) * (x[k] - s->pos[3 * i + k]);
                        keep = d2 < reach * reach;
                    }
                    if (!keep)
                        continue;
                    memcpy(g->pos + 3 * n, x, sizeof(x));
                    g->species[n] = s->species[j];
                    g->c_shift[n] = c;
                    g->owner[n++] = j;
                }
            }
    g->n_all = n;
}

struct owner_map {
    int64_t n_local, n_all;
    const int64_t *owner;
    int calls;
};

static int comm_forward(void *user, void *rows, int32_t width, enum fnq_dtype dtype)
{
    struct owner_map *o = user;
    size_t sz = (size_t)width * (dtype == FNQ_DTYPE_F32 ? 4 : 8);
    for (int64_t g = o->n_local; g < o->n_all; g++)
        memcpy((char *)rows + (size_t)g * sz, (char *)rows + (size_t)o->owner[g] * sz, sz);
    o->calls++;
    return 0;
}

static int comm_reverse(void *user, void *rows, int32_t width, enum fnq_dtype dtype)
{
    struct owner_map *o = user;
    double *r = rows;
    if (dtype != FNQ_DTYPE_F64)
        return 1;
    for (int64_t g = o->n_local; g < o->n_all; g++)
        for (int32_t k = 0; k < width; k++)
            r[o->owner[g] * width + k] += r[g * width + k];
    o->calls++;
    return 0;
}

static void check(struct fnq_ctx *ctx, const char *label, const struct test_structure *s,
                  double cutoff)
{
    const int64_t n = s->n;
    double e0, v0[6], *f0 = malloc(sizeof(double) * 3 * (size_t)n);
    double *a0 = malloc(sizeof(double) * (size_t)n);
    CHECK_OK(fnq_ctx_compute_periodic(ctx, n, s->pos, s->species, s->cell, s->pbc, &e0, a0, f0, v0));

    const double skin = 1.0;
    struct ghosts g;
    make_ghosts(s, cutoff + skin, &g);
    /* full list with a skin: every (owned i, any a) pair closer than cutoff + skin */
    int64_t cap = n * g.n_all, ne = 0;
    int64_t *recv = malloc(sizeof(int64_t) * (size_t)cap), *send = malloc(sizeof(int64_t) * (size_t)cap);
    for (int64_t i = 0; i < n; i++)
        for (int64_t a = 0; a < g.n_all; a++) {
            if (a == i)
                continue;
            double d2 = 0;
            for (int k = 0; k < 3; k++)
                d2 += (g.pos[3 * a + k] - g.pos[3 * i + k]) * (g.pos[3 * a + k] - g.pos[3 * i + k]);
            if (d2 < (cutoff + skin) * (cutoff + skin)) {
                recv[ne] = i;
                send[ne++] = a;
            }
        }

    double e1, v1[6], *f1 = malloc(sizeof(double) * 3 * (size_t)g.n_all);
    double *a1 = malloc(sizeof(double) * (size_t)n), *av = malloc(sizeof(double) * 6 * (size_t)g.n_all);
    /* mode 2: the images shifted within the a-b plane folded by their owners, the rest (-1)
     * through the comm, as a rank of a box cut along c folds the images of its own atoms and
     * exchanges other ranks' (a fold must hold for both directions of a pair: the reverse of
     * a pair to an image shifted by S is one to an image shifted by -S) */
    int64_t *half = malloc(sizeof(int64_t) * (size_t)(g.n_all - n + 1));
    for (int64_t k = 0; k < g.n_all - n; k++)
        half[k] = g.c_shift[n + k] == 0 ? g.owner[n + k] : -1;
    for (int mode = 0; mode < 3; mode++) {
        struct owner_map om = {n, g.n_all, g.owner, 0};
        struct fnq_comm comm = {&om, comm_forward, comm_reverse};
        CHECK_OK(fnq_ctx_set_comm(ctx, mode >= 1 ? &comm : NULL));
        const int64_t *owners[3] = {g.owner + n, NULL, half};
        CHECK_OK(fnq_ctx_compute_graph(ctx, n, g.n_all, g.pos, g.species, ne, recv, send, NULL,
                                       owners[mode], &e1, a1, f1, v1, av));
        const char *how = mode == 0   ? "ghost_owner"
                          : mode == 1 ? "comm callbacks"
                                      : "in-plane images folded, the rest through the comm";
        if (mode >= 1)
            CHECK(om.calls == 6,
                  "%s %s: expected 6 exchanges (3 forward, 3 reverse), got %d", label, how,
                  om.calls);
        /* fold ghost forces and per-atom virials into owners */
        double fmx = 0.0, df = 0.0, da = 0.0, dv = 0.0, vsum[6] = {0}, dsum = 0.0;
        for (int64_t a = n; a < g.n_all; a++)
            for (int k = 0; k < 3; k++)
                f1[3 * g.owner[a] + k] += f1[3 * a + k];
        for (int64_t a = 0; a < g.n_all; a++)
            for (int k = 0; k < 6; k++)
                vsum[k] += av[6 * a + k];
        for (int64_t i = 0; i < n; i++) {
            for (int k = 0; k < 3; k++) {
                fmx = fmax(fmx, fabs(f0[3 * i + k]));
                df = fmax(df, fabs(f1[3 * i + k] - f0[3 * i + k]));
            }
            da = fmax(da, fabs(a1[i] - a0[i]));
        }
        double vmax = 0.0;
        for (int k = 0; k < 6; k++) {
            vmax = fmax(vmax, fabs(v0[k]));
            dv = fmax(dv, fabs(v1[k] - v0[k]));
            dsum = fmax(dsum, fabs(vsum[k] - v1[k]));
        }
        double de = fabs(e1 - e0) / fabs(e0);
        printf("%s (%s): %lld owned, %lld ghosts, %lld listed pairs: |dE|/|E| = %.2e, "
               "max|dF| = %.2e, max|de_i| = %.2e, max|dW| = %.2e, |sum W_i - W| = %.2e\n",
               label, how, (long long)n, (long long)(g.n_all - n), (long long)ne, de, df, da, dv,
               dsum);
        CHECK(de <= 1e-10, "%s %s: energy differs by %.3e relative", label, how, de);
        CHECK(df <= 1e-10 * fmx, "%s %s: forces differ by %.3e", label, how, df);
        CHECK(da <= 1e-10 * fabs(e0) / (double)n, "%s %s: atom energies differ by %.3e", label,
              how, da);
        CHECK(dv <= 1e-10 * vmax, "%s %s: virial differs by %.3e", label, how, dv);
        CHECK(dsum <= 1e-10 * vmax, "%s %s: per-atom virials do not sum to the virial (%.3e)",
              label, how, dsum);
    }
    CHECK_OK(fnq_ctx_set_comm(ctx, NULL));

    /* a half list (one direction only) is refused with a message */
    int64_t nh = 0;
    for (int64_t e = 0; e < ne; e++)
        if (send[e] >= n || send[e] > recv[e]) {
            recv[nh] = recv[e];
            send[nh++] = send[e];
        }
    enum fnq_status st = fnq_ctx_compute_graph(ctx, n, g.n_all, g.pos, g.species, nh, recv, send,
                                               NULL, g.owner + n, &e1, NULL, f1, NULL, NULL);
    CHECK(st == FNQ_STATUS_INVALID_ARG && strstr(fnq_last_error(), "not full"),
          "%s: a half neighbour list was not refused (%s)", label, fnq_last_error());

    free(f0), free(a0), free(f1), free(a1), free(av), free(recv), free(send), free(half);
    free(g.pos), free(g.species), free(g.owner), free(g.c_shift);
}

/* With a comm installed the exchange is collective: a rank without ghosts (here an isolated
 * cluster, all atoms owned) still takes part in every exchange, or the other ranks would wait
 * for it forever. */
static void check_collective_without_ghosts(struct fnq_ctx *ctx, const struct test_structure *s,
                                            double cutoff)
{
    const int64_t n = s->n;
    double e0, e1, *f = malloc(sizeof(double) * 3 * (size_t)n);
    CHECK_OK(fnq_ctx_compute_periodic(ctx, n, s->pos, s->species, NULL, NULL, &e0, NULL, f, NULL));
    int64_t *recv = malloc(sizeof(int64_t) * (size_t)(n * n)), *send = malloc(sizeof(int64_t) * (size_t)(n * n));
    int64_t ne = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
            if (i != j) {
                recv[ne] = i;
                send[ne++] = j;
            }
    struct owner_map om = {n, n, NULL, 0};
    struct fnq_comm comm = {&om, comm_forward, comm_reverse};
    CHECK_OK(fnq_ctx_set_comm(ctx, &comm));
    CHECK_OK(fnq_ctx_compute_graph(ctx, n, n, s->pos, s->species, ne, recv, send, NULL, NULL, &e1,
                                   NULL, f, NULL, NULL));
    CHECK_OK(fnq_ctx_set_comm(ctx, NULL));
    printf("cluster without ghosts (comm callbacks): %d exchanges, |dE|/|E| = %.2e (cutoff %g)\n",
           om.calls, fabs(e1 - e0) / fabs(e0), cutoff);
    CHECK(om.calls == 6, "no ghosts but a comm: expected 6 exchanges (they are collective), got %d",
          om.calls);
    CHECK(fabs(e1 - e0) <= 1e-10 * fabs(e0), "cluster: energy %.12g vs %.12g", e1, e0);
    free(f), free(recv), free(send);
}

/* fnq_ctx_compute_graph_repeat: new positions, the last call's pairs: the same numbers as a
 * full fnq_ctx_compute_graph with those positions (bitwise: the same graph is built), also
 * when atoms move across the cutoff; refused with nothing to repeat */
static void check_repeat(struct fnq_model *m, const struct test_structure *s)
{
    const int64_t n = s->n;
    struct fnq_ctx *ctx;
    CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CPU, 0, FNQ_DTYPE_F64, &ctx));
    double e[2], v[2][6], *f[2], *moved = malloc(sizeof(double) * 3 * (size_t)n);
    enum fnq_status st = fnq_ctx_compute_graph_repeat(ctx, s->pos, &e[0], NULL, NULL, NULL, NULL);
    CHECK(st == FNQ_STATUS_INVALID_ARG && strstr(fnq_last_error(), "no earlier"),
          "repeat on a fresh context: %s", fnq_last_error());
    int64_t *recv = malloc(sizeof(int64_t) * (size_t)(n * n)), *send = malloc(sizeof(int64_t) * (size_t)(n * n));
    int64_t ne = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
            if (i != j)
                recv[ne] = i, send[ne++] = j;
    for (int64_t k = 0; k < 3 * n; k++) /* up to 0.4 A: pairs cross the cutoff */
        moved[k] = s->pos[k] + 0.4 * sin(1.7 * (double)k);
    for (int r = 0; r < 2; r++)
        f[r] = malloc(sizeof(double) * 3 * (size_t)n);
    CHECK_OK(fnq_ctx_compute_graph(ctx, n, n, s->pos, s->species, ne, recv, send, NULL, NULL,
                                   &e[0], NULL, f[0], v[0], NULL));
    CHECK_OK(fnq_ctx_compute_graph_repeat(ctx, moved, &e[0], NULL, f[0], v[0], NULL));
    CHECK_OK(fnq_ctx_compute_graph(ctx, n, n, moved, s->species, ne, recv, send, NULL, NULL, &e[1],
                                   NULL, f[1], v[1], NULL));
    const int same = e[0] == e[1] && !memcmp(f[0], f[1], sizeof(double) * 3 * (size_t)n) &&
                     !memcmp(v[0], v[1], sizeof(v[0]));
    printf("repeat with moved atoms: the same as a full call: %s (E = %.10f)\n", same ? "yes" : "NO",
           e[0]);
    CHECK(same, "fnq_ctx_compute_graph_repeat differs from fnq_ctx_compute_graph");
    free(f[0]), free(f[1]), free(moved), free(recv), free(send);
    fnq_ctx_free(ctx);
}

/* fnq_ctx_compute_graph_device needs a CUDA context: a CPU one says so (the pointers are
 * never read) */
static void check_device_entry_refused(struct fnq_ctx *ctx, const struct test_structure *s)
{
    const int64_t recv[2] = {0, 1}, send[2] = {1, 0};
    double e = 0.0;
    enum fnq_status st = fnq_ctx_compute_graph_device(ctx, s->n, s->pos, s->species, 2, recv,
                                                      send, NULL, &e, NULL, NULL, NULL);
    printf("fnq_ctx_compute_graph_device on a CPU context: %s: %s\n", fnq_status_string(st),
           fnq_last_error());
    CHECK(st == FNQ_STATUS_INVALID_ARG && strstr(fnq_last_error(), "cuda") &&
              strstr(fnq_last_error(), "fnq_ctx_compute_graph_device"),
          "a CPU context did not refuse device arrays with a message naming cuda");
    double f[6] = {0};
    st = fnq_ctx_compute_graph_repeat_device(ctx, s->pos, f, &e, NULL);
    printf("fnq_ctx_compute_graph_repeat_device on a CPU context: %s: %s\n",
           fnq_status_string(st), fnq_last_error());
    CHECK(st == FNQ_STATUS_INVALID_ARG && strstr(fnq_last_error(), "cuda") &&
              strstr(fnq_last_error(), "fnq_ctx_compute_graph_repeat_device"),
          "a CPU context did not refuse the device repeat with a message naming cuda");
}

/* After `st` (INVALID_ARG expected) fnq_last_error_atoms gives n_want atoms: a (and b). */
static void expect_atoms(enum fnq_status st, const char *label, int32_t n_want, int64_t a,
                         int64_t b)
{
    int64_t got[2] = {-1, -1};
    int32_t n = fnq_last_error_atoms(got, 2);
    printf("%s: atoms", label);
    for (int32_t k = 0; k < n && k < 2; k++)
        printf(" %lld", (long long)got[k]);
    printf(" (%s)\n", fnq_last_error());
    CHECK(st == FNQ_STATUS_INVALID_ARG, "%s: status %s", label, fnq_status_string(st));
    CHECK(n == n_want && got[0] == a && (n_want < 2 || got[1] == b),
          "%s: %d atoms %lld %lld, expected %d: %lld %lld", label, n, (long long)got[0],
          (long long)got[1], n_want, (long long)a, (long long)b);
}

/* Four atoms, atom 0 far from the others; every pair of the others within the cutoff. */
static void check_error_atoms(struct fnq_ctx *ctx, int32_t si)
{
    double pos[12] = {30, 0, 0, 0, 0, 0, 2.3, 0, 0, 0, 2.3, 0};
    int32_t sp[4] = {si, si, si, si};
    int64_t recv[12], send[12], ne = 0;
    for (int64_t i = 0; i < 4; i++)
        for (int64_t j = 0; j < 4; j++)
            if (i != j)
                recv[ne] = i, send[ne++] = j;
    double e;
    CHECK_OK(fnq_ctx_compute_graph(ctx, 4, 4, pos, sp, ne, recv, send, NULL, NULL, &e, NULL,
                                   NULL, NULL, NULL));
    CHECK(fnq_last_error_atoms(NULL, 0) == 0, "atoms named after a success");

    pos[3 * 3 + 0] = 2.25, pos[3 * 3 + 1] = 0.05; /* atom 3 onto atom 2 */
    enum fnq_status st = fnq_ctx_compute_graph(ctx, 4, 4, pos, sp, ne, recv, send, NULL, NULL, &e,
                                               NULL, NULL, NULL, NULL);
    expect_atoms(st, "too close", 2, 2, 3);
    int64_t first = -1;
    CHECK(fnq_last_error_atoms(&first, 1) == 2 && first == 2, "cap 1: count 2, first atom 2");
    pos[3 * 3 + 0] = 0, pos[3 * 3 + 1] = 2.3;

    CHECK_OK(fnq_ctx_set_max_neighbors(ctx, 1)); /* atoms 1, 2 and 3 have 2 */
    st = fnq_ctx_compute_graph(ctx, 4, 4, pos, sp, ne, recv, send, NULL, NULL, &e, NULL, NULL,
                               NULL, NULL);
    expect_atoms(st, "too many neighbours (caller's list)", 1, 1, -1);
    st = fnq_ctx_compute_periodic(ctx, 4, pos, sp, NULL, NULL, &e, NULL, NULL, NULL);
    expect_atoms(st, "too many neighbours (cell list)", 1, 1, -1);
    CHECK_OK(fnq_ctx_set_max_neighbors(ctx, 1024));

    pos[3 * 2 + 1] = NAN;
    st = fnq_ctx_compute_periodic(ctx, 4, pos, sp, NULL, NULL, &e, NULL, NULL, NULL);
    expect_atoms(st, "non-finite coordinate", 1, 2, -1);
    pos[3 * 2 + 1] = 0;

    sp[3] = 999;
    st = fnq_ctx_compute_periodic(ctx, 4, pos, sp, NULL, NULL, &e, NULL, NULL, NULL);
    expect_atoms(st, "bad species", 1, 3, -1);
    sp[3] = si;

    const int64_t owner[1] = {7}; /* ghost 4 (a copy of atom 3) with an owner out of range */
    double pos5[15];
    memcpy(pos5, pos, sizeof(pos)), memcpy(pos5 + 12, pos + 9, 3 * sizeof(double));
    const int32_t sp5[5] = {si, si, si, si, si};
    st = fnq_ctx_compute_graph(ctx, 4, 5, pos5, sp5, ne, recv, send, NULL, owner, &e, NULL,
                               NULL, NULL, NULL);
    expect_atoms(st, "bad ghost owner", 1, 4, -1);
    /* -1 (exchanged) is a ghost owner only where a comm exchanges: without one, and -2 with */
    const int64_t unowned[1] = {-1}, below[1] = {-2};
    st = fnq_ctx_compute_graph(ctx, 4, 5, pos5, sp5, ne, recv, send, NULL, unowned, &e, NULL,
                               NULL, NULL, NULL);
    expect_atoms(st, "ghost owner -1 without a comm", 1, 4, -1);
    const int64_t all_owner[5] = {0, 1, 2, 3, 3};
    struct owner_map om = {4, 5, all_owner, 0};
    const struct fnq_comm comm = {&om, comm_forward, comm_reverse};
    CHECK_OK(fnq_ctx_set_comm(ctx, &comm));
    st = fnq_ctx_compute_graph(ctx, 4, 5, pos5, sp5, ne, recv, send, NULL, below, &e, NULL,
                               NULL, NULL, NULL);
    expect_atoms(st, "ghost owner -2 with a comm", 1, 4, -1);
    CHECK(strstr(fnq_last_error(), "nor -1 (exchanged)") != NULL,
          "ghost owner -2 with a comm: the message does not say -1 is allowed");
    CHECK_OK(fnq_ctx_set_comm(ctx, NULL));

    CHECK_OK(fnq_ctx_compute_periodic(ctx, 4, pos, sp, NULL, NULL, &e, NULL, NULL, NULL));
    CHECK(fnq_last_error_atoms(NULL, 0) == 0, "atoms still named after a success");
}

int main(void)
{
    struct fnq_model *m = test_load_model("nequix-mp-1");
    struct fnq_ctx *ctx;
    CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CPU, 0, FNQ_DTYPE_F64, &ctx));
    const int32_t pbc[3] = {1, 1, 1};
    const int32_t kinds[3] = {test_species(m, "Ga"), test_species(m, "As"), test_species(m, "N")};
    const double small[9] = {4.1, 0.0, 0.0, 1.1, 3.9, 0.0, -0.4, 0.7, 4.4};
    const double larger[9] = {8.2, 0.0, 0.0, 1.0, 7.9, 0.0, -0.7, 1.2, 8.5};
    struct test_structure s1, s2;
    test_random_structure(&s1, 3, small, pbc, kinds, 3, 2.0);
    check(ctx, "small cell", &s1, fnq_model_cutoff(m));
    test_random_structure(&s2, 20, larger, pbc, kinds, 3, 2.0);
    check(ctx, "20-atom cell", &s2, fnq_model_cutoff(m));
    check_collective_without_ghosts(ctx, &s2, fnq_model_cutoff(m));
    check_device_entry_refused(ctx, &s2);
    check_repeat(m, &s2);
    check_error_atoms(ctx, test_species(m, "Si"));
    test_structure_free(&s1), test_structure_free(&s2);
    fnq_ctx_free(ctx);
    fnq_model_free(m);
    return test_finish("graph api");
}
