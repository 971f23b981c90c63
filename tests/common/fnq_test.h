/*
 * fnq_test.h: helpers for the C tests (and C++/CUDA ones: the allocations are cast): model
 * lookup with a clean skip, a deterministic random generator, structure builders and a check
 * macro that counts failures.
 * Tests return 0 (pass), 1 (fail) or 77 (skipped: CTest's SKIP_RETURN_CODE).
 */
#pragma once

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fnq.h"

static int fnq_test_failures;

#define CHECK(cond, ...)                                                                        \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fnq_test_failures++;                                                                \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                \
            fprintf(stderr, __VA_ARGS__);                                                       \
            fprintf(stderr, "\n");                                                              \
        }                                                                                       \
    } while (0)

#define CHECK_OK(expr)                                                                          \
    do {                                                                                        \
        enum fnq_status st_ = (expr);                                                           \
        if (st_ != FNQ_STATUS_OK) {                                                             \
            fprintf(stderr, "FAIL %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #expr,            \
                    fnq_status_string(st_), fnq_last_error());                                  \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

/* Exit 77 (skip) where this build has no CUDA backend or the machine no GPU. A GPU that is
 * there but will not take a context is a failure, not a skip: the caller then checks
 * fnq_ctx_init like any other call (gpu_vs_cpu once skipped on a 4-GPU machine, and the skip
 * kept its reason out of ctest's output: bench/NOTES.md 2026-11-26). */
static void test_require_gpu(void)
{
    if (fnq_cuda_device_count() < 1) {
        printf("SKIP: no usable GPU (this build has %s, %d CUDA device(s) seen)\n",
               fnq_backend_count() > 1 ? "the CUDA backend" : "no CUDA backend",
               (int)fnq_cuda_device_count());
        exit(77);
    }
}

/* Load a model by name or exit 77 (skip) with a message saying where it was looked for. */
static struct fnq_model *test_load_model(const char *name)
{
    char path[4096];
    if (fnq_model_find(name, path, sizeof(path)) != FNQ_STATUS_OK) {
        printf("SKIP: %s\n", fnq_last_error());
        exit(77);
    }
    struct fnq_model *m;
    CHECK_OK(fnq_model_load(path, &m));
    return m;
}

static uint64_t test_rng_state = 0x853c49e6748fea9bULL;
static double test_rand(void) /* uniform in [0, 1), splitmix64 */
{
    uint64_t z = (test_rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

struct test_structure {
    int64_t n;
    double *pos;
    int32_t *species;
    double cell[9];
    int32_t pbc[3];
    int has_cell;
};

static void test_structure_free(struct test_structure *s)
{
    free(s->pos);
    free(s->species);
}

static double test_min_image_distance(const struct test_structure *s, const double *x, int64_t upto)
{
    double best = INFINITY;
    for (int64_t j = 0; j < upto; j++)
        for (int a = -1; a <= 1; a++)
            for (int b = -1; b <= 1; b++)
                for (int c = -1; c <= 1; c++) {
                    if (!s->has_cell && (a || b || c))
                        continue;
                    int sh[3] = {a, b, c};
                    int skip = 0;
                    for (int k = 0; k < 3; k++)
                        if (sh[k] && !s->pbc[k])
                            skip = 1;
                    if (skip)
                        continue;
                    double d2 = 0;
                    for (int k = 0; k < 3; k++) {
                        double r = s->pos[3 * j + k] - x[k] + a * s->cell[k] + b * s->cell[3 + k] +
                                   c * s->cell[6 + k];
                        d2 += r * r;
                    }
                    if (d2 < best)
                        best = d2;
                }
    return sqrt(best);
}

/* Random atoms in a cell (fractional uniform) or a box, at least min_dist apart. */
static void test_random_structure(struct test_structure *s, int64_t n, const double *cell,
                                  const int32_t *pbc, const int32_t *kinds, int n_kinds,
                                  double min_dist)
{
    memset(s, 0, sizeof(*s));
    s->n = n;
    s->pos = (double *)calloc((size_t)n * 3, sizeof(double));
    s->species = (int32_t *)calloc((size_t)n, sizeof(int32_t));
    s->has_cell = cell != NULL;
    if (cell) {
        memcpy(s->cell, cell, sizeof(s->cell));
        memcpy(s->pbc, pbc, sizeof(s->pbc));
    }
    double box = cbrt((double)n) * min_dist * 1.3;
    for (int64_t i = 0; i < n; i++) {
        for (int attempt = 0; attempt < 100000; attempt++) {
            double x[3];
            if (cell) {
                double f[3] = {test_rand(), test_rand(), test_rand()};
                for (int k = 0; k < 3; k++)
                    x[k] = f[0] * cell[k] + f[1] * cell[3 + k] + f[2] * cell[6 + k];
            } else {
                for (int k = 0; k < 3; k++)
                    x[k] = box * test_rand();
            }
            if (test_min_image_distance(s, x, i) >= min_dist) {
                memcpy(s->pos + 3 * i, x, sizeof(x));
                break;
            }
        }
        s->species[i] = kinds[i % n_kinds];
    }
}

static double test_volume(const double *c)
{
    return fabs(c[0] * (c[4] * c[8] - c[5] * c[7]) - c[1] * (c[3] * c[8] - c[5] * c[6]) +
                c[2] * (c[3] * c[7] - c[4] * c[6]));
}

static int32_t test_species(const struct fnq_model *m, const char *sym)
{
    int32_t t = fnq_model_species_index(m, sym);
    if (t < 0) {
        fprintf(stderr, "FAIL: model lacks %s\n", sym);
        exit(1);
    }
    return t;
}

/* Diamond Si supercell (a = 5.43 A), rep^3 cells of 8 atoms, rattled by +-rattle/2 A. */
static void test_diamond(struct test_structure *s, const struct fnq_model *m, int rep,
                         double rattle)
{
    static const double b[8][3] = {{0, 0, 0},          {0, 0.5, 0.5},      {0.5, 0, 0.5},
                                   {0.5, 0.5, 0},      {0.25, 0.25, 0.25}, {0.25, 0.75, 0.75},
                                   {0.75, 0.25, 0.75}, {0.75, 0.75, 0.25}};
    const double a = 5.43;
    memset(s, 0, sizeof(*s));
    s->n = 8LL * rep * rep * rep;
    s->pos = (double *)malloc(sizeof(double) * 3 * (size_t)s->n);
    s->species = (int32_t *)malloc(sizeof(int32_t) * (size_t)s->n);
    int64_t k = 0;
    for (int x = 0; x < rep; x++)
        for (int y = 0; y < rep; y++)
            for (int z = 0; z < rep; z++)
                for (int q = 0; q < 8; q++, k++) {
                    const int c[3] = {x, y, z};
                    for (int d = 0; d < 3; d++)
                        s->pos[3 * k + d] = a * (c[d] + b[q][d]) + rattle * (test_rand() - 0.5);
                    s->species[k] = test_species(m, "Si");
                }
    s->cell[0] = s->cell[4] = s->cell[8] = a * rep;
    s->pbc[0] = s->pbc[1] = s->pbc[2] = 1;
    s->has_cell = 1;
}

struct test_pairs {
    int64_t n;
    int64_t *recv, *send;
    double *shift; /* NULL: in-cell pairs only */
};

/* All pairs within `reach` over images -1..1 (in_cell: image 0 only, no shift array): a full
 * list with pairs beyond the cutoff, as a caller with a skin has it. */
static void test_brute_pairs(const struct test_structure *s, double reach, int in_cell,
                             struct test_pairs *p)
{
    const int64_t cap = s->n * s->n * (in_cell ? 1 : 27);
    p->recv = (int64_t *)malloc(sizeof(int64_t) * (size_t)cap);
    p->send = (int64_t *)malloc(sizeof(int64_t) * (size_t)cap);
    p->shift = in_cell ? NULL : (double *)malloc(sizeof(double) * 3 * (size_t)cap);
    const int m = in_cell ? 0 : 1;
    p->n = 0;
    for (int64_t i = 0; i < s->n; i++)
        for (int64_t j = 0; j < s->n; j++)
            for (int a = -m; a <= m; a++)
                for (int b = -m; b <= m; b++)
                    for (int c = -m; c <= m; c++) {
                        double t[3], d2 = 0.0;
                        for (int k = 0; k < 3; k++) {
                            t[k] = a * s->cell[k] + b * s->cell[3 + k] + c * s->cell[6 + k];
                            const double d = s->pos[3 * j + k] - s->pos[3 * i + k] + t[k];
                            d2 += d * d;
                        }
                        if (d2 >= reach * reach || (i == j && !a && !b && !c))
                            continue;
                        p->recv[p->n] = i, p->send[p->n] = j;
                        if (p->shift)
                            memcpy(p->shift + 3 * p->n, t, sizeof(t));
                        p->n++;
                    }
}

static void test_pairs_free(struct test_pairs *p)
{
    free(p->recv), free(p->send), free(p->shift);
}

static int test_finish(const char *name)
{
    if (fnq_test_failures) {
        printf("%s: %d check(s) failed\n", name, fnq_test_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}
