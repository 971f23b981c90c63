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

} // namespace fnqcu
