/*
 * test_gpu.c: the CUDA backend against the CPU float64 reference (skipped without a GPU):
 *   - nequix-mp-1 and nequix-omat-1 on rattled diamond Si (4096 atoms) and a multi-element
 *     triclinic cell: float32 energy within 1e-6 relative, forces within 1e-4 eV/A, stress
 *     within 1e-6 eV/A^3; float64 within 1e-10 relative;
 *   - the published Nequix values on the GPU;
 *   - bitwise identical energy and forces over 5 runs and in a fresh context;
 *   - kernel launches per evaluation <= 2 per layer + 6, plus the node GEMMs' or the lean
 *     layout's launches;
 *   - the periodic path's limits (too close, too many neighbours) worded as on the CPU;
 *   - the caller's-neighbour-list path with ghosts (owner map and comm callbacks);
 *   - a caller's list (shuffled, with pairs beyond the cutoff) sorted on the GPU gives bitwise
 *     the results of the same list sorted on the host, and the same error messages;
 *   - a system too large for the GPU fails with a message (the buffer, what it needed, what
 *     was free, and what the whole system needs), and the context still works.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "fnq_test.h"

struct result {
    double e, v[6];
    double *f, *ea;
};

static void eval(struct fnq_ctx *c, const struct test_structure *s, struct result *r)
{
    r->f = malloc(sizeof(double) * 3 * (size_t)s->n);
    r->ea = malloc(sizeof(double) * (size_t)s->n);
    CHECK_OK(fnq_ctx_compute_periodic(c, s->n, s->pos, s->species, s->has_cell ? s->cell : NULL,
                                      s->pbc, &r->e, r->ea, r->f, r->v));
}

static void result_free(struct result *r)
{
    free(r->f);
    free(r->ea);
}

static void compare(const char *label, const struct test_structure *s, const struct result *ref,
                    const struct result *got, double tol_e, double tol_f, double tol_s, int relf)
{
    double fm = 0.0, df = 0.0, da = 0.0, ds = 0.0;
    for (int64_t i = 0; i < 3 * s->n; i++) {
        fm = fmax(fm, fabs(ref->f[i]));
        df = fmax(df, fabs(got->f[i] - ref->f[i]));
    }
    for (int64_t i = 0; i < s->n; i++)
        da = fmax(da, fabs(got->ea[i] - ref->ea[i]));
    const double vol = test_volume(s->cell);
    for (int k = 0; k < 6; k++)
        ds = fmax(ds, fabs(got->v[k] - ref->v[k]) / vol);
    const double de = fabs(got->e - ref->e) / fabs(ref->e);
    printf("%-44s |dE|/|E| %.2e  max|dF| %.2e eV/A (max|F| %.2f)  max|de_i| %.2e eV  "
           "max|dstress| %.2e eV/A^3\n",
           label, de, df, fm, da, ds);
    CHECK(de <= tol_e, "%s: energy differs by %.3e relative (tolerance %.0e)", label, de, tol_e);
    const double fl = relf ? tol_f * fm : tol_f;
    CHECK(df <= fl, "%s: forces differ by %.3e (tolerance %.3e)", label, df, fl);
    CHECK(ds <= (relf ? tol_s * 1.0 : tol_s), "%s: stress differs by %.3e (tolerance %.0e)", label,
          ds, tol_s);
}

static void check_model(const char *name, const struct test_structure *si,
                        const struct test_structure *tri)
{
    struct fnq_model *m = test_load_model(name);
    struct fnq_ctx *cpu, *g32, *g64;
    CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CPU, 0, FNQ_DTYPE_F64, &cpu));
    CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CUDA, 0, FNQ_DTYPE_F32, &g32));
    CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CUDA, 0, FNQ_DTYPE_F64, &g64));
    const struct test_structure *cases[2] = {si, tri};
    const char *labels[2] = {"Si 4096 atoms", "triclinic multi-element"};
    for (int c = 0; c < 2; c++) {
        struct result ref, r32, r64;
        eval(cpu, cases[c], &ref);
        eval(g32, cases[c], &r32);
        eval(g64, cases[c], &r64);
        CHECK(fnq_ctx_last_num_edges(g32) == fnq_ctx_last_num_edges(cpu),
              "%s %s: GPU neighbour list has %lld edges, CPU %lld", name, labels[c],
              (long long)fnq_ctx_last_num_edges(g32), (long long)fnq_ctx_last_num_edges(cpu));
        char label[128];
        snprintf(label, sizeof(label), "%s %s float32", name, labels[c]);
        compare(label, cases[c], &ref, &r32, 1e-6, 1e-4, 1e-6, 0);
        snprintf(label, sizeof(label), "%s %s float64", name, labels[c]);
        compare(label, cases[c], &ref, &r64, 1e-10, 1e-10, 1e-10, 1);
        result_free(&ref), result_free(&r32), result_free(&r64);
    }
    fnq_ctx_free(cpu), fnq_ctx_free(g32), fnq_ctx_free(g64);
    fnq_model_free(m);
}

/* published 2-atom Si values (reference/nequix_published_values.json), allclose 1e-5 */
static void check_published(void)
{
    static const struct {
        const char *model;
        int perturbed;
        double e, f0[3], s[6];
    } ref[] = {
        {"nequix-mp-1", 0, -10.834069, {0, 0, 0},
         {-0.026995424181, -0.026995424181, -0.026995424181, 0, 0, 0}},
        {"nequix-mp-1", 1, -10.753344, {-1.1041114, -0.45131257, 0.45131272},
         {-0.025367301, -0.0278149154, -0.0278149098, -0.0241314191, -0.0106064761, 0.0106064798}},
        {"nequix-oam-1", 0, -10.831113, {0, 0, 0},
         {-0.018336197361, -0.018336204812, -0.018336208537, 0, 0, 0}},
        {"nequix-oam-1", 1, -10.765028, {-0.930218, -0.36117458, 0.36117452},
         {-0.0198730454, -0.0213395804, -0.0213395748, -0.020636579, -0.0084719257, 0.0084719257}},
    };
    const double cell[9] = {0, 2.715, 2.715, 2.715, 0, 2.715, 2.715, 2.715, 0};
    const int32_t pbc[3] = {1, 1, 1};
    for (size_t k = 0; k < sizeof(ref) / sizeof(ref[0]); k++) {
        struct fnq_model *m = test_load_model(ref[k].model);
        int32_t sp[2] = {test_species(m, "Si"), test_species(m, "Si")};
        double pos[6] = {0, 0, 0, 1.3575, 1.3575, 1.3575};
        if (ref[k].perturbed)
            pos[0] += 0.1, pos[1] += 0.05, pos[2] -= 0.05;
        for (int dt = 0; dt < 2; dt++) {
            struct fnq_ctx *c;
            CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CUDA, 0, dt ? FNQ_DTYPE_F64 : FNQ_DTYPE_F32, &c));
            double e, f[6], v[6];
            CHECK_OK(fnq_ctx_compute_periodic(c, 2, pos, sp, cell, pbc, &e, NULL, f, v));
            double worst = fabs(e - ref[k].e) - (1e-5 + 1e-5 * fabs(ref[k].e));
            for (int q = 0; q < 3; q++)
                worst = fmax(worst, fabs(f[q] - ref[k].f0[q]) - (1e-5 + 1e-5 * fabs(ref[k].f0[q])));
            const double vol = test_volume(cell);
            for (int q = 0; q < 6; q++)
                worst = fmax(worst, fabs(-v[q] / vol - ref[k].s[q]) - (1e-5 + 1e-5 * fabs(ref[k].s[q])));
            printf("published %-13s %-9s GPU %s: E = %.7f (published %.6f)\n", ref[k].model,
                   ref[k].perturbed ? "perturbed" : "relaxed", dt ? "float64" : "float32", e,
                   ref[k].e);
            CHECK(worst <= 0.0, "published values %s %s %s: outside allclose(1e-5)", ref[k].model,
                  ref[k].perturbed ? "perturbed" : "relaxed", dt ? "float64" : "float32");
            fnq_ctx_free(c);
        }
        fnq_model_free(m);
    }
}

static void check_determinism_and_launches(const struct test_structure *si)
{
    struct fnq_model *m = test_load_model("nequix-mp-1");
    struct fnq_ctx *c, *c2;
    CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CUDA, 0, FNQ_DTYPE_F32, &c));
    struct result first, again;
    eval(c, si, &first);
    int same = 1;
    for (int rep = 0; rep < 5; rep++) {
        eval(c, si, &again);
        same &= again.e == first.e &&
                memcmp(again.f, first.f, sizeof(double) * 3 * (size_t)si->n) == 0;
        result_free(&again);
    }
    CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CUDA, 0, FNQ_DTYPE_F32, &c2));
    eval(c2, si, &again);
    same &= again.e == first.e && memcmp(again.f, first.f, sizeof(double) * 3 * (size_t)si->n) == 0;
    result_free(&again);
    printf("determinism: 5 repeated runs and a fresh context bitwise identical: %s\n",
           same ? "yes" : "NO");
    CHECK(same, "GPU results are not bitwise reproducible");
    int32_t nl = 0, model = fnq_ctx_last_kernel_launches(c, &nl);
    const int L = fnq_model_num_layers(m);
    /* the lean buffer layout runs the node backward of layers 1 .. L-1 as kernels of their own */
    const char *lean_env = getenv("FNQ_LEAN_MEMORY"), *gemm_env = getenv("FNQ_NODE_GEMM");
    const int lean = lean_env && !strcmp(lean_env, "1");
    /* the node GEMMs (unless FNQ_NODE_GEMM=0; nequix-mp-1's linears suit them): up to 5
     * launches more in each layer's forward, and in each layer's backward but the first (a GEMM
     * is a launch for its 32- and one for its 64-channel tiles, node_gemm.cu) */
    const int gemm = !(gemm_env && !strcmp(gemm_env, "0"));
    const int limit = 2 * L + 6 + (gemm ? 10 * L - 5 : lean ? L - 1 : 0);
    printf("kernel launches per evaluation: model %d (limit %d = 2 x %d layers + 6%s), neighbour "
           "list %d\n",
           model, limit, L,
           gemm ? " + the node GEMMs" : lean ? " + the lean layout's epilogues" : "", nl);
    CHECK(model > 0 && model <= limit, "model launches %d exceed the limit %d", model, limit);
    result_free(&first);
    fnq_ctx_free(c), fnq_ctx_free(c2);
    fnq_model_free(m);
}

struct owner_map {
    int64_t n_local, n_all;
    const int64_t *owner;
};

static int fwd(void *user, void *rows, int32_t width, enum fnq_dtype dtype)
{
    struct owner_map *o = user;
    size_t sz = (size_t)width * (dtype == FNQ_DTYPE_F32 ? 4 : 8);
    for (int64_t g = o->n_local; g < o->n_all; g++)
        memcpy((char *)rows + g * sz, (char *)rows + o->owner[g] * sz, sz);
    return 0;
}

static int rev(void *user, void *rows, int32_t width, enum fnq_dtype dtype)
{
    struct owner_map *o = user;
    for (int64_t g = o->n_local; g < o->n_all; g++)
        for (int32_t k = 0; k < width; k++) {
            if (dtype == FNQ_DTYPE_F32)
                ((float *)rows)[o->owner[g] * width + k] += ((float *)rows)[g * width + k];
            else
                ((double *)rows)[o->owner[g] * width + k] += ((double *)rows)[g * width + k];
        }
    return 0;
}

/* what LAMMPS does with ghost forces (newton on): add them to their owners */
static void fold_ghost_forces(double *f, int64_t n_local, int64_t n_all, const int64_t *owner)
{
    for (int64_t g = n_local; g < n_all; g++)
        for (int k = 0; k < 3; k++) {
            f[3 * owner[g] + k] += f[3 * g + k];
            f[3 * g + k] = 0.0;
        }
}

/* owned atoms + explicit ghost images of a small cell through fnq_ctx_compute_graph: ghosts
 * folded onto owners (owner map; graph built on the GPU and on the host) and exchanged by
 * callbacks agree with the CPU */
static void check_ghost_path(void)
{
    struct fnq_model *m = test_load_model("nequix-mp-1");
    const int32_t pbc[3] = {1, 1, 1};
    const int32_t kinds[3] = {test_species(m, "Ga"), test_species(m, "As"), test_species(m, "N")};
    const double cell[9] = {7.1, 0.0, 0.0, 1.1, 6.9, 0.0, -0.4, 0.7, 7.4};
    struct test_structure s;
    test_random_structure(&s, 16, cell, pbc, kinds, 3, 2.0);
    const double reach = fnq_model_cutoff(m) + 1.0;
    int64_t cap = s.n * 125, na = s.n;
    double *pos = malloc(sizeof(double) * 3 * (size_t)cap);
    int32_t *sp = malloc(sizeof(int32_t) * (size_t)cap);
    int64_t *owner = malloc(sizeof(int64_t) * (size_t)cap);
    memcpy(pos, s.pos, sizeof(double) * 3 * (size_t)s.n);
    memcpy(sp, s.species, sizeof(int32_t) * (size_t)s.n);
    for (int64_t i = 0; i < s.n; i++)
        owner[i] = i;
    for (int a = -2; a <= 2; a++)
        for (int b = -2; b <= 2; b++)
            for (int c = -2; c <= 2; c++) {
                if (!a && !b && !c)
                    continue;
                for (int64_t j = 0; j < s.n; j++) {
                    double x[3];
                    int keep = 0;
                    for (int k = 0; k < 3; k++)
                        x[k] = s.pos[3 * j + k] + a * cell[k] + b * cell[3 + k] + c * cell[6 + k];
                    for (int64_t i = 0; i < s.n && !keep; i++) {
                        double d2 = 0;
                        for (int k = 0; k < 3; k++)
                            d2 += (x[k] - s.pos[3 * i + k]) * (x[k] - s.pos[3 * i + k]);
                        keep = d2 < reach * reach;
                    }
                    if (keep) {
                        memcpy(pos + 3 * na, x, sizeof(x));
                        sp[na] = s.species[j];
                        owner[na++] = j;
                    }
                }
            }
    int64_t *recv = malloc(sizeof(int64_t) * (size_t)(s.n * na)), *send = malloc(sizeof(int64_t) * (size_t)(s.n * na)), ne = 0;
    for (int64_t i = 0; i < s.n; i++)
        for (int64_t a = 0; a < na; a++) {
            double d2 = 0;
            for (int k = 0; k < 3; k++)
                d2 += (pos[3 * a + k] - pos[3 * i + k]) * (pos[3 * a + k] - pos[3 * i + k]);
            if (a != i && d2 < reach * reach)
                recv[ne] = i, send[ne++] = a;
        }
    struct fnq_ctx *cpu;
    CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CPU, 0, FNQ_DTYPE_F64, &cpu));
    double e0, v0[6], *f0 = malloc(sizeof(double) * 3 * (size_t)na);
    double gpu_e = 0.0, *gpu_f = malloc(sizeof(double) * 3 * (size_t)na);
    CHECK_OK(fnq_ctx_compute_graph(cpu, s.n, na, pos, sp, ne, recv, send, NULL, owner + s.n, &e0,
                                   NULL, f0, v0, NULL));
    fold_ghost_forces(f0, s.n, na, owner);
    for (int dt = 0; dt < 2; dt++)
        for (int mode = 0; mode < 3; mode++) {
            struct fnq_ctx *g;
            if (mode == 2) /* the owner map, the graph built on the host (read at init) */
                setenv("FNQ_HOST_GRAPH", "1", 1);
            CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CUDA, 0, dt ? FNQ_DTYPE_F64 : FNQ_DTYPE_F32, &g));
            unsetenv("FNQ_HOST_GRAPH");
            struct owner_map om = {s.n, na, owner};
            struct fnq_comm comm = {&om, fwd, rev};
            if (mode == 1)
                CHECK_OK(fnq_ctx_set_comm(g, &comm));
            double e1, v1[6], *f1 = malloc(sizeof(double) * 3 * (size_t)na);
            CHECK_OK(fnq_ctx_compute_graph(g, s.n, na, pos, sp, ne, recv, send, NULL,
                                           mode == 1 ? NULL : owner + s.n, &e1, NULL, f1, v1,
                                           NULL));
            if (mode == 0) { /* ghosts folded onto owners: their rows are zeros */
                int zero = 1;
                for (int64_t i = 3 * s.n; i < 3 * na; i++)
                    zero &= f1[i] == 0.0;
                CHECK(zero, "owner map: ghost force rows are not zero");
                gpu_e = e1;
                memcpy(gpu_f, f1, sizeof(double) * 3 * (size_t)na);
            }
            if (mode == 2)
                CHECK(e1 == gpu_e && memcmp(gpu_f, f1, sizeof(double) * 3 * (size_t)na) == 0,
                      "owner map: the graph built on the GPU and on the host give other results");
            fold_ghost_forces(f1, s.n, na, owner);
            double df = 0.0, fm = 0.0;
            for (int64_t i = 0; i < 3 * na; i++) {
                df = fmax(df, fabs(f1[i] - f0[i]));
                fm = fmax(fm, fabs(f0[i]));
            }
            const double de = fabs(e1 - e0) / fabs(e0);
            printf("ghost path (%lld owned, %lld ghosts) GPU %s, %s: |dE|/|E| %.2e, max|dF| %.2e\n",
                   (long long)s.n, (long long)(na - s.n), dt ? "float64" : "float32",
                   mode == 1 ? "comm callbacks" : mode ? "owner map, host graph" : "owner map",
                   de, df);
            CHECK(de <= (dt ? 1e-10 : 1e-6), "ghost path: energy differs by %.3e", de);
            CHECK(df <= (dt ? 1e-10 * fm : 1e-4), "ghost path: forces differ by %.3e", df);
            free(f1);
            fnq_ctx_free(g);
        }
    free(gpu_f);
    free(f0), free(pos), free(sp), free(owner), free(recv), free(send);
    test_structure_free(&s);
    fnq_ctx_free(cpu);
    fnq_model_free(m);
}

/* Periodic pairs within `reach` by brute force over images -1..1, shuffled: receivers, senders
 * and Cartesian shifts, as an ASE or matscipy list would give them (but in no order). */
static int64_t periodic_pairs(const struct test_structure *s, double reach, int64_t **recv,
                              int64_t **send, double **shift)
{
    struct test_pairs p;
    test_brute_pairs(s, reach, 0, &p);
    const int64_t n = p.n;
    for (int64_t q = n - 1; q > 0; q--) { /* Fisher-Yates with the tests' generator */
        const int64_t r = (int64_t)(test_rand() * (double)(q + 1)) % (q + 1);
        int64_t tmp = p.recv[q];
        p.recv[q] = p.recv[r], p.recv[r] = tmp;
        tmp = p.send[q];
        p.send[q] = p.send[r], p.send[r] = tmp;
        double ts[3];
        memcpy(ts, p.shift + 3 * q, sizeof(ts));
        memcpy(p.shift + 3 * q, p.shift + 3 * r, sizeof(ts));
        memcpy(p.shift + 3 * r, ts, sizeof(ts));
    }
    *recv = p.recv, *send = p.send, *shift = p.shift;
    return n;
}

/* Two CUDA contexts: c[0] builds a caller's graph on the GPU, c[1] on the host
 * (FNQ_HOST_GRAPH=1, read when a context is made) */
static void init_graph_pair(struct fnq_model *m, enum fnq_dtype dtype, struct fnq_ctx *c[2])
{
    CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CUDA, 0, dtype, &c[0]));
    setenv("FNQ_HOST_GRAPH", "1", 1);
    CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CUDA, 0, dtype, &c[1]));
    unsetenv("FNQ_HOST_GRAPH");
}

/* One fnq_ctx_compute_graph with the graph built on the GPU (c[0]) or the host (c[1]);
 * the status, and the message on failure */
static enum fnq_status graph_eval(struct fnq_ctx *c[2], int host, const struct test_structure *s,
                                  int64_t ne, const int64_t *recv, const int64_t *send,
                                  const double *shift, double *e, double *f, double *v,
                                  char *message, size_t message_len)
{
    enum fnq_status st = fnq_ctx_compute_graph(c[host], s->n, s->n, s->pos, s->species, ne, recv,
                                               send, shift, NULL, e, NULL, f, v, NULL);
    snprintf(message, message_len, "%s", st == FNQ_STATUS_OK ? "" : fnq_last_error());
    return st;
}

static void check_caller_list(const struct test_structure *si, int bad_lists)
{
    struct fnq_model *m = test_load_model("nequix-mp-1");
    int64_t *recv, *send;
    double *shift;
    const int64_t ne = periodic_pairs(si, fnq_model_cutoff(m) + 1.0, &recv, &send, &shift);
    double *f[2];
    char msg[2][1024];
    for (int dt = 0; dt < 2; dt++) {
        struct fnq_ctx *c[2];
        init_graph_pair(m, dt ? FNQ_DTYPE_F64 : FNQ_DTYPE_F32, c);
        double e[2], v[2][6];
        for (int host = 0; host < 2; host++) {
            f[host] = malloc(sizeof(double) * 3 * (size_t)si->n);
            CHECK_OK(graph_eval(c, host, si, ne, recv, send, shift, &e[host], f[host], v[host],
                                msg[host], sizeof(msg[host])));
        }
        /* the pairs kept on the GPU: repeating the call gives the same numbers */
        double e_rep, v_rep[6], *f_rep = malloc(sizeof(double) * 3 * (size_t)si->n);
        CHECK_OK(fnq_ctx_compute_graph_repeat(c[0], si->pos, &e_rep, NULL, f_rep, v_rep, NULL));
        CHECK(e_rep == e[0] && !memcmp(v_rep, v[0], sizeof(v_rep)) &&
                  !memcmp(f_rep, f[0], sizeof(double) * 3 * (size_t)si->n),
              "caller's list: fnq_ctx_compute_graph_repeat differs from the call it repeats");
        free(f_rep);
        const int same = e[0] == e[1] && memcmp(v[0], v[1], sizeof(v[0])) == 0 &&
                         memcmp(f[0], f[1], sizeof(double) * 3 * (size_t)si->n) == 0;
        int32_t nl = 0;
        fnq_ctx_last_kernel_launches(c[0], &nl);
        printf("caller's list (%lld atoms, %lld pairs, shuffled, cutoff + 1 A) %s: sorted on the GPU and on "
               "the host bitwise identical: %s (E = %.10f eV)\n",
               (long long)si->n, (long long)ne, dt ? "float64" : "float32", same ? "yes" : "NO", e[0]);
        CHECK(same, "caller's list: the GPU-built graph gives other results than the host's");
        free(f[0]), free(f[1]);
        fnq_ctx_free(c[0]), fnq_ctx_free(c[1]);
    }

    if (!bad_lists) {
        free(recv), free(send), free(shift);
        fnq_model_free(m);
        return;
    }
    /* bad lists: the GPU path reports what the host path reports, and the context recovers */
    struct fnq_ctx *c[2];
    init_graph_pair(m, FNQ_DTYPE_F32, c);
    int64_t kept = 0; /* a pair inside the cutoff */
    for (int64_t q = 0; q < ne; q++) {
        double d2 = 0.0;
        for (int k = 0; k < 3; k++) {
            const double d = si->pos[3 * send[q] + k] - si->pos[3 * recv[q] + k] + shift[3 * q + k];
            d2 += d * d;
        }
        if (d2 < 9.0) {
            kept = q;
            break;
        }
    }
    const char *expect[4] = {"receiver", "not full", "closer than", "more than the limit"};
    for (int bad = 0; bad < 4; bad++) {
        struct test_structure t = *si;
        double *pos = malloc(sizeof(double) * 3 * (size_t)si->n);
        memcpy(pos, si->pos, sizeof(double) * 3 * (size_t)si->n);
        t.pos = pos;
        int64_t *r = malloc(sizeof(int64_t) * (size_t)ne);
        memcpy(r, recv, sizeof(int64_t) * (size_t)ne);
        int64_t n_pairs = ne;
        if (bad == 0)
            r[ne / 2] = si->n; /* not an atom */
        if (bad == 1) {        /* one direction of a pair missing */
            memmove(r + kept, r + kept + 1, sizeof(int64_t) * (size_t)(ne - kept - 1));
            n_pairs = ne - 1;
        }
        if (bad == 2) /* atom 5 onto its neighbour 4 */
            for (int k = 0; k < 3; k++)
                pos[3 * 5 + k] = pos[3 * 4 + k] + 0.05;
        for (int host = 0; host < 2; host++)
            fnq_ctx_set_max_neighbors(c[host], bad == 3 ? 20 : 1024);
        /* the send array shifted alike for the removed pair */
        int64_t *sd = malloc(sizeof(int64_t) * (size_t)ne);
        double *sh = malloc(sizeof(double) * 3 * (size_t)ne);
        memcpy(sd, send, sizeof(int64_t) * (size_t)ne);
        memcpy(sh, shift, sizeof(double) * 3 * (size_t)ne);
        if (bad == 1) {
            memmove(sd + kept, sd + kept + 1, sizeof(int64_t) * (size_t)(ne - kept - 1));
            memmove(sh + 3 * kept, sh + 3 * (kept + 1), sizeof(double) * 3 * (size_t)(ne - kept - 1));
        }
        enum fnq_status st[2];
        double e0, v0[6];
        double *ff = malloc(sizeof(double) * 3 * (size_t)si->n);
        for (int host = 0; host < 2; host++)
            st[host] = graph_eval(c, host, &t, n_pairs, r, sd, sh, &e0, ff, v0, msg[host],
                                  sizeof(msg[host]));
        printf("bad list %d (GPU path): %s\n", bad, msg[0]);
        CHECK(st[0] == FNQ_STATUS_INVALID_ARG && st[0] == st[1] && strcmp(msg[0], msg[1]) == 0 &&
                  strstr(msg[0], expect[bad]),
              "bad list %d: GPU path said \"%s\", host path \"%s\" (expected \"%s\")", bad, msg[0],
              msg[1], expect[bad]);
        free(ff), free(sd), free(sh), free(r), free(pos);
    }
    fnq_ctx_set_max_neighbors(c[0], 1024);
    double e, v[6], *ff = malloc(sizeof(double) * 3 * (size_t)si->n);
    CHECK(graph_eval(c, 0, si, ne, recv, send, shift, &e, ff, v, msg[0], sizeof(msg[0])) ==
              FNQ_STATUS_OK,
          "the context did not recover after bad lists: %s", msg[0]);
    free(ff);
    fnq_ctx_free(c[0]), fnq_ctx_free(c[1]);
    free(recv), free(send), free(shift);
    fnq_model_free(m);
}

/* The periodic path's limits, checked on the GPU (kernels/graph/atom_limits.cu), stop with the
 * messages the CPU context gives (its host builder words them), and the context recovers */
static void check_periodic_limits(const struct test_structure *si)
{
    struct fnq_model *m = test_load_model("nequix-mp-1");
    struct fnq_ctx *c[2];
    CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CUDA, 0, FNQ_DTYPE_F32, &c[0]));
    CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CPU, 0, FNQ_DTYPE_F32, &c[1]));
    const char *expect[2] = {"closer than", "more than the limit"};
    double *pos = malloc(sizeof(double) * 3 * (size_t)si->n);
    double *f = malloc(sizeof(double) * 3 * (size_t)si->n);
    double e, v[6];
    char msg[2][1024];
    for (int bad = 0; bad < 2; bad++) {
        memcpy(pos, si->pos, sizeof(double) * 3 * (size_t)si->n);
        if (bad == 0) /* atom 5 onto its neighbour 4 */
            for (int k = 0; k < 3; k++)
                pos[3 * 5 + k] = pos[3 * 4 + k] + 0.05;
        enum fnq_status st[2];
        for (int k = 0; k < 2; k++) {
            fnq_ctx_set_max_neighbors(c[k], bad == 1 ? 20 : 1024);
            st[k] = fnq_ctx_compute_periodic(c[k], si->n, pos, si->species, si->cell, si->pbc, &e,
                                             NULL, f, v);
            snprintf(msg[k], sizeof(msg[k]), "%s", st[k] == FNQ_STATUS_OK ? "" : fnq_last_error());
        }
        printf("periodic limits %d (GPU): %s\n", bad, msg[0]);
        CHECK(st[0] == FNQ_STATUS_INVALID_ARG && st[0] == st[1] && strcmp(msg[0], msg[1]) == 0 &&
                  strstr(msg[0], expect[bad]),
              "periodic limits %d: GPU said \"%s\", CPU \"%s\" (expected \"%s\")", bad, msg[0],
              msg[1], expect[bad]);
    }
    fnq_ctx_set_max_neighbors(c[0], 1024);
    CHECK(fnq_ctx_compute_periodic(c[0], si->n, si->pos, si->species, si->cell, si->pbc, &e, NULL,
                                   f, v) == FNQ_STATUS_OK,
          "the context did not recover after broken limits: %s", fnq_last_error());
    free(pos), free(f);
    fnq_ctx_free(c[0]), fnq_ctx_free(c[1]);
    fnq_model_free(m);
}

static void check_out_of_memory(void)
{
    struct fnq_model *m = test_load_model("nequix-mp-1");
    struct fnq_ctx *c;
    CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CUDA, 0, FNQ_DTYPE_F32, &c));
    struct test_structure big, small;
    test_diamond(&big, m, 70, 0.0); /* 2.7 million atoms: more than any GPU of today holds */
    double e;
    enum fnq_status st = fnq_ctx_compute_periodic(c, big.n, big.pos, big.species, big.cell,
                                                  big.pbc, &e, NULL, NULL, NULL);
    printf("%lld atoms on the GPU: %s: %s\n", (long long)big.n, fnq_status_string(st),
           fnq_last_error());
    CHECK(st == FNQ_STATUS_OUT_OF_MEMORY && strstr(fnq_last_error(), "GPU out of memory"),
          "an oversized system did not fail with a clear out-of-memory message");
    CHECK(strstr(fnq_last_error(), "MB free of") && strstr(fnq_last_error(), "MB of GPU buffers"),
          "the out-of-memory message names no free memory or no total for the system");
    test_diamond(&small, m, 2, 0.1);
    st = fnq_ctx_compute_periodic(c, small.n, small.pos, small.species, small.cell, small.pbc, &e,
                                  NULL, NULL, NULL);
    CHECK(st == FNQ_STATUS_OK, "the context did not recover after out-of-memory: %s",
          fnq_last_error());
    test_structure_free(&big), test_structure_free(&small);
    fnq_ctx_free(c);
    fnq_model_free(m);
}

/* --no-oom: leave out the deliberate out-of-memory case (scripts/gpu/gpu-sanitize.sh: under
 * compute-sanitizer every refused cudaMalloc is reported as an error, wanted or not) */
int main(int argc, char **argv)
{
    const int oom_case = !(argc > 1 && !strcmp(argv[1], "--no-oom"));
    test_require_gpu();
    struct fnq_model *m = test_load_model("nequix-mp-1");
    struct test_structure si, tri;
    test_diamond(&si, m, 8, 0.1);
    const int32_t pbc[3] = {1, 1, 1};
    const int32_t kinds[7] = {test_species(m, "Li"), test_species(m, "O"), test_species(m, "Fe"),
                              test_species(m, "P"), test_species(m, "Si"), test_species(m, "Mg"),
                              test_species(m, "Al")};
    const double cell[9] = {13.0, 0.0, 0.0, 2.4, 12.1, 0.0, -1.9, 1.7, 12.6};
    test_random_structure(&tri, 180, cell, pbc, kinds, 7, 1.9);
    struct test_structure small;
    test_diamond(&small, m, 4, 0.1);
    fnq_model_free(m);

    check_model("nequix-mp-1", &si, &tri);
    check_model("nequix-omat-1", &si, &tri);
    check_published();
    check_determinism_and_launches(&si);
    check_ghost_path();
    check_caller_list(&small, 1);
    check_caller_list(&tri, 0);
    check_periodic_limits(&small);
    test_structure_free(&small);
    if (oom_case)
        check_out_of_memory();
    else
        printf("out-of-memory case left out (--no-oom)\n");
    test_structure_free(&si), test_structure_free(&tri);
    return test_finish("gpu");
}
