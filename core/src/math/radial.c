/*
 * radial.c: Bessel basis times the envelope (polynomial or XPLOR), and the derivative for
 * forces.
 */
#include "math/radial.h"

#include <math.h>

void fnq__poly_envelope(double p, double u, double *f, double *df_du)
{
    *f = 0.0, *df_du = 0.0;
    if (u < 1.0) {
        double up = pow(u, p);
        *f = 1.0 - 0.5 * (p + 1.0) * (p + 2.0) * up + p * (p + 2.0) * up * u -
             0.5 * p * (p + 1.0) * up * u * u;
        /* df/du = -(p+1)(p+2)/2 p u^(p-1) + p(p+2)(p+1) u^p - p(p+1)(p+2)/2 u^(p+1) */
        double upm1 = pow(u, p - 1.0);
        *df_du = -0.5 * (p + 1.0) * (p + 2.0) * p * upm1 + p * (p + 2.0) * (p + 1.0) * up -
                 0.5 * p * (p + 1.0) * (p + 2.0) * up * u;
    }
}

void fnq__xplor_envelope(double r_on, double rc, double d, double *f, double *df_dd)
{
    *f = d < rc ? 1.0 : 0.0, *df_dd = 0.0;
    if (d >= r_on && d < rc) {
        const double a = rc * rc - d * d, w = rc * rc - r_on * r_on, den = w * w * w;
        *f = a * a * (rc * rc + 2.0 * d * d - 3.0 * r_on * r_on) / den;
        *df_dd = 12.0 * d * a * (r_on * r_on - d * d) / den;
    }
}

void fnq__radial_basis(const struct fnq_model *m, double d, double *basis, double *dbasis)
{
    const double rc = m->cutoff;
    double f, df;
    if (m->xplor_r_on > 0.0) {
        fnq__xplor_envelope(m->xplor_r_on, rc, d, &f, &df);
    } else {
        fnq__poly_envelope(m->poly_p, d / rc, &f, &df);
        df /= rc;
    }
    const double pre = 2.0 / rc;
    for (int32_t n = 0; n < m->n_basis; n++) {
        double w = m->bessel_freq[n] / rc;
        double s = sin(w * d), c = cos(w * d);
        double b = pre * s / d;
        double db = pre * (w * c * d - s) / (d * d);
        basis[n] = b * f;
        if (dbasis)
            dbasis[n] = db * f + b * df;
    }
}
