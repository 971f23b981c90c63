/*
 * radial_table.cuh: staging for the radial weights from the layer's table (radial table mode,
 * core/src/radial_table.h), shared by the forward and backward layer kernels. Per edge: its
 * knot interval k and the cubic Hermite coefficients of t; per weight the column pass then
 * reads 4 table values (one load from L2; below) and makes 4 FMAs
 * (ColumnView::table_rows / hermite in tp_column.cuh), instead of the radial MLP (~70 % of
 * the arithmetic of the exact path). The forward pass reads a 12-byte copy instead
 * (stage_forward_table_coefs below, ColumnView::forward_table_rows).
 */
#pragma once

#include "common.cuh"
#include "model_dev.cuh"

namespace fnqcu {

/* The table (model_upload.cu) holds per knot and column f = (w0, m0, dw0, m1): w, m = h dw/dr,
 * dw = w(next knot) - w, and the next knot's m, as 4 consecutive values (one 16-byte load in
 * float32; load_quad). The column pass forms
 *   w(t)     = w0 + h10(t) m0 + h01(t) dw0 + h11(t) m1   (h00 + h01 = 1)
 *   dw/dt(t) =      h10'(t) m0 + h01'(t) dw0 + h11'(t) m1
 * with the cubic Hermite basis h.. of t; no difference of two rounded values. */

/* From the staged features (nsh + 2 per edge: Y, then k and t): the first table row of each
 * edge's interval, sKnot[e] = 4 k ld (column 0), and the coefficients of f in w, sC[e][4], and, when sDC
 * is not null, in dw/dt, sDC[e][4]. */
template <typename REAL>
__device__ __forceinline__ void stage_table_coefs(const REAL *feat, int nsh, int ld,
                                                  const int64_t *index, int64_t e0, int n,
                                                  int *sKnot, REAL *sC, REAL *sDC)
{
    const int nf = nsh + 2;
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
        const int64_t e = index ? index[e0 + k] : e0 + k;
        const int knot = (int)feat[e * nf + nsh];
        const REAL t = feat[e * nf + nsh + 1], s = REAL(1) - t;
        sKnot[k] = 4 * knot * ld;
        sC[4 * k + 0] = REAL(1);
        sC[4 * k + 1] = t * s * s;                    /* h10 */
        sC[4 * k + 2] = t * t * (REAL(3) - REAL(2) * t); /* h01 */
        sC[4 * k + 3] = t * t * (t - REAL(1));        /* h11 */
        if (sDC) {
            sDC[4 * k + 0] = REAL(0);
            sDC[4 * k + 1] = (REAL(3) * t - REAL(1)) * (t - REAL(1));
            sDC[4 * k + 2] = REAL(6) * t * s;
            sDC[4 * k + 3] = t * (REAL(3) * t - REAL(2));
        }
    }
}

/* The forward pass's table (Layer::rtab_wd, rtab_ab): sKnot[e] = k ld (the interval's row in
 * both arrays) and the coefficients of (w, dw, a, b) in w, sC[e][4] = (1, t, h10(t), h11(t)),
 * the last two times ab_unit (the unit of a and b in the table). */
template <typename REAL>
__device__ __forceinline__ void stage_forward_table_coefs(const REAL *feat, int nsh, int ld,
                                                          REAL ab_unit, int64_t e0, int n,
                                                          int *sKnot, REAL *sC)
{
    const int nf = nsh + 2;
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
        const int64_t e = e0 + k;
        const int knot = (int)feat[e * nf + nsh];
        const REAL t = feat[e * nf + nsh + 1], s = REAL(1) - t;
        sKnot[k] = knot * ld;
        sC[4 * k + 0] = REAL(1);
        sC[4 * k + 1] = t;
        sC[4 * k + 2] = ab_unit * (t * s * s);         /* h10 */
        sC[4 * k + 3] = ab_unit * (t * t * (t - REAL(1))); /* h11 */
    }
}

} // namespace fnqcu
