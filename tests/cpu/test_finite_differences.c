/*
 * test_finite_differences.c: forces and stress from the hand-written backward pass equal
 * finite differences of the energy (5-point stencil, float64), for nequix-omat-1 on
 *   - a periodic triclinic cell with 5 elements and 32 atoms,
 *   - a cell smaller than twice the cutoff (several images of each neighbour),
 *   - a molecule without a cell.
 * Pass: max |F - F_fd| <= 1e-6 max |F| and the same for the stress.
 */
#include "fnq_test.h"

static struct fnq_ctx *ctx;

static double energy_of(const struct test_structure *s, const double *pos, const double *cell)
{
    double e;
    CHECK_OK(fnq_ctx_compute_periodic(ctx, s->n, pos, s->species, s->has_cell ? cell : NULL,
                                      s->pbc, &e, NULL, NULL, NULL));
    return e;
}

static double stencil(double fm2, double fm1, double fp1, double fp2, double h)
{
    return (fm2 - 8.0 * fm1 + 8.0 * fp1 - fp2) / (12.0 * h);
}

/* energy after the symmetric strain eps (Voigt component v, size t) */
static double strained_energy(const struct test_structure *s, int v, double t)
{
    static const int ia[6] = {0, 1, 2, 1, 0, 0}, ib[6] = {0, 1, 2, 2, 2, 1};
    double E[3][3] = {{0}};
    if (ia[v] == ib[v])
        E[ia[v]][ib[v]] = t;
    else
        E[ia[v]][ib[v]] = E[ib[v]][ia[v]] = 0.5 * t;
    double *pos = malloc(sizeof(double) * 3 * (size_t)s->n), cell[9];
    for (int64_t i = 0; i < s->n; i++)
        for (int k = 0; k < 3; k++) {
            double x = s->pos[3 * i + k];
            for (int j = 0; j < 3; j++)
                x += s->pos[3 * i + j] * E[j][k];
            pos[3 * i + k] = x;
        }
    for (int a = 0; a < 3; a++)
        for (int k = 0; k < 3; k++) {
            double x = s->cell[3 * a + k];
            for (int j = 0; j < 3; j++)
                x += s->cell[3 * a + j] * E[j][k];
            cell[3 * a + k] = x;
        }
    double e = energy_of(s, pos, cell);
    free(pos);
    return e;
}

static void check_structure(const char *label, const struct test_structure *s, int n_check)
{
    double *forces = malloc(sizeof(double) * 3 * (size_t)s->n), virial[6], e0;
    CHECK_OK(fnq_ctx_compute_periodic(ctx, s->n, s->pos, s->species, s->has_cell ? s->cell : NULL,
                                      s->pbc, &e0, NULL, forces, virial));
    const double h = 1e-3;
    double *pos = malloc(sizeof(double) * 3 * (size_t)s->n);
    memcpy(pos, s->pos, sizeof(double) * 3 * (size_t)s->n);
    double fmax = 0.0, err = 0.0;
    for (int64_t i = 0; i < 3 * s->n; i++)
        if (fabs(forces[i]) > fmax)
            fmax = fabs(forces[i]);
    /* atoms spread over the structure: every (n / n_check)-th one */
    int64_t stride = s->n / n_check > 0 ? s->n / n_check : 1;
    for (int64_t i = 0; i < s->n; i += stride)
        for (int k = 0; k < 3; k++) {
            double x0 = pos[3 * i + k], f[4];
            const double steps[4] = {-2 * h, -h, h, 2 * h};
            for (int q = 0; q < 4; q++) {
                pos[3 * i + k] = x0 + steps[q];
                f[q] = energy_of(s, pos, s->cell);
            }
            pos[3 * i + k] = x0;
            double fd = -stencil(f[0], f[1], f[2], f[3], h);
            double d = fabs(fd - forces[3 * i + k]);
            if (d > err)
                err = d;
        }
    printf("%s: %lld atoms, E = %.10f eV, max |F| = %.4f eV/A, max |F - F_fd| = %.3e (rel %.2e)\n",
           label, (long long)s->n, e0, fmax, err, err / fmax);
    CHECK(err <= 1e-6 * fmax, "%s: forces differ from finite differences by %.3e (max |F| %.3e)",
          label, err, fmax);

    if (s->has_cell) {
        double vol = test_volume(s->cell), smax = 0.0, serr = 0.0;
        for (int v = 0; v < 6; v++) {
            double st = -virial[v] / vol;
            double fd = stencil(strained_energy(s, v, -2 * h), strained_energy(s, v, -h),
                                strained_energy(s, v, h), strained_energy(s, v, 2 * h), h) /
                        vol;
            if (fabs(st) > smax)
                smax = fabs(st);
            if (fabs(st - fd) > serr)
                serr = fabs(st - fd);
        }
        printf("%s: max |stress| = %.6e eV/A^3, max |stress - fd| = %.3e (rel %.2e)\n", label, smax,
               serr, serr / smax);
        CHECK(serr <= 1e-6 * smax, "%s: stress differs from finite differences by %.3e (max %.3e)",
              label, serr, smax);
    }
    free(forces);
    free(pos);
}

int main(void)
{
    struct fnq_model *m = test_load_model("nequix-omat-1");
    CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CPU, 0, FNQ_DTYPE_F64, &ctx));
    const int32_t pbc[3] = {1, 1, 1};

    /* 1. triclinic periodic cell, 5 elements, 32 atoms */
    const int32_t kinds1[5] = {test_species(m, "Li"), test_species(m, "O"), test_species(m, "Fe"),
                               test_species(m, "P"), test_species(m, "Si")};
    const double cell1[9] = {9.0, 0.0, 0.0, 2.1, 8.6, 0.0, -1.3, 1.7, 9.4};
    struct test_structure s1;
    test_random_structure(&s1, 32, cell1, pbc, kinds1, 5, 2.0);
    check_structure("triclinic 32 atoms", &s1, 8);

    /* 2. a cell far smaller than twice the 6 A cutoff */
    const int32_t kinds2[3] = {test_species(m, "Si"), test_species(m, "O"), test_species(m, "Al")};
    const double cell2[9] = {3.9, 0.0, 0.0, 0.8, 3.7, 0.0, 0.5, -0.6, 4.1};
    struct test_structure s2;
    test_random_structure(&s2, 3, cell2, pbc, kinds2, 3, 1.9);
    check_structure("small cell", &s2, 3);

    /* 3. a molecule without a cell */
    const int32_t kinds3[4] = {test_species(m, "C"), test_species(m, "H"), test_species(m, "N"),
                               test_species(m, "O")};
    struct test_structure s3;
    test_random_structure(&s3, 12, NULL, NULL, kinds3, 4, 1.1);
    check_structure("molecule", &s3, 12);

    test_structure_free(&s1), test_structure_free(&s2), test_structure_free(&s3);
    fnq_ctx_free(ctx);
    fnq_model_free(m);
    return test_finish("finite differences");
}
