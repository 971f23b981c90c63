/*
 * test_cg_sh.c: Clebsch-Gordan coefficients and spherical harmonics against values published
 * for e3nn (not computed by our code):
 *   - C(1,1,0) = delta/sqrt(3), C(1,1,1) = eps/sqrt(6), C(1,1,2)*sqrt(30) nonzeros as listed in
 *     reference/nequip.md section 3, C(0,l,l) = delta/sqrt(2l+1); Frobenius norm 1;
 *   - Y_l for l <= 3 equal e3nn's explicit polynomials (reference/nequip.md section 2.4);
 *   - |Y_l|^2 = 2l+1 for l <= 6; the SH gradient equals finite differences.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "math/cg.h"
#include "fnq_test.h"
#include "math/sh.h"

static void check_cg(void)
{
    double c[7 * 7 * 13];
    fnq__cg_real(1, 1, 0, c);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            CHECK(fabs(c[i * 3 + j] - (i == j ? 1.0 / sqrt(3.0) : 0.0)) < 1e-15,
                  "C(1,1,0)[%d,%d] = %.17g", i, j, c[i * 3 + j]);
    fnq__cg_real(1, 1, 1, c);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 3; k++) {
                /* Levi-Civita symbol */
                double eps = (double)((i - j) * (j - k) * (k - i)) / 2.0;
                CHECK(fabs(c[(i * 3 + j) * 3 + k] - eps / sqrt(6.0)) < 1e-15,
                      "C(1,1,1)[%d,%d,%d] = %.17g", i, j, k, c[(i * 3 + j) * 3 + k]);
            }
    fnq__cg_real(1, 1, 2, c);
    double expect[3][3][5];
    memset(expect, 0, sizeof(expect));
    const double r3 = sqrt(3.0);
    expect[0][0][2] = -1, expect[0][0][4] = -r3, expect[0][1][1] = r3, expect[0][2][0] = r3;
    expect[1][0][1] = r3, expect[1][1][2] = 2, expect[1][2][3] = r3, expect[2][0][0] = r3;
    expect[2][1][3] = r3, expect[2][2][2] = -1, expect[2][2][4] = r3;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 5; k++)
                CHECK(fabs(c[(i * 3 + j) * 5 + k] * sqrt(30.0) - expect[i][j][k]) < 1e-14,
                      "C(1,1,2)[%d,%d,%d]*sqrt(30) = %.17g, expected %g", i, j, k,
                      c[(i * 3 + j) * 5 + k] * sqrt(30.0), expect[i][j][k]);
    for (int l = 0; l <= 4; l++) {
        int d = 2 * l + 1;
        fnq__cg_real(0, l, l, c);
        for (int j = 0; j < d; j++)
            for (int k = 0; k < d; k++)
                CHECK(fabs(c[j * d + k] - (j == k ? 1.0 / sqrt((double)d) : 0.0)) < 1e-15,
                      "C(0,%d,%d)[%d,%d] = %.17g", l, l, j, k, c[j * d + k]);
    }
    for (int l1 = 0; l1 <= 3; l1++)
        for (int l2 = 0; l2 <= 3; l2++)
            for (int l3 = abs(l1 - l2); l3 <= l1 + l2; l3++) {
                int n = (2 * l1 + 1) * (2 * l2 + 1) * (2 * l3 + 1);
                fnq__cg_real(l1, l2, l3, c);
                double f = 0.0;
                for (int q = 0; q < n; q++)
                    f += c[q] * c[q];
                CHECK(fabs(f - 1.0) < 1e-14, "|C(%d,%d,%d)|_F^2 = %.17g", l1, l2, l3, f);
            }
}

/* e3nn's explicit polynomials, reference/nequip.md section 2.4 */
static void e3nn_sh_l3(const double *n, double *y)
{
    double x = n[0], yy = n[1], z = n[2];
    y[0] = 1.0;
    y[1] = sqrt(3.0) * x, y[2] = sqrt(3.0) * yy, y[3] = sqrt(3.0) * z;
    double a = sqrt(15.0) * x * z, b = sqrt(15.0) * x * yy;
    double c = sqrt(5.0) * (yy * yy - 0.5 * (x * x + z * z)), d = sqrt(15.0) * yy * z;
    double e = sqrt(15.0) / 2.0 * (z * z - x * x);
    y[4] = a, y[5] = b, y[6] = c, y[7] = d, y[8] = e;
    y[9] = sqrt(42.0) / 6.0 * (a * z + e * x);
    y[10] = sqrt(7.0) * a * yy;
    y[11] = sqrt(168.0) / 8.0 * (4 * yy * yy - x * x - z * z) * x;
    y[12] = sqrt(7.0) / 2.0 * yy * (2 * yy * yy - 3 * x * x - 3 * z * z);
    y[13] = sqrt(168.0) / 8.0 * z * (4 * yy * yy - x * x - z * z);
    y[14] = sqrt(7.0) * e * yy;
    y[15] = sqrt(42.0) / 6.0 * (e * z - a * x);
}

static void check_sh(void)
{
    struct fnq_sh_plan plan;
    CHECK(fnq__sh_plan_init(&plan, 6) == 0, "sh plan");
    for (int t = 0; t < 20; t++) {
        double v[3] = {test_rand() - 0.5, test_rand() - 0.5, test_rand() - 0.5};
        double r = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        for (int k = 0; k < 3; k++)
            v[k] /= r;
        double y[49], dy[49 * 3], ref[16];
        fnq__sh_eval_grad(&plan, v, y, dy);
        e3nn_sh_l3(v, ref);
        for (int q = 0; q < 16; q++)
            CHECK(fabs(y[q] - ref[q]) < 1e-13, "Y[%d] = %.17g, e3nn %.17g", q, y[q], ref[q]);
        for (int l = 0; l <= 6; l++) {
            double s = 0.0;
            for (int m = 0; m < 2 * l + 1; m++)
                s += y[l * l + m] * y[l * l + m];
            CHECK(fabs(s - (2 * l + 1)) < 1e-12, "|Y_%d|^2 = %.17g", l, s);
        }
        /* gradient of the polynomial against central differences */
        const double h = 1e-6;
        for (int a = 0; a < 3; a++) {
            double vp[3], vm[3], yp[49], ym[49];
            memcpy(vp, v, sizeof(vp));
            memcpy(vm, v, sizeof(vm));
            vp[a] += h, vm[a] -= h;
            fnq__sh_eval(&plan, vp, yp);
            fnq__sh_eval(&plan, vm, ym);
            for (int q = 0; q < 49; q++) {
                double fd = (yp[q] - ym[q]) / (2 * h);
                CHECK(fabs(fd - dy[q * 3 + a]) < 1e-7 * (1 + fabs(fd)), "dY[%d]/dn%d = %.10g, fd %.10g",
                      q, a, dy[q * 3 + a], fd);
            }
        }
    }
    fnq__sh_plan_free(&plan);
}

int main(void)
{
    check_cg();
    check_sh();
    return test_finish("cg and spherical harmonics");
}
