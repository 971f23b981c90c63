/*
 * cg.c: real-basis Clebsch-Gordan coefficients, built the way e3nn does it so that the signs of
 * every path match the learned weights: complex su(2) coefficients (Racah's formula, as in
 * qutip), then the change of basis Q_l (real <- complex, with e3nn's extra factor (-i)^l that
 * makes the result real): C[j,l,m] = sum Q1[i,j] Q2[k,l] conj(Q3[n,m]) C_su2[i,k,n].
 */
#include "math/cg.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static long double factorial(int n)
{
    long double f = 1.0L;
    for (int k = 2; k <= n; k++)
        f *= (long double)k;
    return f;
}

/* <j1 m1; j2 m2 | j3 m3> for integer j (qutip's `clebsch`) */
static long double su2_cg(int j1, int m1, int j2, int m2, int j3, int m3)
{
    if (m3 != m1 + m2)
        return 0.0L;
    int vmin = -j1 + j2 + m3;
    if (-j1 + m1 > vmin) vmin = -j1 + m1;
    if (vmin < 0) vmin = 0;
    int vmax = j2 + j3 + m1;
    if (j3 - j1 + j2 < vmax) vmax = j3 - j1 + j2;
    if (j3 + m3 < vmax) vmax = j3 + m3;

    long double pre = (2.0L * j3 + 1.0L) * factorial(j3 + j1 - j2) * factorial(j3 - j1 + j2) *
                      factorial(j1 + j2 - j3) * factorial(j3 + m3) * factorial(j3 - m3) /
                      (factorial(j1 + j2 + j3 + 1) * factorial(j1 - m1) * factorial(j1 + m1) *
                       factorial(j2 - m2) * factorial(j2 + m2));
    long double s = 0.0L;
    for (int v = vmin; v <= vmax; v++) {
        long double term = factorial(j2 + j3 + m1 - v) * factorial(j1 - m1 + v) /
                           (factorial(v) * factorial(j3 - j1 + j2 - v) * factorial(j3 + m3 - v) *
                            factorial(v + j1 - j2 - m3));
        s += ((v + j2 + m2) % 2 == 0) ? term : -term;
    }
    return sqrtl(pre) * s;
}

/* Q_l[i][j]: row i = complex basis index (m + l), column j = real basis index */
static void change_basis_real_to_complex(int l, long double complex *q)
{
    int d = 2 * l + 1;
    const long double r2 = 1.0L / sqrtl(2.0L);
    for (int k = 0; k < d * d; k++)
        q[k] = 0.0L;
    for (int m = -l; m < 0; m++) {
        q[(l + m) * d + (l - m)] = r2;
        q[(l + m) * d + (l + m)] = -I * r2;
    }
    q[l * d + l] = 1.0L;
    for (int m = 1; m <= l; m++) {
        long double sign = (m % 2 == 0) ? 1.0L : -1.0L;
        q[(l + m) * d + (l + m)] = sign * r2;
        q[(l + m) * d + (l - m)] = I * sign * r2;
    }
    /* (-i)^l */
    long double complex phase = 1.0L;
    for (int k = 0; k < l; k++)
        phase *= -I;
    for (int k = 0; k < d * d; k++)
        q[k] *= phase;
}

int fnq__cg_real(int l1, int l2, int l3, double *c)
{
    int d1 = 2 * l1 + 1, d2 = 2 * l2 + 1, d3 = 2 * l3 + 1;
    memset(c, 0, sizeof(double) * (size_t)(d1 * d2 * d3));
    if (l3 < abs(l1 - l2) || l3 > l1 + l2)
        return -1;

    long double *su2 = calloc((size_t)(d1 * d2 * d3), sizeof(long double));
    long double complex *q1 = malloc(sizeof(long double complex) * (size_t)(d1 * d1));
    long double complex *q2 = malloc(sizeof(long double complex) * (size_t)(d2 * d2));
    long double complex *q3 = malloc(sizeof(long double complex) * (size_t)(d3 * d3));
    if (!su2 || !q1 || !q2 || !q3) {
        free(su2), free(q1), free(q2), free(q3);
        return -1;
    }
    long double inv_norm = 1.0L / sqrtl((long double)d3);
    for (int m1 = -l1; m1 <= l1; m1++)
        for (int m2 = -l2; m2 <= l2; m2++) {
            int m3 = m1 + m2;
            if (m3 < -l3 || m3 > l3)
                continue;
            su2[((l1 + m1) * d2 + (l2 + m2)) * d3 + (l3 + m3)] =
                su2_cg(l1, m1, l2, m2, l3, m3) * inv_norm;
        }
    change_basis_real_to_complex(l1, q1);
    change_basis_real_to_complex(l2, q2);
    change_basis_real_to_complex(l3, q3);

    for (int j = 0; j < d1; j++)
        for (int l = 0; l < d2; l++)
            for (int m = 0; m < d3; m++) {
                long double complex acc = 0.0L;
                for (int i = 0; i < d1; i++)
                    for (int k = 0; k < d2; k++)
                        for (int n = 0; n < d3; n++) {
                            long double s = su2[(i * d2 + k) * d3 + n];
                            if (s != 0.0L)
                                acc += q1[i * d1 + j] * q2[k * d2 + l] * conjl(q3[n * d3 + m]) * s;
                        }
                double v = (double)creall(acc);
                c[(j * d2 + l) * d3 + m] = fabs(v) < 1e-15 ? 0.0 : v;
            }
    free(su2), free(q1), free(q2), free(q3);
    return 0;
}
