/*
 * radial_table.cuh: the radial weights of a super-chunk's edges from the layer's table
 * (radial table mode, core/src/radial_table.h), shared by the forward and backward layer
 * kernels. Per edge: its knot interval k and the cubic Hermite coefficients of t; per weight:
 * 4 table values (w and h dw/dr at knots k and k+1, read from L2) and 4 FMAs, instead of the
 * radial MLP (~70 % of the arithmetic of the exact path).
 */
#pragma once

#include "common.cuh"
#include "model_dev.cuh"

namespace fnqcu {

/* From the staged features (nsh + 2 per edge: Y, then k and t): the table row of each edge's
 * interval, sKnot[e] = 2 k ld, and its Hermite coefficients sC[e][4] (weights) and, when sDC is
 * not null, sDC[e][4] (d/dt). */
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
        sKnot[k] = 2 * knot * ld;
        sC[4 * k + 0] = (REAL(1) + REAL(2) * t) * s * s;
        sC[4 * k + 1] = t * s * s;
        sC[4 * k + 2] = t * t * (REAL(3) - REAL(2) * t);
        sC[4 * k + 3] = t * t * (t - REAL(1));
        if (sDC) {
            sDC[4 * k + 0] = REAL(6) * t * (t - REAL(1));
            sDC[4 * k + 1] = (REAL(3) * t - REAL(1)) * (t - REAL(1));
            sDC[4 * k + 2] = REAL(6) * t * s;
            sDC[4 * k + 3] = t * (REAL(3) * t - REAL(2));
        }
    }
}

/* The round's tile of weights: sR[e * ldr + c] = w_{col0 + c}(|r_e|) for e < n, c < span, and
 * with sRd the tile of dw/dt. Four elements per thread at a time, so each thread has 16
 * independent L2 loads in flight. */
template <typename REAL>
__device__ __forceinline__ void table_fill(const REAL *__restrict__ tab, int ld, int col0,
                                           int span, int n, const int *sKnot, const REAL *sC,
                                           const REAL *sDC, REAL *sR, REAL *sRd, int ldr)
{
    const int total = n * span;
    constexpr int U = 4;
    for (int base = threadIdx.x; base < total; base += U * blockDim.x) {
        REAL f[U][4];
        int e[U], c[U];
#pragma unroll
        for (int q = 0; q < U; q++) {
            const int idx = base + q * blockDim.x;
            e[q] = idx < total ? idx / span : 0;
            c[q] = idx < total ? idx - e[q] * span : 0;
            const REAL *p = tab + sKnot[e[q]] + col0 + c[q];
#pragma unroll
            for (int j = 0; j < 4; j++)
                f[q][j] = idx < total ? __ldg(p + j * ld) : REAL(0);
        }
#pragma unroll
        for (int q = 0; q < U; q++) {
            if (base + q * blockDim.x >= total)
                break;
            const REAL *cc = sC + 4 * e[q];
            sR[e[q] * ldr + c[q]] = cc[0] * f[q][0] + cc[1] * f[q][1] + cc[2] * f[q][2] +
                                    cc[3] * f[q][3];
            if (sRd) {
                const REAL *dc = sDC + 4 * e[q];
                sRd[e[q] * ldr + c[q]] = dc[0] * f[q][0] + dc[1] * f[q][1] + dc[2] * f[q][2] +
                                         dc[3] * f[q][3];
            }
        }
    }
}

} // namespace fnqcu
