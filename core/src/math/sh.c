/*
 * sh.c: spherical harmonics by Clebsch-Gordan recursion (see sh.h), with gradients by the
 * product rule along the same recursion.
 */
#include "math/sh.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "math/cg.h"

static int largest_power_of_two(int n)
{
    int p = 1;
    while (p * 2 <= n)
        p *= 2;
    return p;
}

int fnq__sh_plan_init(struct fnq_sh_plan *plan, int32_t lmax)
{
    memset(plan, 0, sizeof(*plan));
    if (lmax < 0 || lmax > FNQ_MAX_L)
        return -1;
    plan->lmax = lmax;
    int cap = 0;
    for (int l = 2; l <= lmax; l++) {
        int l2 = largest_power_of_two(l - 1), l1 = l - l2;
        cap += (2 * l1 + 1) * (2 * l2 + 1) * (2 * l + 1);
    }
    plan->terms = malloc(sizeof(struct fnq_sh_term) * (size_t)(cap > 0 ? cap : 1));
    if (!plan->terms)
        return -1;
    int n = 0;
    for (int l = 0; l <= lmax + 1; l++)
        plan->first[l] = 0;
    for (int l = 2; l <= lmax; l++) {
        int l2 = largest_power_of_two(l - 1), l1 = l - l2;
        int d1 = 2 * l1 + 1, d2 = 2 * l2 + 1, d = 2 * l + 1;
        double *c = malloc(sizeof(double) * (size_t)(d1 * d2 * d));
        if (!c) {
            fnq__sh_plan_free(plan);
            return -1;
        }
        fnq__cg_real(l1, l2, l, c);
        /* normalise by the value at the pole (both factors at their m = 0 component) */
        double norm2 = 0.0;
        for (int k = 0; k < d; k++) {
            double v = c[(l1 * d2 + l2) * d + k];
            norm2 += v * v;
        }
        double scale = sqrt((double)d / (double)(d1 * d2)) / sqrt(norm2);
        plan->l1[l] = l1;
        plan->l2[l] = l2;
        plan->first[l] = n;
        for (int i = 0; i < d1; i++)
            for (int j = 0; j < d2; j++)
                for (int k = 0; k < d; k++) {
                    double v = c[(i * d2 + j) * d + k];
                    if (v == 0.0)
                        continue;
                    plan->terms[n].i = (int16_t)i;
                    plan->terms[n].j = (int16_t)j;
                    plan->terms[n].k = (int16_t)k;
                    plan->terms[n].coef = v * scale;
                    n++;
                }
        free(c);
    }
    plan->first[lmax + 1] = n;
    plan->n_terms = n;
    return 0;
}

void fnq__sh_plan_free(struct fnq_sh_plan *plan)
{
    free(plan->terms);
    plan->terms = NULL;
}

void fnq__sh_eval(const struct fnq_sh_plan *plan, const double n[3], double *y)
{
    const double s3 = sqrt(3.0);
    y[0] = 1.0;
    if (plan->lmax >= 1) {
        y[1] = s3 * n[0];
        y[2] = s3 * n[1];
        y[3] = s3 * n[2];
    }
    for (int l = 2; l <= plan->lmax; l++) {
        double *yl = y + l * l;
        const double *y1 = y + plan->l1[l] * plan->l1[l];
        const double *y2 = y + plan->l2[l] * plan->l2[l];
        for (int k = 0; k < 2 * l + 1; k++)
            yl[k] = 0.0;
        for (int t = plan->first[l]; t < plan->first[l + 1]; t++) {
            const struct fnq_sh_term *tm = &plan->terms[t];
            yl[tm->k] += tm->coef * y1[tm->i] * y2[tm->j];
        }
    }
}

void fnq__sh_eval_grad(const struct fnq_sh_plan *plan, const double n[3], double *y, double *dy)
{
    const double s3 = sqrt(3.0);
    y[0] = 1.0;
    dy[0] = dy[1] = dy[2] = 0.0;
    if (plan->lmax >= 1) {
        for (int k = 0; k < 3; k++) {
            y[1 + k] = s3 * n[k];
            for (int a = 0; a < 3; a++)
                dy[(1 + k) * 3 + a] = (a == k) ? s3 : 0.0;
        }
    }
    for (int l = 2; l <= plan->lmax; l++) {
        int o = l * l, o1 = plan->l1[l] * plan->l1[l], o2 = plan->l2[l] * plan->l2[l];
        for (int k = 0; k < 2 * l + 1; k++) {
            y[o + k] = 0.0;
            dy[(o + k) * 3 + 0] = dy[(o + k) * 3 + 1] = dy[(o + k) * 3 + 2] = 0.0;
        }
        for (int t = plan->first[l]; t < plan->first[l + 1]; t++) {
            const struct fnq_sh_term *tm = &plan->terms[t];
            double a = y[o1 + tm->i], b = y[o2 + tm->j];
            y[o + tm->k] += tm->coef * a * b;
            for (int c = 0; c < 3; c++)
                dy[(o + tm->k) * 3 + c] +=
                    tm->coef * (dy[(o1 + tm->i) * 3 + c] * b + a * dy[(o2 + tm->j) * 3 + c]);
        }
    }
}
