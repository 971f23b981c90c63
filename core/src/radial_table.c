/*
 * radial_table.c: see radial_table.h.
 */
#include "radial_table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "radial.h"
#include "status.h"

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

void fnq__radial_weights(const struct fnq_model *m, const struct fnq_mlp *r, double d, double *w,
                         double *dw, double *scratch)
{
    const int32_t wmax = widest(r);
    double *a = scratch, *da = scratch + wmax, *z = scratch + 2 * wmax, *dz = scratch + 3 * wmax;
    fnq__radial_basis(m, d, a, da);
    /* forward with the tangent d/dd carried along */
    for (int32_t k = 0; k < r->n_layers; k++) {
        const int32_t na = r->size[k], nb = r->size[k + 1];
        const int last = k + 1 == r->n_layers;
        double *out = last ? w : z, *dout = last ? dw : dz;
        /* by rows of the weights (contiguous, vectorised over j); each out[j] still sums its
         * terms in the order i = 0, 1, ...: the same values to the bit as a dot product per j */
        for (int32_t j = 0; j < nb; j++)
            out[j] = 0.0;
        for (int32_t i = 0; i < na; i++) {
            const double ai = a[i], *wi = r->w[k] + (size_t)i * nb;
            for (int32_t j = 0; j < nb; j++)
                out[j] += ai * wi[j];
        }
        if (dout) {
            for (int32_t j = 0; j < nb; j++)
                dout[j] = 0.0;
            for (int32_t i = 0; i < na; i++) {
                const double dai = da[i], *wi = r->w[k] + (size_t)i * nb;
                for (int32_t j = 0; j < nb; j++)
                    dout[j] += dai * wi[j];
            }
        }
        if (!last)
            for (int32_t j = 0; j < nb; j++) {
                a[j] = fnq__act_apply(r->act, z[j]);
                da[j] = fnq__act_derivative(r->act, z[j]) * dz[j];
            }
    }
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
    const size_t per_thread = 4 * (size_t)widest(r) + 2 * (size_t)nw;
    /* the interpolation error where a cubic Hermite's is largest: the value's at each
     * interval's midpoint, the derivative's at t = 1/2 - sqrt(3)/6 */
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
#pragma omp parallel num_threads(n_threads) reduction(max : vmax, dmax, verr, derr)
    {
        int me = 0;
#ifdef _OPENMP
        me = omp_get_thread_num();
#endif
        double *scratch = scratch_all + per_thread * (size_t)me;
#pragma omp for schedule(static)
        for (int32_t k = 0; k < nk; k++) {
            double *v = t->val + (size_t)k * nw, *sl = t->slope + (size_t)k * nw;
            /* the basis is sin(w d)/d: at d = 0 take its limit (d = 1e-9 A is as good) */
            const double d = r_lo + k * t->h;
            fnq__radial_weights(m, r, d > 1e-9 ? d : 1e-9, v, sl, scratch);
            for (int32_t j = 0; j < nw; j++)
                sl[j] *= t->h;
        }
        double *w = scratch + 4 * (size_t)widest(r), *dw = w + nw;
        const double at[2] = {0.5, 0.5 - sqrt(3.0) / 6.0};
#pragma omp for schedule(static)
        for (int32_t k = 0; k < nk - 1; k++)
            for (int q = 0; q < 2; q++) {
                double c[4], dc[4];
                fnq__hermite(at[q], c, dc);
                fnq__radial_weights(m, r, r_lo + (k + at[q]) * t->h, w, dw, scratch);
                const double *v0 = t->val + (size_t)k * nw, *s0 = t->slope + (size_t)k * nw;
                for (int32_t j = 0; j < nw; j++) {
                    const double iv =
                        c[0] * v0[j] + c[1] * s0[j] + c[2] * v0[j + nw] + c[3] * s0[j + nw];
                    const double id = (dc[0] * v0[j] + dc[1] * s0[j] + dc[2] * v0[j + nw] +
                                       dc[3] * s0[j + nw]) / t->h;
                    vmax = fmax(vmax, fabs(w[j]));
                    dmax = fmax(dmax, fabs(dw[j]));
                    if (q == 0)
                        verr = fmax(verr, fabs(iv - w[j]));
                    else
                        derr = fmax(derr, fabs(id - dw[j]));
                }
            }
    }
    free(scratch_all);
    t->err_val = vmax > 0 ? verr / vmax : verr;
    t->err_slope = dmax > 0 ? derr / dmax : derr;
    return FNQ_STATUS_OK;
}
