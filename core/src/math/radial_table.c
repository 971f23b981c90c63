/*
 * radial_table.c: see radial_table.h.
 */
#include "math/radial_table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/hot.h"
#include "math/radial.h"
#include "api/status.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static int32_t widest(const struct fnq_mlp *r)
{
    int32_t w = 0;
    for (int32_t k = 0; k <= r->n_layers; k++)
        if (r->size[k] > w)
            w = r->size[k];
    return w;
}

/* fmax without the library call; NaN still counts as larger, so a NaN weight fails the bound */
static inline double max_of(double a, double b) { return a > b || a != a ? a : b; }

/* Distances per MLP evaluation in the table build: 2 x 16 rows (values and tangents) */
enum { BATCH = 16 };

#pragma GCC diagnostic ignored "-Wpsabi" /* vectors pass only between inlined helpers */
typedef double v4d __attribute__((vector_size(32)));
static inline v4d load4(const double *p)
{
    v4d v;
    memcpy(&v, p, sizeof(v));
    return v;
}

/* C[rows][nb] = A[rows][na] W[na][nb] (row-major, W contiguous). Each C[b][j] sums its terms
 * in the order i = 0, 1, ... with plain multiplies and adds, as a dot product per j would: the
 * blocking (4 rows x 8 columns in registers) does not change a bit of the result. */
FNQ_HOT static void gemm_rows(int rows, int na, int nb, const double *A, int lda,
                              const double *W, double *C, int ldc)
{
    int b = 0;
    for (; b + 4 <= rows; b += 4) {
        int j = 0;
        for (; j + 8 <= nb; j += 8) {
            v4d acc[4][2] = {{{0}}};
            for (int i = 0; i < na; i++) {
                const double *wi = W + (size_t)i * nb + j;
                const v4d w0 = load4(wi), w1 = load4(wi + 4);
                for (int q = 0; q < 4; q++) {
                    const double a = A[(size_t)(b + q) * lda + i];
                    acc[q][0] += a * w0;
                    acc[q][1] += a * w1;
                }
            }
            for (int q = 0; q < 4; q++) {
                memcpy(C + (size_t)(b + q) * ldc + j, &acc[q][0], sizeof(v4d));
                memcpy(C + (size_t)(b + q) * ldc + j + 4, &acc[q][1], sizeof(v4d));
            }
        }
        for (; j < nb; j++)
            for (int q = 0; q < 4; q++) {
                double acc = 0.0;
                for (int i = 0; i < na; i++)
                    acc += A[(size_t)(b + q) * lda + i] * W[(size_t)i * nb + j];
                C[(size_t)(b + q) * ldc + j] = acc;
            }
    }
    for (; b < rows; b++)
        for (int j = 0; j < nb; j++) {
            double acc = 0.0;
            for (int i = 0; i < na; i++)
                acc += A[(size_t)b * lda + i] * W[(size_t)i * nb + j];
            C[(size_t)b * ldc + j] = acc;
        }
}

/* The MLP at n <= BATCH distances: w [n][nw] and, if dw != NULL, the tangents d/dd [n][nw].
 * The tangents are rows n .. 2n-1 of the same products. scratch: 4 n x widest doubles. */
static void weights_batch(const struct fnq_model *m, const struct fnq_mlp *r, int n,
                          const double *d, double *w, double *dw, double *scratch)
{
    const int32_t wmax = widest(r), rows = dw ? 2 * n : n;
    double *a = scratch, *z = scratch + 2 * (size_t)n * wmax;
    for (int b = 0; b < n; b++)
        fnq__radial_basis(m, d[b], a + (size_t)b * wmax, dw ? a + (size_t)(n + b) * wmax : NULL);
    for (int32_t k = 0; k < r->n_layers; k++) {
        const int32_t na = r->size[k], nb = r->size[k + 1];
        if (k + 1 == r->n_layers) {
            gemm_rows(n, na, nb, a, wmax, r->w[k], w, nb);
            if (dw)
                gemm_rows(n, na, nb, a + (size_t)n * wmax, wmax, r->w[k], dw, nb);
            break;
        }
        gemm_rows(rows, na, nb, a, wmax, r->w[k], z, wmax);
        for (int b = 0; b < n; b++)
            for (int32_t j = 0; j < nb; j++) {
                const double zj = z[(size_t)b * wmax + j];
                a[(size_t)b * wmax + j] = fnq__act_apply(r->act, zj);
                if (dw) /* the tangent through the activation */
                    a[(size_t)(n + b) * wmax + j] =
                        fnq__act_derivative(r->act, zj) * z[(size_t)(n + b) * wmax + j];
            }
    }
}

void fnq__radial_weights(const struct fnq_model *m, const struct fnq_mlp *r, double d, double *w,
                         double *dw, double *scratch)
{
    weights_batch(m, r, 1, &d, w, dw, scratch);
}

void fnq__radial_table_free(struct fnq_radial_table *t)
{
    free(t->val);
    free(t->slope);
    memset(t, 0, sizeof(*t));
}

enum fnq_status fnq__radial_table_build(const struct fnq_model *m, const struct fnq_mlp *r,
                                        double r_lo, int32_t n_intervals,
                                        struct fnq_radial_table *t)
{
    memset(t, 0, sizeof(*t));
    const int32_t nw = r->size[r->n_layers], nk = n_intervals + 1;
    t->n_knots = nk;
    t->n_w = nw;
    t->r_lo = r_lo;
    t->h = (m->cutoff - r_lo) / n_intervals;
    t->val = malloc(sizeof(double) * (size_t)nk * (size_t)nw);
    t->slope = malloc(sizeof(double) * (size_t)nk * (size_t)nw);
    if (!t->val || !t->slope) {
        fnq__radial_table_free(t);
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "radial table: %d x %d values", nk, nw);
    }
    const size_t per_thread = 4 * BATCH * (size_t)widest(r) + 2 * BATCH * (size_t)nw;
    /* the interpolation error where a cubic Hermite's is largest: the value's at each
     * interval's midpoint, the derivative's at t = 1/2 - sqrt(3)/6; relative to the largest
     * |w| and |dw/dr| at the knots */
    double vmax = 0.0, dmax = 0.0, verr = 0.0, derr = 0.0;
    int n_threads = 1;
#ifdef _OPENMP
    n_threads = omp_get_max_threads();
#endif
    double *scratch_all = malloc(sizeof(double) * per_thread * (size_t)n_threads);
    if (!scratch_all) {
        fnq__radial_table_free(t);
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "radial table: scratch of %zu values",
                         per_thread * (size_t)n_threads);
    }
    const int32_t n_batches = (nk + BATCH - 1) / BATCH;
#pragma omp parallel num_threads(n_threads) reduction(max : vmax, dmax, verr, derr)
    {
        int me = 0;
#ifdef _OPENMP
        me = omp_get_thread_num();
#endif
        double *scratch = scratch_all + per_thread * (size_t)me;
        double *w = scratch + 4 * BATCH * (size_t)widest(r), *dw = w + BATCH * (size_t)nw;
        double d[BATCH];
#pragma omp for schedule(dynamic, 1)
        for (int32_t q = 0; q < n_batches; q++) {
            const int32_t k0 = q * BATCH, n = nk - k0 < BATCH ? nk - k0 : BATCH;
            /* the basis is sin(w d)/d: at d = 0 take its limit (d = 1e-9 A is as good) */
            for (int32_t b = 0; b < n; b++)
                d[b] = r_lo + (k0 + b) * t->h > 1e-9 ? r_lo + (k0 + b) * t->h : 1e-9;
            double *v = t->val + (size_t)k0 * nw, *sl = t->slope + (size_t)k0 * nw;
            weights_batch(m, r, n, d, v, sl, scratch);
            for (size_t j = 0; j < (size_t)n * nw; j++) {
                vmax = max_of(vmax, fabs(v[j]));
                dmax = max_of(dmax, fabs(sl[j]));
                sl[j] *= t->h;
            }
        }
        const double at[2] = {0.5, 0.5 - sqrt(3.0) / 6.0};
        const int32_t n_check = (nk - 1 + BATCH - 1) / BATCH;
#pragma omp for schedule(dynamic, 1)
        for (int32_t q = 0; q < 2 * n_check; q++) {
            const int deriv = q % 2, k0 = q / 2 * BATCH;
            const int32_t n = nk - 1 - k0 < BATCH ? nk - 1 - k0 : BATCH;
            double c[4], dc[4];
            fnq__hermite(at[deriv], c, dc);
            for (int32_t b = 0; b < n; b++)
                d[b] = r_lo + (k0 + b + at[deriv]) * t->h;
            weights_batch(m, r, n, d, w, deriv ? dw : NULL, scratch);
            for (int32_t b = 0; b < n; b++) {
                const double *v0 = t->val + (size_t)(k0 + b) * nw,
                             *s0 = t->slope + (size_t)(k0 + b) * nw;
                for (int32_t j = 0; j < nw; j++) {
                    if (!deriv) {
                        const double iv =
                            c[0] * v0[j] + c[1] * s0[j] + c[2] * v0[j + nw] + c[3] * s0[j + nw];
                        verr = max_of(verr, fabs(iv - w[(size_t)b * nw + j]));
                    } else {
                        const double id = (dc[0] * v0[j] + dc[1] * s0[j] + dc[2] * v0[j + nw] +
                                           dc[3] * s0[j + nw]) / t->h;
                        derr = max_of(derr, fabs(id - dw[(size_t)b * nw + j]));
                    }
                }
            }
        }
    }
    free(scratch_all);
    t->err_val = vmax > 0 ? verr / vmax : verr;
    t->err_slope = dmax > 0 ? derr / dmax : derr;
    return FNQ_STATUS_OK;
}
