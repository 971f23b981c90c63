/*
 * radial_table.cuh: staging for the radial weights from the layer's table (radial table mode,
 * core/src/math/radial_table.h), shared by the forward and backward layer kernels. Per edge: its
 * knot interval k and the cubic Hermite coefficients of t; per weight the column pass then
 * reads 4 table values (one load from L2; below) and makes 3 FMAs
 * (ColumnView::table_rows / weight_from in tp_column.cuh), instead of the radial MLP (~70 % of
 * the arithmetic of the exact path). The forward pass reads a 12-byte copy instead
 * (forward_table_coefs below, ColumnView::forward_table_rows).
 */
#pragma once

#include "runtime/common.cuh"
#include "nequip/model_dev.cuh"

namespace fnqcu {

/* The table (model_upload.cu) holds per knot and column f = (w0, m0, dw0, m1): w, m = h dw/dr,
 * dw = w(next knot) - w, and the next knot's m, as 4 consecutive values (one 16-byte load in
 * float32; load_quad). The column pass forms
 *   w(t)     = w0 + h10(t) m0 + h01(t) dw0 + h11(t) m1   (h00 + h01 = 1)
 *   dw/dt(t) =      h10'(t) m0 + h01'(t) dw0 + h11'(t) m1
 * with the cubic Hermite basis h.. of t; no difference of two rounded values. */

/* Coefficients of the table row f in w at t, c[4], and in dw/dt, dc[4]; c[0] = 1 and dc[0] = 0
 * keep the rows 16 bytes for one vector load (table_weight / table_slope skip them) */
template <typename REAL> __device__ __forceinline__ void hermite_coefs(REAL t, REAL *c, REAL *dc)
{
    const REAL s = REAL(1) - t;
    c[0] = REAL(1);
    c[1] = t * s * s;                    /* h10 */
    c[2] = t * t * (REAL(3) - REAL(2) * t); /* h01 */
    c[3] = t * t * (t - REAL(1));        /* h11 */
    dc[0] = REAL(0);
    dc[1] = (REAL(3) * t - REAL(1)) * (t - REAL(1));
    dc[2] = REAL(6) * t * s;
    dc[3] = t * (REAL(3) * t - REAL(2));
}

/* The forward pass's table (Layer::rtab_wd, rtab_ab): the coefficients of (w, dw, a, b) in w,
 * c[4] = (1, t, h10(t), h11(t)), the last two times ab_unit (the unit of a and b in the table;
 * c[0] is skipped as for the backward's) */
template <typename REAL>
__device__ __forceinline__ void forward_table_coefs(REAL t, REAL ab_unit, REAL *c)
{
    const REAL s = REAL(1) - t;
    c[0] = REAL(1);
    c[1] = t;
    c[2] = ab_unit * (t * s * s);          /* h10 */
    c[3] = ab_unit * (t * t * (t - REAL(1))); /* h11 */
}

/* Elements staged per thread before any is stored: one pass over the super-chunk's feature rows
 * keeps several loads in flight per thread (with one, each load's latency stalled its store:
 * bench/NOTES.md, "Goal 1, the first and last layers") */
constexpr int kStageBatch = 4;

/* Stage the edges [e0, e0 + n) of a super-chunk (edge numbers through `index` when given) in
 * radial table mode, in one pass over their feature rows (nsh + 2 per edge: Y, then the knot
 * interval k and t; edge_geometry.cu): Y into sY[e * nsh ..], knot_step * k into sKnot[e] (the
 * interval's first row in the table), and coefs(e, t) for the interpolation coefficients. */
template <typename REAL, typename Coefs>
__device__ __forceinline__ void stage_table_edges(const REAL *feat, int nsh, const int64_t *index,
                                                  int64_t e0, int n, REAL *sY, int *sKnot,
                                                  int knot_step, Coefs coefs)
{
    const int nf = nsh + 2, total = n * nf;
    for (int base = threadIdx.x; base < total; base += kStageBatch * blockDim.x) {
        REAL v[kStageBatch] = {};
#pragma unroll
        for (int j = 0; j < kStageBatch; j++) {
            const int idx = base + j * blockDim.x;
            if (idx < total) {
                const int k = idx / nf;
                const int64_t e = index ? index[e0 + k] : e0 + k;
                v[j] = feat[e * nf + (idx - k * nf)];
            }
        }
#pragma unroll
        for (int j = 0; j < kStageBatch; j++) {
            const int idx = base + j * blockDim.x, k = idx / nf, q = idx - k * nf;
            if (idx >= total)
                break;
            if (q < nsh)
                sY[k * nsh + q] = v[j];
            else if (q == nsh)
                sKnot[k] = knot_step * (int)v[j];
            else
                coefs(k, v[j]);
        }
    }
}

} // namespace fnqcu
