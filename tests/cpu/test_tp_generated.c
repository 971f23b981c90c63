/*
 * test_tp_generated.c: the CPU's tensor products generated per path kind (core/src/
 * gen_cpu_tp_code.c) against its generic kernels over index tables (FNQ_TP_GENERIC=1), on a
 * rattled 64-atom Si/C/Ge cell with nequix-mp-1, float64 and float32. Both sum every forward
 * term in the same order, so energies must agree to rounding (float64: 1e-14 relative);
 * forces within 1e-12 eV/A (float64) and 1e-5 eV/A (float32). The backward kernels add their
 * per-pair lane sums in different orders, so float32 forces that are bitwise equal would mean
 * the generated kernels did not run: that fails too.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>

#include "fnq_test.h"

#define N_ATOMS 64

struct eval {
    double e, f[3 * N_ATOMS], v[6];
};

static void evaluate(const struct fnq_model *m, enum fnq_dtype dtype, int generic,
                     const struct test_structure *s, struct eval *out)
{
    /* options are read when a context is made */
    if (generic)
        setenv("FNQ_TP_GENERIC", "1", 1);
    else
        unsetenv("FNQ_TP_GENERIC");
    struct fnq_ctx *c;
    CHECK_OK(fnq_ctx_init(m, FNQ_DEVICE_CPU, 0, dtype, &c));
    CHECK_OK(fnq_ctx_compute_periodic(c, s->n, s->pos, s->species, s->cell, s->pbc, &out->e,
                                      NULL, out->f, out->v));
    fnq_ctx_free(c);
}

int main(void)
{
    struct fnq_model *m = test_load_model("nequix-mp-1");
    struct test_structure s;
    test_diamond(&s, m, 2, 0.2);
    for (int64_t k = 0; k < s.n; k++)
        s.species[k] = test_species(m, k % 7 == 3 ? "C" : (k % 11 == 5 ? "Ge" : "Si"));
    for (int dt = 0; dt < 2; dt++) {
        const enum fnq_dtype dtype = dt ? FNQ_DTYPE_F32 : FNQ_DTYPE_F64;
        const char *name = dt ? "float32" : "float64";
        struct eval gen, ref;
        evaluate(m, dtype, 0, &s, &gen);
        evaluate(m, dtype, 1, &s, &ref);
        const double de = fabs(gen.e - ref.e) / fabs(ref.e);
        double df = 0.0;
        int same_f = 1;
        for (int i = 0; i < 3 * N_ATOMS; i++) {
            df = fmax(df, fabs(gen.f[i] - ref.f[i]));
            same_f &= gen.f[i] == ref.f[i];
        }
        printf("%s, generated vs generic tensor products: E %.10f vs %.10f (rel %.2e), "
               "max|dF| %.2e eV/A%s\n",
               name, gen.e, ref.e, de, df, same_f ? ", forces bitwise equal" : "");
        CHECK(de <= (dt ? 1e-6 : 1e-14), "%s: energies differ by %.3e relative", name, de);
        CHECK(df <= (dt ? 1e-5 : 1e-12), "%s: forces differ by %.3e eV/A", name, df);
        if (dt)
            CHECK(!same_f, "float32 forces bitwise equal: the generated kernels did not run");
    }
    test_structure_free(&s);
    fnq_model_free(m);
    return test_finish("tp_generated");
}
