/*
 * test_float32.c: float32 evaluation agrees with float64 on a 64-atom cell (rattled diamond Si
 * with some atoms swapped for C and Ge, nequix-mp-1): energy within 1e-5 relative, forces
 * within 1e-4 eV/A, per-atom energies within 1e-5 relative of the total per atom. Both ways
 * float32 takes its radial weights: the tables (the default) and the exact MLP (FNQ_RADIAL=
 * exact). The two must differ (else the tables did not run) and agree to float32's bars with
 * each other. The tables' second path, weights recomputed in the backward pass instead of kept
 * from the forward (FNQ_CPU_PAIR_MB=0), must give the same bits.
 */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include "fnq_test.h"

struct result {
    double e, f[64 * 3], a[64], v[6];
};

static void run(struct fnq_model *m, enum fnq_dtype dt, const char *radial, const char *pair_mb,
                int64_t n, const double *pos, const int32_t *species, const double *cell,
                struct result *r)
{
    const int32_t pbc[3] = {1, 1, 1};
    if (radial)
        setenv("FNQ_RADIAL", radial, 1);
    else
        unsetenv("FNQ_RADIAL");
    if (pair_mb)
        setenv("FNQ_CPU_PAIR_MB", pair_mb, 1);
    else
        unsetenv("FNQ_CPU_PAIR_MB");
    struct fnq_ctx *c; /* options are read when a context is made */
    CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CPU, 0, dt, &c));
    CHECK(fnq_ctx_dtype(c) == dt, "context dtype is not the one asked for");
    CHECK_OK(fnq_ctx_compute_periodic(c, n, pos, species, cell, pbc, &r->e, r->a, r->f, r->v));
    fnq_ctx_free(c);
}

/* checks b against the float64 reference a; returns max |dF| */
static double compare(const char *what, const struct result *a, const struct result *b,
                      int64_t n)
{
    double de = fabs(b->e - a->e) / fabs(a->e), df = 0.0, dv = 0.0, da = 0.0;
    for (int64_t i = 0; i < 3 * n; i++)
        df = fmax(df, fabs(b->f[i] - a->f[i]));
    for (int64_t i = 0; i < n; i++)
        da = fmax(da, fabs(b->a[i] - a->a[i]));
    for (int q = 0; q < 6; q++)
        dv = fmax(dv, fabs(b->v[q] - a->v[q]));
    printf("%s, 64 atoms: E %.8f vs %.8f (rel %.2e), max|dF| = %.2e eV/A, max|de_i| = %.2e eV, "
           "max|dW| = %.2e eV\n",
           what, b->e, a->e, de, df, da, dv);
    CHECK(de <= 1e-5, "%s: energy differs by %.3e relative", what, de);
    CHECK(df <= 1e-4, "%s: forces differ by %.3e eV/A", what, df);
    CHECK(da <= 1e-5 * fabs(a->e) / (double)n, "%s: per-atom energies differ by %.3e eV", what,
          da);
    return df;
}

int main(void)
{
    struct fnq_model *m = test_load_model("nequix-mp-1");

    /* 2x2x2 conventional diamond cells (a = 5.43), rattled by up to 0.1 A */
    const double a = 5.43;
    const double basis[8][3] = {{0, 0, 0},          {0, 0.5, 0.5},  {0.5, 0, 0.5},
                                {0.5, 0.5, 0},      {0.25, 0.25, 0.25}, {0.25, 0.75, 0.75},
                                {0.75, 0.25, 0.75}, {0.75, 0.75, 0.25}};
    const int64_t n = 64;
    double pos[64 * 3], cell[9] = {2 * a, 0, 0, 0, 2 * a, 0, 0, 0, 2 * a};
    int32_t species[64];
    int64_t k = 0;
    for (int x = 0; x < 2; x++)
        for (int y = 0; y < 2; y++)
            for (int z = 0; z < 2; z++)
                for (int b = 0; b < 8; b++, k++) {
                    pos[3 * k + 0] = a * (x + basis[b][0]) + 0.2 * (test_rand() - 0.5);
                    pos[3 * k + 1] = a * (y + basis[b][1]) + 0.2 * (test_rand() - 0.5);
                    pos[3 * k + 2] = a * (z + basis[b][2]) + 0.2 * (test_rand() - 0.5);
                    species[k] = test_species(m, k % 7 == 3 ? "C" : (k % 11 == 5 ? "Ge" : "Si"));
                }
    static struct result r64, table, exact, recomputed;
    run(m, FNQ_DTYPE_F64, NULL, NULL, n, pos, species, cell, &r64);
    run(m, FNQ_DTYPE_F32, NULL, NULL, n, pos, species, cell, &table);
    run(m, FNQ_DTYPE_F32, "exact", NULL, n, pos, species, cell, &exact);
    run(m, FNQ_DTYPE_F32, NULL, "0", n, pos, species, cell, &recomputed);
    unsetenv("FNQ_CPU_PAIR_MB");

    compare("float32 (radial tables) vs float64", &r64, &table, n);
    compare("float32 (exact radial MLP) vs float64", &r64, &exact, n);
    const double df = compare("float32 tables vs float32 exact MLP", &exact, &table, n);
    CHECK(table.e != exact.e || df > 0.0,
          "the tables and the exact MLP gave the same bits: the tables did not run");
    CHECK(!memcmp(&table, &recomputed, sizeof(table)),
          "weights recomputed in the backward pass (FNQ_CPU_PAIR_MB=0) changed the result");
    fnq_model_free(m);
    return test_finish("float32");
}
