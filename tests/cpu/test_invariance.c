/*
 * test_invariance.c: the energy is invariant and forces, stress and per-atom energies transform
 * correctly under a random rotation, a translation and a permutation of the atoms (float64,
 * nequix-mp-1), for a periodic triclinic cell and for a molecule. Tolerance 1e-10, relative to
 * the largest value of each quantity. Also checks that repeated evaluations are bitwise equal.
 */
#include "fnq_test.h"

/* random rotation from a random unit quaternion */
static void random_rotation(double R[3][3])
{
    double q[4], n = 0.0;
    for (int k = 0; k < 4; k++) {
        q[k] = test_rand() - 0.5;
        n += q[k] * q[k];
    }
    n = sqrt(n);
    for (int k = 0; k < 4; k++)
        q[k] /= n;
    double w = q[0], x = q[1], y = q[2], z = q[3];
    double M[3][3] = {{1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)},
                      {2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)},
                      {2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)}};
    memcpy(R, M, sizeof(M));
}

static void rotate(const double R[3][3], const double *v, double *out)
{
    for (int a = 0; a < 3; a++)
        out[a] = R[a][0] * v[0] + R[a][1] * v[1] + R[a][2] * v[2];
}

static double max_abs(const double *v, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (fabs(v[i]) > m)
            m = fabs(v[i]);
    return m;
}

static void voigt_to_3x3(const double *v, double S[3][3])
{
    S[0][0] = v[0], S[1][1] = v[1], S[2][2] = v[2];
    S[1][2] = S[2][1] = v[3], S[0][2] = S[2][0] = v[4], S[0][1] = S[1][0] = v[5];
}

static void check(struct fnq_ctx *ctx, const char *label, const struct test_structure *s)
{
    const int64_t n = s->n;
    double e0, e1, v0[6], v1[6];
    double *f0 = malloc(sizeof(double) * 3 * (size_t)n), *f1 = malloc(sizeof(double) * 3 * (size_t)n);
    double *a0 = malloc(sizeof(double) * (size_t)n), *a1 = malloc(sizeof(double) * (size_t)n);
    const double *cell = s->has_cell ? s->cell : NULL;
    CHECK_OK(fnq_ctx_compute_periodic(ctx, n, s->pos, s->species, cell, s->pbc, &e0, a0, f0, v0));

    /* repeated evaluation: bitwise identical */
    CHECK_OK(fnq_ctx_compute_periodic(ctx, n, s->pos, s->species, cell, s->pbc, &e1, a1, f1, v1));
    CHECK(e0 == e1 && memcmp(f0, f1, sizeof(double) * 3 * (size_t)n) == 0 &&
              memcmp(v0, v1, sizeof(v0)) == 0,
          "%s: repeated evaluation is not bitwise identical", label);

    /* transformed copy: x' = R x + t, atoms in a random order, cell rows rotated */
    double R[3][3], t[3] = {3.7 * test_rand() - 1.0, -2.2 * test_rand(), 5.1 * test_rand()};
    random_rotation(R);
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(test_rand() * (double)(i + 1));
        int64_t tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    struct test_structure r = *s;
    r.pos = malloc(sizeof(double) * 3 * (size_t)n);
    r.species = malloc(sizeof(int32_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        rotate(R, s->pos + 3 * perm[i], r.pos + 3 * i);
        for (int k = 0; k < 3; k++)
            r.pos[3 * i + k] += t[k];
        r.species[i] = s->species[perm[i]];
    }
    for (int a = 0; a < 3; a++)
        rotate(R, s->cell + 3 * a, r.cell + 3 * a);
    CHECK_OK(fnq_ctx_compute_periodic(ctx, n, r.pos, r.species, s->has_cell ? r.cell : NULL,
                                      r.pbc, &e1, a1, f1, v1));

    double de = fabs(e1 - e0) / fabs(e0);
    double fscale = max_abs(f0, 3 * n), escale = max_abs(a0, n), df = 0.0, da = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double fr[3];
        rotate(R, f0 + 3 * perm[i], fr);
        for (int k = 0; k < 3; k++)
            df = fmax(df, fabs(f1[3 * i + k] - fr[k]));
        da = fmax(da, fabs(a1[i] - a0[perm[i]]));
    }
    /* virial: W' = R W R^T */
    double W0[3][3], W1[3][3], dv = 0.0;
    voigt_to_3x3(v0, W0);
    voigt_to_3x3(v1, W1);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            double w = 0.0;
            for (int c = 0; c < 3; c++)
                for (int d = 0; d < 3; d++)
                    w += R[a][c] * W0[c][d] * R[b][d];
            dv = fmax(dv, fabs(W1[a][b] - w));
        }
    double vscale = max_abs(v0, 6);
    printf("%s: |dE|/|E| = %.2e, max|dF|/max|F| = %.2e, max|de_i|/max|e_i| = %.2e, "
           "max|dW|/max|W| = %.2e\n",
           label, de, df / fscale, da / escale, dv / vscale);
    CHECK(de <= 1e-10, "%s: energy changed by %.3e relative", label, de);
    CHECK(df <= 1e-10 * fscale, "%s: forces not covariant: %.3e (max |F| %.3e)", label, df, fscale);
    CHECK(da <= 1e-10 * escale, "%s: per-atom energies not permuted: %.3e", label, da);
    CHECK(dv <= 1e-10 * vscale, "%s: virial not covariant: %.3e (max %.3e)", label, dv, vscale);
    free(f0), free(f1), free(a0), free(a1), free(perm), free(r.pos), free(r.species);
}

int main(void)
{
    struct fnq_model *m = test_load_model("nequix-mp-1");
    struct fnq_ctx *ctx;
    CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CPU, 0, FNQ_DTYPE_F64, &ctx));
    const int32_t pbc[3] = {1, 1, 1};
    const int32_t kinds[4] = {test_species(m, "Mg"), test_species(m, "Al"), test_species(m, "Si"),
                              test_species(m, "O")};
    const double cell[9] = {7.9, 0.0, 0.0, -1.6, 7.2, 0.0, 0.9, 1.4, 8.3};
    struct test_structure s1, s2;
    test_random_structure(&s1, 24, cell, pbc, kinds, 4, 2.0);
    check(ctx, "periodic triclinic", &s1);
    test_random_structure(&s2, 10, NULL, NULL, kinds, 4, 1.6);
    check(ctx, "molecule", &s2);
    test_structure_free(&s1), test_structure_free(&s2);
    fnq_ctx_free(ctx);
    fnq_model_free(m);
    return test_finish("invariance");
}
