/*
 * gen_cpu_tp_code.c: build-time generator of the CPU backend's tensor-product kernels, one set
 * per path kind (l1, l2 -> l3) with every l <= LMAX (the paths of NequIP and Nequix models with
 * hidden irreps up to l = 3). cpu_eval.inc includes the output once per precision (REAL, FN,
 * FN(vec), VLEN come from there). The Clebsch-Gordan terms (e3nn's real basis times the uvu
 * path coefficient sqrt(2 l3 + 1), as exact hex-float literals) and the m indices are
 * constants, so a vector of channels keeps its inputs in registers and no index array is read:
 *   coeffs: K[q] = sum_terms c y[m2]                 (pair q = (m1, m3), once per edge)
 *   fwd:    o[m3] += w sum_q K_q x[m1_q]             (pairs grouped by m3)
 *   bwd:    dw += sum_m3 g[m3] sum_q K_q x[m1_q];    dy[m2] += c S_q,
 *           S_q = sum_u x[m1_q] g[m3_q] w            (summed over lanes at the end)
 *   snd:    dx[m1] += w sum_q (sign K_q) g[m3_q]     (pairs grouped by m1)
 * Every sum runs in the pair table's order, the order of cpu_eval.inc's generic kernels (the
 * fallback for other paths), so the forward's results are the same bitwise.
 * Also a table of the terms, which cpu_eval.inc compares with the model's before using a kernel.
 * usage: gen_cpu_tp_code OUTPUT.inc
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "math/cg.h"

#define LMAX 3
#define MAX_D (2 * LMAX + 1)
#define MAX_PAIRS (MAX_D * MAX_D)

/* one path kind's pairs in table order (m1-major, then m3: model_build.c's order) */
struct kind {
    int l1, l2, l3, d1, d2, d3;
    double c[MAX_D * MAX_D * MAX_D]; /* times sqrt(d3) */
    int n_pairs, m1[MAX_PAIRS], m3[MAX_PAIRS];
};

static double coef(const struct kind *k, int m1, int m2, int m3)
{
    return k->c[(m1 * k->d2 + m2) * k->d3 + m3];
}

static void kind_make(struct kind *k, int l1, int l2, int l3)
{
    k->l1 = l1, k->l2 = l2, k->l3 = l3;
    k->d1 = 2 * l1 + 1, k->d2 = 2 * l2 + 1, k->d3 = 2 * l3 + 1;
    fnq__cg_real(l1, l2, l3, k->c);
    const double scale = sqrt((double)k->d3);
    for (int i = 0; i < k->d1 * k->d2 * k->d3; i++)
        k->c[i] *= scale; /* the same product as model_build.c's v * coef */
    k->n_pairs = 0;
    for (int m1 = 0; m1 < k->d1; m1++)
        for (int m3 = 0; m3 < k->d3; m3++) {
            int any = 0;
            for (int m2 = 0; m2 < k->d2; m2++)
                any |= coef(k, m1, m2, m3) != 0.0;
            if (any)
                k->m1[k->n_pairs] = m1, k->m3[k->n_pairs] = m3, k->n_pairs++;
        }
}

static void emit_coeffs(FILE *f, const struct kind *k, const char *name)
{
    fprintf(f, "static inline __attribute__((always_inline)) void\nFN(%s)(const REAL *y, "
               "REAL *K)\n{\n", name);
    for (int q = 0; q < k->n_pairs; q++) {
        fprintf(f, "    K[%d] = ", q);
        int first = 1;
        for (int m2 = 0; m2 < k->d2; m2++) {
            const double c = coef(k, k->m1[q], m2, k->m3[q]);
            if (c != 0.0)
                fprintf(f, "%s(REAL)%a * y[%d]", first ? "" : " + ", c, m2), first = 0;
        }
        fprintf(f, ";\n");
    }
    fprintf(f, "}\n\n");
}

/* The loop over vectors of channels that the forward and the sender side share:
 * out[o] += w sum_q in[in_of[q]] coefs[q] over the pairs q whose out_of[q] is o, for each o, in
 * the pairs' order (input and output rows ld_in and ld_out values apart). */
static void emit_weighted_sums(FILE *f, const struct kind *k, const char *in, int n_in,
                               const int *in_of, const char *ld_in, const char *out, int n_out,
                               const int *out_of, const char *ld_out, const char *coefs)
{
    fprintf(f, "    for (int32_t u = 0; u < mul; u += VLEN) {\n");
    fprintf(f, "        const FN(vec) wv = FN(vload)(w + u)");
    for (int i = 0; i < n_in; i++)
        fprintf(f, ", %s%d = FN(vload)(%s + %d * %s + u)", in, i, in, i, ld_in);
    fprintf(f, ";\n        FN(vec) t;\n");
    for (int o = 0; o < n_out; o++) {
        int first = 1;
        for (int q = 0; q < k->n_pairs; q++)
            if (out_of[q] == o) {
                fprintf(f, first ? "        t = %s%d * %s[%d]" : " + %s%d * %s[%d]", in, in_of[q],
                        coefs, q);
                first = 0;
            }
        if (first)
            continue;
        fprintf(f, ";\n        VSTORE(%s + %d * %s + u, FN(vload)(%s + %d * %s + u) + "
                   "wv * t);\n", out, o, ld_out, out, o, ld_out);
    }
    fprintf(f, "    }\n}\n\n");
}

static void emit_fwd(FILE *f, const struct kind *k, const char *name)
{
    fprintf(f, "static inline __attribute__((always_inline)) void\nFN(%s)(int32_t mul, int32_t "
               "ldo, const REAL *K, const REAL *w, const REAL *x, REAL *o)\n{\n", name);
    emit_weighted_sums(f, k, "x", k->d1, k->m1, "mul", "o", k->d3, k->m3, "ldo", "K");
}

/* one vector of channels from u; the first (u = 0) sets the pair sums S instead of adding */
static void emit_bwd_step(FILE *f, const struct kind *k, int first_step)
{
    fprintf(f, "        const FN(vec) wv = FN(vload)(w + u)");
    for (int m1 = 0; m1 < k->d1; m1++)
        fprintf(f, ", x%d = FN(vload)(x + %d * mul + u)", m1, m1);
    fprintf(f, ";\n        FN(vec) dv = FN(vload)(dw + u), g, gw, t;\n");
    for (int m3 = 0; m3 < k->d3; m3++) {
        int first = 1;
        for (int q = 0; q < k->n_pairs; q++)
            if (k->m3[q] == m3) {
                if (first)
                    fprintf(f, "        g = FN(vload)(gr + %d * ldg + u), gw = g * wv;\n"
                               "        t = x%d * K[%d]", m3, k->m1[q], q);
                else
                    fprintf(f, " + x%d * K[%d]", k->m1[q], q);
                first = 0;
            }
        if (first)
            continue;
        fprintf(f, ";\n        dv += g * t;\n");
        for (int q = 0; q < k->n_pairs; q++)
            if (k->m3[q] == m3)
                fprintf(f, "        S[%d] %s x%d * gw;\n", q, first_step ? "=" : "+=", k->m1[q]);
    }
    fprintf(f, "        VSTORE(dw + u, dv);\n");
}

/* needs mul >= VLEN */
static void emit_bwd(FILE *f, const struct kind *k, const char *name)
{
    fprintf(f, "static inline __attribute__((always_inline)) void\nFN(%s)(int32_t mul, int32_t "
               "ldg, const REAL *K, const REAL *w, const REAL *x, const REAL *gr, REAL *dw, "
               "REAL *dy)\n{\n", name);
    fprintf(f, "    FN(vec) S[%d];\n    {\n        const int32_t u = 0;\n", k->n_pairs);
    emit_bwd_step(f, k, 1);
    fprintf(f, "    }\n    for (int32_t u = VLEN; u < mul; u += VLEN) {\n");
    emit_bwd_step(f, k, 0);
    fprintf(f, "    }\n    REAL s;\n");
    for (int q = 0; q < k->n_pairs; q++) {
        fprintf(f, "    s = FN(lane_sum)(&S[%d]);\n", q);
        for (int m2 = 0; m2 < k->d2; m2++) {
            const double c = coef(k, k->m1[q], m2, k->m3[q]);
            if (c != 0.0)
                fprintf(f, "    dy[%d] += (REAL)%a * s;\n", m2, c);
        }
    }
    fprintf(f, "}\n\n");
}

static void emit_snd(FILE *f, const struct kind *k, const char *name)
{
    fprintf(f, "static inline __attribute__((always_inline)) void\nFN(%s)(int32_t mul, int32_t "
               "ldg, const REAL *K, REAL sign, const REAL *w, const REAL *g, REAL *dx)\n{\n",
            name);
    fprintf(f, "    REAL k[%d];\n    for (int q = 0; q < %d; q++)\n        k[q] = sign * K[q];\n",
            k->n_pairs, k->n_pairs);
    emit_weighted_sums(f, k, "g", k->d3, k->m3, "ldg", "dx", k->d1, k->m1, "mul", "k");
}

/* the terms of one kind, in table order, for the check against the model's */
static int emit_terms(FILE *f, const struct kind *k)
{
    int n = 0;
    for (int q = 0; q < k->n_pairs; q++)
        for (int m2 = 0; m2 < k->d2; m2++) {
            const double c = coef(k, k->m1[q], m2, k->m3[q]);
            if (c != 0.0)
                fprintf(f, "    {%d, %d, %d, %a},\n", k->m1[q], m2, k->m3[q], c), n++;
        }
    return n;
}

#define NL (LMAX + 1)
#define N_KEYS (NL * NL * NL)

static int kind_exists(int l1, int l2, int l3)
{
    return l3 >= abs(l1 - l2) && l3 <= l1 + l2;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s output.inc\n", argv[0]);
        return 1;
    }
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        perror("gen_cpu_tp_code");
        return 1;
    }
    static struct kind kinds[N_KEYS];
    fprintf(f, "/* generated by core/src/nequip/gen_cpu_tp_code.c: do not edit */\n"
               "#define TPG_LMAX %d\n#define TPG_KEY(l1, l2, l3) (((l1) * %d + (l2)) * %d + (l3))\n\n",
               LMAX, NL, NL);
    /* kernels */
    for (int key = 0; key < N_KEYS; key++) {
        const int l1 = key / (NL * NL), l2 = key / NL % NL, l3 = key % NL;
        if (!kind_exists(l1, l2, l3))
            continue;
        struct kind *k = &kinds[key];
        kind_make(k, l1, l2, l3);
        char name[64];
        fprintf(f, "/* (%d, %d -> %d): %d pairs */\n", l1, l2, l3, k->n_pairs);
        snprintf(name, sizeof(name), "tpg_coeffs_%d%d%d", l1, l2, l3);
        emit_coeffs(f, k, name);
        snprintf(name, sizeof(name), "tpg_fwd_%d%d%d", l1, l2, l3);
        emit_fwd(f, k, name);
        snprintf(name, sizeof(name), "tpg_bwd_%d%d%d", l1, l2, l3);
        emit_bwd(f, k, name);
        snprintf(name, sizeof(name), "tpg_snd_%d%d%d", l1, l2, l3);
        emit_snd(f, k, name);
    }
    /* term table: per key its range in tpg_terms (n = 0: no kernel) */
    fprintf(f, "static const struct { int8_t m1, m2, m3; double c; } tpg_terms[] = {\n");
    int first[N_KEYS], count[N_KEYS], n = 0;
    for (int key = 0; key < N_KEYS; key++) {
        first[key] = n, count[key] = 0;
        if (kind_exists(key / (NL * NL), key / NL % NL, key % NL))
            count[key] = emit_terms(f, &kinds[key]), n += count[key];
    }
    fprintf(f, "};\nstatic const int16_t tpg_first[%d] = {", N_KEYS);
    for (int key = 0; key < N_KEYS; key++)
        fprintf(f, "%s%d", key ? ", " : "", first[key]);
    fprintf(f, "};\nstatic const int16_t tpg_count[%d] = {", N_KEYS);
    for (int key = 0; key < N_KEYS; key++)
        fprintf(f, "%s%d", key ? ", " : "", count[key]);
    fprintf(f, "};\n\n");
    /* dispatch by key */
    static const char *ops[4][3] = {
        {"coeffs", "const REAL *y, REAL *K", "y, K"},
        {"fwd", "int32_t mul, int32_t ldo, const REAL *K, const REAL *w, const REAL *x, REAL *o",
         "mul, ldo, K, w, x, o"},
        {"bwd", "int32_t mul, int32_t ldg, const REAL *K, const REAL *w, const REAL *x, "
                "const REAL *gr, REAL *dw, REAL *dy", "mul, ldg, K, w, x, gr, dw, dy"},
        {"snd", "int32_t mul, int32_t ldg, const REAL *K, REAL sign, const REAL *w, "
                "const REAL *g, REAL *dx", "mul, ldg, K, sign, w, g, dx"}};
    for (int op = 0; op < 4; op++) {
        fprintf(f, "static inline __attribute__((always_inline)) void\nFN(tpg_%s)(int key, %s)\n"
                   "{\n    switch (key) {\n", ops[op][0], ops[op][1]);
        for (int key = 0; key < N_KEYS; key++)
            if (count[key])
                fprintf(f, "    case %d: FN(tpg_%s_%d%d%d)(%s); break;\n", key, ops[op][0],
                        key / (NL * NL), key / NL % NL, key % NL, ops[op][2]);
        fprintf(f, "    default: break;\n    }\n}\n\n");
    }
    return fclose(f) == 0 ? 0 : 1;
}
