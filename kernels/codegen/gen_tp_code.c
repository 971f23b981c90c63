/*
 * gen_tp_code.c: build-time generator of the tensor-product code the CUDA kernels use.
 * For every path (l1, l2 -> l3) with l <= FNQ_TP_LMAX it writes unrolled device functions whose
 * Clebsch-Gordan terms (e3nn's real basis, times the uvu path coefficient sqrt(2 l3 + 1), as
 * exact hex-float literals) and m indices are constants, so a thread keeps a channel's sender
 * features, Y and accumulators in registers:
 *   fwd: t[m3] += c x[m1] y[m2]                        (message of one channel)
 *   bwd: v[m2] += c x[m1] g[m3]                        (dE/dY, before the radial weight;
 *                                                       dE/d radial weight = y . v)
 *        dxr[m1] += c y[m2] gj[m3]                     (sender gradient of the reverse edge;
 *                                                       gj = 0 where it is not wanted: no
 *                                                       branches, one copy of the loop)
 * Terms of one output with the same |c| are summed first and multiplied by |c| once
 * (t[m3] += |c| (x y - x y + ...)): k + 1 instructions per group of k terms instead of 2 k
 * (a product by a constant and an FMA per term; the passes are issue bound, bench/NOTES.md).
 * Also a host table of the same terms, which the backend compares with the model's.
 * Groups (tp_group.cuh): the paths one warp runs together per edge, all paths of one l1 with
 * l2 in [lo, hi] and l1 + l2 + l3 even (the natural-parity paths that NequIP and Nequix models
 * with hidden irreps 0e + 1o + 2e + 3o have), in (l2, l3) order; and a host copy to match a
 * model's paths against.
 * usage: gen_tp_code OUTPUT_DEVICE.inc OUTPUT_HOST.inc
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "math/cg.h"

#define LMAX 4

/* (l1, lo, hi, l3max) of each group: its paths are those of l1 with l2 in [lo, hi] and
 * l3 <= l3max. A model's paths match a group when those of its input block with l2 in
 * [lo, hi] are exactly the group's, so l3max keeps the groups of l <= 3 models (hidden irreps
 * up to 3) apart from those of l = 4 models (up to 4).
 * l <= 3: every l2 (no register spills at 128 per thread; l1 = 2 and 3 split by l2 into two
 * groups each ran slower: bench/NOTES.md, "Numbers behind comments").
 * l = 4: l2 split into [0, 2] and [3, 4], so that a lane's Y (25 values for l2 <= 4) and
 * accumulators fit its registers. */
static const int kGroups[][4] = {
    {0, 0, 3, 3}, {1, 0, 3, 3}, {2, 0, 3, 3}, {3, 0, 3, 3},
    {0, 0, 2, 4}, {0, 3, 4, 4}, {1, 0, 2, 4}, {1, 3, 4, 4}, {2, 0, 2, 4}, {2, 3, 4, 4},
    {3, 0, 2, 4}, {3, 3, 4, 4}, {4, 0, 2, 4}, {4, 3, 4, 4}};

/* One output element out[o] (o is index number `oi` of (m1, m2, m3): 0, 1 or 2) of a path
 * with coefficients c[(m1 d2 + m2) d3 + m3] (times coef): its terms c a[i] b[j] over the two
 * other indices (ai, bi), grouped by |c| in order of first appearance:
 *   out[o] += R(|c|) * (a[i] * b[j] - a[i'] * b[j'] + ...);
 * the order is fixed by the loops, so the results are reproducible. */
/* The coefficient (times coef) of the term with index o at position oi, p at ai, q at bi. */
static double term_coef(const double *c, int d2, int d3, double coef, int oi, int o, int ai,
                        int p, int bi, int q)
{
    int idx[3];
    idx[oi] = o;
    idx[ai] = p;
    idx[bi] = q;
    return c[(idx[0] * d2 + idx[1]) * d3 + idx[2]] * coef;
}

static void emit_grouped(FILE *f, const double *c, int d1, int d2, int d3, double coef, int oi,
                         int o, const char *out, const char *a, int ai, const char *b, int bi)
{
    const int dims[3] = {d1, d2, d3};
    double seen[81]; /* distinct magnitudes of one output: at most 9 x 9 (l = 4) */
    int n_seen = 0;
    for (int p = 0; p < dims[ai]; p++)
        for (int q = 0; q < dims[bi]; q++) {
            const double w = term_coef(c, d2, d3, coef, oi, o, ai, p, bi, q);
            if (w == 0.0)
                continue;
            const double mag = fabs(w);
            int known = 0;
            for (int k = 0; k < n_seen; k++)
                known |= seen[k] == mag;
            if (known)
                continue;
            seen[n_seen++] = mag;
            /* every term of this magnitude, from here on */
            fprintf(f, "        %s[%d] += R(%a) * (", out, o, mag);
            int first = 1;
            for (int p2 = 0; p2 < dims[ai]; p2++)
                for (int q2 = 0; q2 < dims[bi]; q2++) {
                    const double w2 = term_coef(c, d2, d3, coef, oi, o, ai, p2, bi, q2);
                    if (fabs(w2) != mag || (p2 * dims[bi] + q2) < (p * dims[bi] + q))
                        continue;
                    fprintf(f, "%s%s[%d] * %s[%d]", first ? (w2 < 0 ? "-" : "")
                                                          : (w2 < 0 ? " - " : " + "),
                            a, p2, b, q2);
                    first = 0;
                }
            fprintf(f, ");\n");
        }
}

/* n integers, comma separated */
static void print_ints(FILE *f, const int *v, int n)
{
    for (int k = 0; k < n; k++)
        fprintf(f, "%s%d", k ? ", " : "", v[k]);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s device.inc host.inc\n", argv[0]);
        return 1;
    }
    FILE *dev = fopen(argv[1], "w"), *host = fopen(argv[2], "w");
    if (!dev || !host) {
        perror("gen_tp_code");
        return 1;
    }
    fprintf(dev, "/* generated by kernels/codegen/gen_tp_code.c: do not edit */\n"
                 "#define FNQ_TP_LMAX %d\n\nnamespace fnqcu {\nnamespace tpgen {\n\n"
                 "template <int L1, int L2, int L3> struct Path;\n\n",
            LMAX);
    fprintf(host, "/* generated by kernels/codegen/gen_tp_code.c: do not edit */\n"
                  "#define FNQ_TP_LMAX_HOST %d\n"
                  "static const struct { int l1, l2, l3, m1, m2, m3; double c; } "
                  "fnq_tp_generated_terms[] = {\n", LMAX);
    char list[8192];
    int nl = 0;
    list[0] = 0;
    for (int l1 = 0; l1 <= LMAX; l1++)
        for (int l2 = 0; l2 <= LMAX; l2++)
            for (int l3 = abs(l1 - l2); l3 <= l1 + l2 && l3 <= LMAX; l3++) {
                int d1 = 2 * l1 + 1, d2 = 2 * l2 + 1, d3 = 2 * l3 + 1;
                double *c = malloc(sizeof(double) * (size_t)(d1 * d2 * d3));
                fnq__cg_real(l1, l2, l3, c);
                const double coef = sqrt((double)d3);
                fprintf(dev, "template <> struct Path<%d, %d, %d> {\n", l1, l2, l3);
                fprintf(dev, "    static constexpr int D1 = %d, D2 = %d, D3 = %d;\n", d1, d2, d3);
                /* forward */
                fprintf(dev, "    template <typename R>\n    __device__ __forceinline__ static "
                             "void fwd(const R *x, const R *y, R *t)\n    {\n");
                for (int m3 = 0; m3 < d3; m3++)
                    emit_grouped(dev, c, d1, d2, d3, coef, 2, m3, "t", "x", 0, "y", 1);
                fprintf(dev, "    }\n");
                /* backward; dE/d(radial weight) is not here: it is sum_m2 y[m2] v[m2]
                 * (before v is scaled by the weight), D2 FMAs instead of 3 per term */
                fprintf(dev, "    template <typename R>\n    __device__ __forceinline__ static "
                             "void bwd(const R *x, const R *y, const R *g, const R *gj, R *v, "
                             "R *dxr)\n    {\n");
                for (int m2 = 0; m2 < d2; m2++)
                    emit_grouped(dev, c, d1, d2, d3, coef, 1, m2, "v", "x", 0, "g", 2);
                for (int m1 = 0; m1 < d1; m1++)
                    emit_grouped(dev, c, d1, d2, d3, coef, 0, m1, "dxr", "y", 1, "gj", 2);
                for (int m1 = 0; m1 < d1; m1++)
                    for (int m3 = 0; m3 < d3; m3++)
                        for (int m2 = 0; m2 < d2; m2++) {
                            double w = c[(m1 * d2 + m2) * d3 + m3];
                            if (w != 0.0)
                                fprintf(host, "    {%d, %d, %d, %d, %d, %d, %a},\n", l1, l2, l3,
                                        m1, m2, m3, w * coef);
                        }
                fprintf(dev, "    }\n};\n\n");
                nl += snprintf(list + nl, sizeof(list) - (size_t)nl, " X(%d, %d, %d)", l1, l2, l3);
                free(c);
            }
    /* groups */
    const int n_groups = (int)(sizeof(kGroups) / sizeof(kGroups[0]));
    fprintf(dev, "template <int G> struct Group;\n\n");
    fprintf(host, "};\n\nstatic const struct { int l1, lo, hi, n, l2[16], l3[16]; } "
                  "fnq_tp_groups[] = {\n");
    char glist[512];
    int ng = 0;
    glist[0] = 0;
    for (int g = 0; g < n_groups; g++) {
        const int l1 = kGroups[g][0], lo = kGroups[g][1], hi = kGroups[g][2];
        const int l3max = kGroups[g][3];
        int l2s[16], l3s[16], n = 0;
        for (int l2 = lo; l2 <= hi; l2++)
            for (int l3 = abs(l1 - l2); l3 <= l1 + l2 && l3 <= l3max; l3++)
                if ((l1 + l2 + l3) % 2 == 0)
                    l2s[n] = l2, l3s[n] = l3, n++;
        fprintf(dev, "template <> struct Group<%d> {\n    static constexpr int L1 = %d, L2LO = %d, "
                     "L2HI = %d, N = %d;\n    static constexpr int L2[N] = {",
                g, l1, lo, hi, n);
        print_ints(dev, l2s, n);
        fprintf(dev, "}, L3[N] = {");
        print_ints(dev, l3s, n);
        fprintf(dev, "};\n};\n\n");
        fprintf(host, "    {%d, %d, %d, %d, {", l1, lo, hi, n);
        print_ints(host, l2s, n);
        fprintf(host, "}, {");
        print_ints(host, l3s, n);
        fprintf(host, "}},\n");
        ng += snprintf(glist + ng, sizeof(glist) - (size_t)ng, " X(%d)", g);
    }
    fprintf(dev, "} // namespace tpgen\n} // namespace fnqcu\n\n#define FNQ_TP_PATHS(X)%s\n"
                 "#define FNQ_TP_GROUPS(X)%s\n",
            list, glist);
    fprintf(host, "};\n");
    fclose(dev);
    fclose(host);
    return 0;
}
