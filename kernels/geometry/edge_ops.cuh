/*
 * edge_ops.cuh: per-edge geometry on the device, in double precision: e3nn spherical
 * harmonics by the same Clebsch-Gordan recursion as the host (core/src/math/sh.c; generated code for
 * l <= 3), with their gradient by reverse mode, and the radial basis with its derivative
 * (core/src/math/radial.c); and the staging of a super-chunk's precomputed features into shared
 * memory for the layer kernels.
 */
#pragma once

#include "runtime/common.cuh"
#include "geometry/envelope.cuh"
#include "geometry/geometry.cuh"
#include "sh_code.inc"

namespace fnqcu {

/* Y(n) for l <= L by the generated recursion (sh_code.inc): y[(L + 1)^2] stays in registers */
template <int L, int l = 2> __device__ __forceinline__ void sh_levels(double *y)
{
    static_assert(L <= FNQ_SH_LMAX, "no generated spherical harmonics of this degree");
    if constexpr (l <= L) {
        shgen::sh_level<l>(y);
        sh_levels<L, l + 1>(y);
    }
}
template <int L> __device__ __forceinline__ void sh_eval_fixed(const double n[3], double *y)
{
    y[0] = 1.0;
    if constexpr (L >= 1)
        for (int k = 0; k < 3; k++)
            y[1 + k] = 1.7320508075688772935 * n[k];
    sh_levels<L>(y);
}

/* dn[c] = sum_q a[q] dY_q/dn_c for the Y of sh_eval_fixed<L>: the adjoints a (on entry dE/dY,
 * overwritten) go back through the levels from l = L down (reverse mode, sh_grad_column) */
template <int L, int l = L> __device__ __forceinline__ void sh_levels_adjoint(const double *y,
                                                                            double *a)
{
    if constexpr (l >= 2) {
        shgen::sh_level_adjoint<l>(y, a);
        sh_levels_adjoint<L, l - 1>(y, a);
    }
}
template <int L>
__device__ __forceinline__ void sh_grad_fixed(const double *y, double *a, double dn[3])
{
    sh_levels_adjoint<L>(y, a);
    for (int k = 0; k < 3; k++)
        dn[k] = L >= 1 ? 1.7320508075688772935 * a[1 + k] : 0.0;
}

/* Y(n) by the recursion for any l <= kMaxL, value q at y[q * stride]: the thread's column of a
 * shared-memory tile. The terms' indices are runtime values here, so an array in registers is
 * not possible; a local-memory array of kMaxSh doubles (and 3 kMaxSh for the gradient) per
 * thread made the geometry kernels slow (bench/NOTES.md v8.2). Models with l <= FNQ_SH_LMAX
 * take sh_eval_fixed. */
__device__ __forceinline__ void sh_eval_column(const Geometry &g, const double n[3], double *y,
                                               int stride)
{
    const double s3 = 1.7320508075688772935;
    y[0] = 1.0;
    if (g.lmax >= 1)
        for (int k = 0; k < 3; k++)
            y[(1 + k) * stride] = s3 * n[k];
    for (int l = 2; l <= g.lmax; l++) {
        const int o = l * l, o1 = g.l1[l] * g.l1[l], o2 = g.l2[l] * g.l2[l];
        for (int k = 0; k < 2 * l + 1; k++)
            y[(o + k) * stride] = 0.0;
        for (int t = g.first[l]; t < g.first[l + 1]; t++) {
            const ShTerm tm = g.terms[t];
            y[(o + tm.k) * stride] += tm.coef * y[(o1 + tm.i) * stride] * y[(o2 + tm.j) * stride];
        }
    }
}

/* dn[c] = sum_q a[q] dY_q/dn_c (the polynomial gradient) for the Y of sh_eval_column (same
 * column layout), by reverse mode through the recursion: the adjoints a[q] (on entry dE/dY,
 * overwritten) flow from each l down to the two lower ones it is built from. One pass over the
 * terms instead of carrying dY/dn (3 nsh values) forward. */
__device__ __forceinline__ void sh_grad_column(const Geometry &g, const double *y, double *a,
                                               int stride, double dn[3])
{
    const double s3 = 1.7320508075688772935;
    for (int l = g.lmax; l >= 2; l--) {
        const int o = l * l, o1 = g.l1[l] * g.l1[l], o2 = g.l2[l] * g.l2[l];
        for (int t = g.first[l + 1] - 1; t >= g.first[l]; t--) {
            const ShTerm tm = g.terms[t];
            const double c = tm.coef * a[(o + tm.k) * stride];
            a[(o1 + tm.i) * stride] += c * y[(o2 + tm.j) * stride];
            a[(o2 + tm.j) * stride] += c * y[(o1 + tm.i) * stride];
        }
    }
    for (int k = 0; k < 3; k++)
        dn[k] = g.lmax >= 1 ? s3 * a[(1 + k) * stride] : 0.0;
}

/* The radial basis' cutoff envelope f(d) and df/dd: polynomial, or XPLOR */
__device__ __forceinline__ void radial_envelope(const Geometry &g, double d, double *f,
                                                double *df)
{
    if (g.xplor_r_on > 0.0) {
        xplor_envelope(g.xplor_r_on, g.cutoff, d, f, df);
        return;
    }
    poly_envelope(g.poly_p, d / g.cutoff, f, df);
    *df /= g.cutoff;
}

/* Basis function n at d (enveloped by f, df from radial_envelope) and (if db) its derivative */
__device__ __forceinline__ double radial_basis_fn(const Geometry &g, double d, int n, double f,
                                                  double df, double *db)
{
    const double rc = g.cutoff, pre = 2.0 / rc, w = g.bessel_freq[n] / rc;
    double s, c;
    sincos(w * d, &s, &c);
    const double b = pre * s / d;
    if (db)
        *db = pre * (w * c * d - s) / (d * d) * f + b * df;
    return b * f;
}

/* Stage the edges [e0, e0 + n) of a super-chunk (edge numbers through `index` when given) from
 * the per-edge features (edge_geometry.cu: feat rows of nsh spherical harmonics, then n_basis
 * basis values): spherical harmonics into sY[k * nsh ..] (unless sY is null), the basis into
 * sB[k * ld0 ..], zero past n_basis and in the padding rows n..np-1, so the GEMMs see zero
 * padding. */
template <typename REAL>
__device__ __forceinline__ void stage_edge_features(const REAL *feat, int nsh, int n_basis,
                                                    const int64_t *index, int64_t e0, int n,
                                                    int np, REAL *sY, REAL *sB, int ld0)
{
    const int nf = nsh + n_basis;
    for (int idx = threadIdx.x; idx < np * ld0; idx += blockDim.x) {
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
