/*
 * geometry.cuh: the per-edge geometry tables of the device (geometry/edge_ops.cuh): the
 * spherical-harmonics recursion (the plan of core/src/math/sh.c) and the radial basis, uploaded
 * once per context by nequip/model_upload.cu. Apart from the NequIP device model so that
 * another family's kernels can use edge_ops.cuh (Allegro uses its fixed-degree harmonics).
 */
#pragma once

namespace fnqcu {

constexpr int kMaxL = 6;
constexpr int kMaxSh = (kMaxL + 1) * (kMaxL + 1);

/* Geometry tables: spherical-harmonics recursion and radial basis (always double). */
struct ShTerm {
    int i, j, k;
    double coef;
};

struct Geometry {
    int lmax, nsh;
    int l1[kMaxL + 1], l2[kMaxL + 1];
    int first[kMaxL + 2];
    const ShTerm *terms;
    int n_basis;
    double cutoff, poly_p;
    double xplor_r_on; /* > 0: the XPLOR envelope (model.h) */
    const double *bessel_freq;
    /* radial features per edge after Y: the basis (n_rfeat = n_basis), or in table mode
     * (table = 1) the knot interval k and t in [0, 1] of |r| = (k + t) h (n_rfeat = 2) */
    int n_rfeat, table, n_intervals;
    double inv_h;
    /* FNQ_SH_GENERIC=1: the harmonics by the plan's runtime recursion at every degree (the
     * test gpu_vs_cpu_exact sets it, so the path of degrees above 3 is checked on a GPU) */
    int sh_generic;
    /* 1: Y_l of r itself, |r|^l Y_l(r / |r|) (model.h's sh_raw) */
    int sh_raw;
};

} // namespace fnqcu
