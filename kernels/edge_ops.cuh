/*
 * edge_ops.cuh: per-edge geometry on the device, in double precision: e3nn spherical
 * harmonics by the same Clebsch-Gordan recursion as the host (core/src/sh.c), with their
 * gradient, and the radial basis with its derivative (core/src/radial.c); and the staging of a
 * super-chunk's precomputed features into shared memory for the layer kernels.
 */
#pragma once

#include "common.cuh"
#include "model_dev.cuh"

namespace fnqcu {

/* y[nsh]; dy[nsh*3] = dY/dn (polynomial gradient) when dy != nullptr */
__device__ __forceinline__ void sh_eval(const Geometry &g, const double n[3], double *y, double *dy)
{
    const double s3 = 1.7320508075688772935;
    y[0] = 1.0;
    if (dy)
        dy[0] = dy[1] = dy[2] = 0.0;
    if (g.lmax >= 1)
        for (int k = 0; k < 3; k++) {
            y[1 + k] = s3 * n[k];
            if (dy)
                for (int a = 0; a < 3; a++)
                    dy[(1 + k) * 3 + a] = (a == k) ? s3 : 0.0;
        }
    for (int l = 2; l <= g.lmax; l++) {
        const int o = l * l, o1 = g.l1[l] * g.l1[l], o2 = g.l2[l] * g.l2[l];
        for (int k = 0; k < 2 * l + 1; k++) {
            y[o + k] = 0.0;
            if (dy)
                dy[(o + k) * 3 + 0] = dy[(o + k) * 3 + 1] = dy[(o + k) * 3 + 2] = 0.0;
        }
        for (int t = g.first[l]; t < g.first[l + 1]; t++) {
            const ShTerm tm = g.terms[t];
            const double a = y[o1 + tm.i], b = y[o2 + tm.j];
            y[o + tm.k] += tm.coef * a * b;
            if (dy)
                for (int c = 0; c < 3; c++)
                    dy[(o + tm.k) * 3 + c] +=
                        tm.coef * (dy[(o1 + tm.i) * 3 + c] * b + a * dy[(o2 + tm.j) * 3 + c]);
        }
    }
}

/* basis[n_basis] and (if dbasis) d basis / d r */
__device__ __forceinline__ void radial_basis(const Geometry &g, double d, double *basis,
                                             double *dbasis)
{
    const double rc = g.cutoff, p = g.poly_p, u = d / rc;
    double f = 0.0, df = 0.0;
    if (u < 1.0) {
        const double up = pow(u, p), upm1 = pow(u, p - 1.0);
        f = 1.0 - 0.5 * (p + 1.0) * (p + 2.0) * up + p * (p + 2.0) * up * u -
            0.5 * p * (p + 1.0) * up * u * u;
        df = (-0.5 * (p + 1.0) * (p + 2.0) * p * upm1 + p * (p + 2.0) * (p + 1.0) * up -
              0.5 * p * (p + 1.0) * (p + 2.0) * up * u) / rc;
    }
    const double pre = 2.0 / rc;
    for (int n = 0; n < g.n_basis; n++) {
        const double w = g.bessel_freq[n] / rc;
        double s, c;
        sincos(w * d, &s, &c);
        const double b = pre * s / d;
        basis[n] = b * f;
        if (dbasis)
            dbasis[n] = pre * (w * c * d - s) / (d * d) * f + b * df;
    }
}

/* Stage the edges [e0, e0 + n) of a super-chunk (edge numbers through `index` when given) from
 * the per-edge features (edge_geometry.cu: feat rows of nsh spherical harmonics, then n_basis
 * basis values): spherical harmonics into sY[k * nsh ..] (unless sY is null), the basis into
 * sB[k * ld0 ..] (unless sB is null), zero past n_basis and in the padding rows n..np-1, so the
 * GEMMs see zero padding. */
template <typename REAL>
__device__ __forceinline__ void stage_edge_features(const REAL *feat, int nsh, int n_basis,
                                                    const int64_t *index, int64_t e0, int n,
                                                    int np, REAL *sY, REAL *sB, int ld0)
{
    const int nf = nsh + n_basis;
    for (int idx = threadIdx.x; sB && idx < np * ld0; idx += blockDim.x) {
        const int k = idx / ld0, q = idx - k * ld0;
        REAL v = REAL(0);
        if (k < n && q < n_basis) {
            const int64_t e = index ? index[e0 + k] : e0 + k;
            v = feat[e * nf + nsh + q];
        }
        sB[idx] = v;
    }
    for (int idx = threadIdx.x; sY && idx < n * nsh; idx += blockDim.x) {
        const int k = idx / nsh, q = idx - k * nsh;
        const int64_t e = index ? index[e0 + k] : e0 + k;
        sY[idx] = feat[e * nf + q];
    }
}

} // namespace fnqcu
