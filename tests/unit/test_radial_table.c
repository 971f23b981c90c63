/*
 * test_radial_table.c: the radial-weight tables of the CUDA backend's table mode
 * (core/src/math/radial_table.h), on the host: the exact w(r) and dw/dr against central finite
 * differences; the cubic Hermite interpolant against the exact MLP at random distances
 * (weights and derivatives), exact at the knots, and converging at fourth order (halving the
 * interval divides the error by ~16).
 */
#include "fnq_test.h"
#include "math/radial_table.h"

static void interpolate(const struct fnq_radial_table *t, double d, double *w, double *dw)
{
    const double u = (d - t->r_lo) / t->h;
    int k = (int)u;
    if (k > t->n_knots - 2)
        k = t->n_knots - 2;
    double c[4], dc[4];
    fnq__hermite(u - k, c, dc);
    const double *v = t->val + (size_t)k * t->n_w, *s = t->slope + (size_t)k * t->n_w;
    for (int32_t j = 0; j < t->n_w; j++) {
        w[j] = c[0] * v[j] + c[1] * s[j] + c[2] * v[j + t->n_w] + c[3] * s[j + t->n_w];
        dw[j] = (dc[0] * v[j] + dc[1] * s[j] + dc[2] * v[j + t->n_w] + dc[3] * s[j + t->n_w]) / t->h;
    }
}

int main(void)
{
    struct fnq_model *m = test_load_model("nequix-mp-1");
    const struct fnq_mlp *r = &m->layers[1].radial;
    const int32_t nw = r->size[r->n_layers];
    double *w = malloc(sizeof(double) * 12 * 2048), *dw = w + 2048, *wp = dw + 2048,
           *wm = wp + 2048, *iw = wm + 2048, *idw = iw + 2048, *scratch = idw + 2048;
    /* scratch: 4 x the widest layer (radial_table.h) */
    CHECK(nw <= 2048, "test buffers hold 2048 weights, the model has %d", nw);

    /* exact derivative against finite differences */
    double fd_err = 0.0, dmax = 0.0;
    for (int q = 0; q < 20; q++) {
        const double d = 0.8 + 5.0 * test_rand(), h = 1e-5;
        fnq__radial_weights(m, r, d, w, dw, scratch);
        fnq__radial_weights(m, r, d + h, wp, NULL, scratch);
        fnq__radial_weights(m, r, d - h, wm, NULL, scratch);
        for (int32_t j = 0; j < nw; j++) {
            fd_err = fmax(fd_err, fabs((wp[j] - wm[j]) / (2 * h) - dw[j]));
            dmax = fmax(dmax, fabs(dw[j]));
        }
    }
    printf("dw/dr vs finite differences: max error %.2e (max |dw/dr| %.2e)\n", fd_err, dmax);
    CHECK(fd_err <= 1e-6 * dmax, "dw/dr differs from finite differences by %.2e", fd_err);

    /* the table against the exact function */
    struct fnq_radial_table t, coarse;
    CHECK_OK(fnq__radial_table_build(m, r, 0.0, 2048, &t));
    CHECK_OK(fnq__radial_table_build(m, r, 0.0, 1024, &coarse));
    printf("2048 intervals: reported error %.2e (weights) %.2e (derivatives); 1024: %.2e %.2e\n",
           t.err_val, t.err_slope, coarse.err_val, coarse.err_slope);
    CHECK(t.err_val < 1e-7 && t.err_slope < 2e-5, "2048-interval table error %.2e / %.2e",
          t.err_val, t.err_slope);
    CHECK(coarse.err_val > 10 * t.err_val && coarse.err_slope > 5 * t.err_slope,
          "halving the interval should cut the error ~16x (weights), ~8x (derivatives)");
    double ev = 0.0, ed = 0.0, wmax = 0.0, dwmax = 0.0, knot = 0.0;
    for (int q = 0; q < 200; q++) {
        const double d = 0.5 + 5.49 * test_rand();
        fnq__radial_weights(m, r, d, w, dw, scratch);
        interpolate(&t, d, iw, idw);
        for (int32_t j = 0; j < nw; j++) {
            ev = fmax(ev, fabs(iw[j] - w[j]));
            ed = fmax(ed, fabs(idw[j] - dw[j]));
            wmax = fmax(wmax, fabs(w[j]));
            dwmax = fmax(dwmax, fabs(dw[j]));
        }
    }
    for (int k = 100; k < t.n_knots - 1; k += 97) {
        fnq__radial_weights(m, r, k * t.h, w, dw, scratch);
        interpolate(&t, k * t.h, iw, idw);
        for (int32_t j = 0; j < nw; j++)
            knot = fmax(knot, fabs(iw[j] - w[j]));
    }
    printf("random distances: max error %.2e of %.2e (weights), %.2e of %.2e (derivatives); "
           "at knots %.2e\n", ev, wmax, ed, dwmax, knot);
    CHECK(ev <= 1e-7 * wmax, "interpolated weights off by %.2e", ev);
    CHECK(ed <= 2e-5 * dwmax, "interpolated derivatives off by %.2e", ed);
    CHECK(knot <= 1e-12 * wmax, "the table is not exact at its knots (%.2e)", knot);
    fnq__radial_table_free(&t);
    fnq__radial_table_free(&coarse);
    free(w);
    fnq_model_free(m);
    return fnq_test_failures ? 1 : 0;
}
