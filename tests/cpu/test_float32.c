/*
 * test_float32.c: float32 evaluation agrees with float64 on a 64-atom cell (rattled diamond Si
 * with some atoms swapped for C and Ge, nequix-mp-1): energy within 1e-5 relative, forces
 * within 1e-4 eV/A, per-atom energies within 1e-5 relative of the total per atom.
 */
#include "fnq_test.h"

int main(void)
{
    struct fnq_model *m = test_load_model("nequix-mp-1");
    struct fnq_ctx *c64, *c32;
    CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CPU, 0, FNQ_DTYPE_F64, &c64));
    CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CPU, 0, FNQ_DTYPE_F32, &c32));
    CHECK(fnq_ctx_dtype(c32) == FNQ_DTYPE_F32, "context dtype is not float32");

    /* 2x2x2 conventional diamond cells (a = 5.43), rattled by up to 0.1 A */
    const double a = 5.43;
    const double basis[8][3] = {{0, 0, 0},          {0, 0.5, 0.5},  {0.5, 0, 0.5},
                                {0.5, 0.5, 0},      {0.25, 0.25, 0.25}, {0.25, 0.75, 0.75},
                                {0.75, 0.25, 0.75}, {0.75, 0.75, 0.25}};
    const int64_t n = 64;
    double pos[64 * 3], cell[9] = {2 * a, 0, 0, 0, 2 * a, 0, 0, 0, 2 * a};
    int32_t species[64], pbc[3] = {1, 1, 1};
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
    double e64, e32, f64[64 * 3], f32[64 * 3], a64[64], a32[64], v64[6], v32[6];
    CHECK_OK(fnq_ctx_compute_periodic(c64, n, pos, species, cell, pbc, &e64, a64, f64, v64));
    CHECK_OK(fnq_ctx_compute_periodic(c32, n, pos, species, cell, pbc, &e32, a32, f32, v32));
    double de = fabs(e32 - e64) / fabs(e64), df = 0.0, dv = 0.0, da = 0.0;
    for (int64_t i = 0; i < 3 * n; i++)
        df = fmax(df, fabs(f32[i] - f64[i]));
    for (int64_t i = 0; i < n; i++)
        da = fmax(da, fabs(a32[i] - a64[i]));
    for (int q = 0; q < 6; q++)
        dv = fmax(dv, fabs(v32[q] - v64[q]));
    printf("float32 vs float64, 64 atoms: E %.8f vs %.8f (rel %.2e), max|dF| = %.2e eV/A, "
           "max|de_i| = %.2e eV, max|dW| = %.2e eV\n",
           e32, e64, de, df, da, dv);
    CHECK(de <= 1e-5, "energy differs by %.3e relative", de);
    CHECK(df <= 1e-4, "forces differ by %.3e eV/A", df);
    CHECK(da <= 1e-5 * fabs(e64) / (double)n, "per-atom energies differ by %.3e eV", da);
    fnq_ctx_free(c64);
    fnq_ctx_free(c32);
    fnq_model_free(m);
    return test_finish("float32");
}
