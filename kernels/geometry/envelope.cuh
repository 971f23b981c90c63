/*
 * envelope.cuh: NequIP's polynomial cutoff envelope f_p(u), u = r / cutoff, and df/du, on the
 * GPU (the host's is fnq__poly_envelope, core/src/math/radial.c): the radial basis and the pair term
 * use it.
 */
#pragma once

namespace fnqcu {

__device__ __forceinline__ void poly_envelope(double p, double u, double *f, double *df_du)
{
    *f = 0.0, *df_du = 0.0;
    if (u < 1.0) {
        const double up = pow(u, p), upm1 = pow(u, p - 1.0);
        *f = 1.0 - 0.5 * (p + 1.0) * (p + 2.0) * up + p * (p + 2.0) * up * u -
             0.5 * p * (p + 1.0) * up * u * u;
        *df_du = -0.5 * (p + 1.0) * (p + 2.0) * p * upm1 + p * (p + 2.0) * (p + 1.0) * up -
                 0.5 * p * (p + 1.0) * (p + 2.0) * up * u;
    }
}

/* SevenNet's XPLOR switch f(d) and df/dd (the host's is fnq__xplor_envelope) */
__device__ __forceinline__ void xplor_envelope(double r_on, double rc, double d, double *f,
                                               double *df_dd)
{
    *f = d < rc ? 1.0 : 0.0, *df_dd = 0.0;
    if (d >= r_on && d < rc) {
        const double a = rc * rc - d * d, w = rc * rc - r_on * r_on, den = w * w * w;
        *f = a * a * (rc * rc + 2.0 * d * d - 3.0 * r_on * r_on) / den;
        *df_dd = 12.0 * d * a * (r_on * r_on - d * d) / den;
    }
}

} // namespace fnqcu
