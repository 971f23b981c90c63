/*
 * radial_table.h: a layer's radial weights as a function of the edge length, tabulated for
 * cubic Hermite interpolation. The radial MLP's input (Bessel basis x envelope) depends on |r|
 * only, so w(r) = MLP(B(r)) is a smooth function of one variable: per edge, 4 table rows and a
 * few FMAs per weight replace the MLP (70 % of the GPU's arithmetic, bench/NOTES.md v3).
 * Built in float64 on the host from the exact MLP and its derivative; the interpolation error
 * is measured at every interval's midpoint and reported (FNQ_VERBOSE) and bounded.
 */
#pragma once

#include "model/model.h"

struct fnq_radial_table {
    int32_t n_knots; /* knots r_k = r_lo + k h, k = 0 .. n_knots-1, the last one at the cutoff */
    double r_lo, h;
    int32_t n_w;     /* weights per knot (the MLP's last width) */
    double *val;     /* [n_knots][n_w]: w(r_k) */
    double *slope;   /* [n_knots][n_w]: h dw/dr(r_k) (Hermite form, per unit of t) */
    double err_val;   /* max |interpolated - exact| / max |w| at the interval midpoints */
    double err_slope; /* the same for dw/dr, relative to max |dw/dr| */
};

/* The bound a table must meet to be used (float32 on the GPU and the CPU): it keeps float32
 * forces within ~1e-4 eV/A of the exact model (nequix-mp-1 at 2048 intervals: 4.5e-6 for the
 * derivatives, forces within 3e-5); a model whose table misses it runs the MLP itself */
#define FNQ_TABLE_MAX_ERR_VAL 1e-7
#define FNQ_TABLE_MAX_ERR_SLOPE 1e-5
static inline int fnq__radial_table_accurate(const struct fnq_radial_table *t)
{
    return t->err_val <= FNQ_TABLE_MAX_ERR_VAL && t->err_slope <= FNQ_TABLE_MAX_ERR_SLOPE;
}

/* w(d) [n_w] and, if dw != NULL, dw/dd, exact, in double. scratch: 4 * max width doubles. */
void fnq__radial_weights(const struct fnq_model *m, const struct fnq_mlp *r, double d, double *w,
                         double *dw, double *scratch);

/* Tabulate layer r's radial MLP on n_intervals intervals of [r_lo, cutoff].
 * FNQ_STATUS_OUT_OF_MEMORY on allocation failure. */
enum fnq_status fnq__radial_table_build(const struct fnq_model *m, const struct fnq_mlp *r,
                                        double r_lo, int32_t n_intervals,
                                        struct fnq_radial_table *t);
void fnq__radial_table_free(struct fnq_radial_table *t);

/* Cubic Hermite basis at t in [0, 1]: value = c[0] f0 + c[1] m0 + c[2] f1 + c[3] m1 (m: slope
 * per unit of t); d/dt with dc. */
static inline void fnq__hermite(double t, double c[4], double dc[4])
{
    const double s = 1.0 - t;
    c[0] = (1.0 + 2.0 * t) * s * s;
    c[1] = t * s * s;
    c[2] = t * t * (3.0 - 2.0 * t);
    c[3] = t * t * (t - 1.0);
    if (dc) {
        dc[0] = 6.0 * t * t - 6.0 * t;
        dc[1] = 3.0 * t * t - 4.0 * t + 1.0;
        dc[2] = -dc[0];
        dc[3] = 3.0 * t * t - 2.0 * t;
    }
}
