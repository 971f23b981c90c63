/*
 * neighbor.c: the library's own neighbour list: all directed pairs (i, j, image S) with
 * |x_j - x_i + S.cell| < cutoff, excluding i == j at S == 0, for any triclinic cell, periodic or
 * not per axis, including cells thinner than the cutoff (several images of one neighbour).
 *
 * Method: fractional coordinates, wrapped into [0, 1) along periodic axes; bins whose width
 * perpendicular to each pair of cell faces is at least the cutoff where the cell allows, and
 * a search reach of ceil(cutoff / bin width) bins, so thin cells simply search more images.
 * Each (bin offset) maps to one (bin, image) pair, so no pair is found twice. Atoms are
 * processed independently (count pass, then fill pass), giving an order that does not depend
 * on the number of threads.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "parallel.h"
#include "status.h"

struct cell_grid {
    double cell[3][3];     /* rows: lattice vectors (completed for non-periodic axes) */
    double inv[3][3];      /* s = x . inv */
    int periodic[3];
    double s0[3], ext[3];  /* fractional origin and extent of the binned region */
    int64_t nbin[3];
    int64_t reach[3];
    double *frac;          /* [n*3] wrapped fractional coordinates */
    double *wrap;          /* [n*3] integer image the atom was wrapped by (as double) */
    int64_t *bin_start;    /* [nbins+1] */
    int64_t *bin_atoms;    /* [n] */
    int64_t *atom_bin;     /* [n] */
};

static double det3(const double a[3][3])
{
    return a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) -
           a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
           a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
}

static void cross(const double *a, const double *b, double *c)
{
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

static double norm3(const double *a) { return sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]); }

/* The cell used for binning: the caller's rows where given; missing rows of non-periodic axes
 * are replaced by unit vectors perpendicular to the others (ASE's complete_cell idea). */
static enum fnq_status make_cell(const double *cell, const int32_t *pbc, struct cell_grid *gr)
{
    int any_pbc = 0;
    for (int a = 0; a < 3; a++) {
        gr->periodic[a] = pbc ? (pbc[a] != 0) : 0;
        any_pbc |= gr->periodic[a];
    }
    if (any_pbc && !cell)
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "periodic boundaries need a cell");
    /* without periodic axes the caller's cell plays no role: bin in Cartesian space */
    for (int a = 0; a < 3; a++)
        for (int k = 0; k < 3; k++) {
            gr->cell[a][k] = any_pbc ? cell[3 * a + k] : 0.0;
            if (!isfinite(gr->cell[a][k]))
                return fnq__fail(FNQ_STATUS_INVALID_ARG, "cell vector %d is not finite", a);
        }
    double len[3];
    for (int a = 0; a < 3; a++) {
        len[a] = norm3(gr->cell[a]);
        if (gr->periodic[a] && len[a] < 1e-9)
            return fnq__fail(FNQ_STATUS_INVALID_ARG,
                             "axis %d is periodic but its cell vector is zero", a);
    }
    static const double unit[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    for (int a = 0; a < 3; a++) {
        if (len[a] >= 1e-9)
            continue;
        int b = (a + 1) % 3, c = (a + 2) % 3;
        double v[3];
        if (len[b] >= 1e-9 && len[c] >= 1e-9) {
            cross(gr->cell[b], gr->cell[c], v);
        } else if (len[b] >= 1e-9 || len[c] >= 1e-9) {
            const double *w = len[b] >= 1e-9 ? gr->cell[b] : gr->cell[c];
            /* any unit vector perpendicular to w: cross with the least aligned axis */
            int best = 0;
            for (int k = 1; k < 3; k++)
                if (fabs(w[k]) < fabs(w[best]))
                    best = k;
            cross(w, unit[best], v);
        } else {
            memcpy(v, unit[a], sizeof(v));
        }
        double nv = norm3(v);
        for (int k = 0; k < 3; k++)
            gr->cell[a][k] = v[k] / nv;
        len[a] = 1.0;
    }
    double det = det3(gr->cell);
    if (fabs(det) < 1e-9 * len[0] * len[1] * len[2])
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "the cell is singular (volume %g A^3): its vectors are linearly dependent",
                         det);
    const double (*A)[3] = gr->cell;
    gr->inv[0][0] = (A[1][1] * A[2][2] - A[1][2] * A[2][1]) / det;
    gr->inv[0][1] = (A[0][2] * A[2][1] - A[0][1] * A[2][2]) / det;
    gr->inv[0][2] = (A[0][1] * A[1][2] - A[0][2] * A[1][1]) / det;
    gr->inv[1][0] = (A[1][2] * A[2][0] - A[1][0] * A[2][2]) / det;
    gr->inv[1][1] = (A[0][0] * A[2][2] - A[0][2] * A[2][0]) / det;
    gr->inv[1][2] = (A[0][2] * A[1][0] - A[0][0] * A[1][2]) / det;
    gr->inv[2][0] = (A[1][0] * A[2][1] - A[1][1] * A[2][0]) / det;
    gr->inv[2][1] = (A[0][1] * A[2][0] - A[0][0] * A[2][1]) / det;
    gr->inv[2][2] = (A[0][0] * A[1][1] - A[0][1] * A[1][0]) / det;
    return FNQ_STATUS_OK;
}

static enum fnq_status make_bins(int64_t n, const double *pos, double rc, struct cell_grid *gr)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int64_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) {
            double s = 0.0;
            for (int k = 0; k < 3; k++)
                s += pos[3 * i + k] * gr->inv[k][a];
            double w = 0.0;
            if (gr->periodic[a]) {
                w = floor(s);
                s -= w;
                if (s >= 1.0) { /* rounding: floor(s) = s - tiny */
                    s -= 1.0;
                    w += 1.0;
                }
            }
            gr->frac[3 * i + a] = s;
            gr->wrap[3 * i + a] = -w;
            if (s < lo[a]) lo[a] = s;
            if (s > hi[a]) hi[a] = s;
        }
    int64_t total = 1;
    for (int a = 0; a < 3; a++) {
        double colnorm = sqrt(gr->inv[0][a] * gr->inv[0][a] + gr->inv[1][a] * gr->inv[1][a] +
                              gr->inv[2][a] * gr->inv[2][a]);
        double spacing = 1.0 / colnorm; /* distance between the faces s_a = 0 and s_a = 1 */
        if (gr->periodic[a]) {
            gr->s0[a] = 0.0;
            gr->ext[a] = 1.0;
        } else {
            gr->s0[a] = lo[a];
            gr->ext[a] = (hi[a] > lo[a]) ? (hi[a] - lo[a]) * (1.0 + 1e-12) : 1e-12;
        }
        double perp = gr->ext[a] * spacing;
        double nb = floor(perp / rc);
        gr->nbin[a] = nb < 1.0 ? 1 : (nb > 1e6 ? 1000000 : (int64_t)nb);
        total *= gr->nbin[a];
    }
    /* keep the grid no larger than a few bins per atom (sparse molecules in large boxes) */
    while (total > 8 * n + 64) {
        int big = 0;
        for (int a = 1; a < 3; a++)
            if (gr->nbin[a] > gr->nbin[big])
                big = a;
        total /= gr->nbin[big];
        gr->nbin[big] = (gr->nbin[big] + 1) / 2;
        total *= gr->nbin[big];
    }
    for (int a = 0; a < 3; a++) {
        double colnorm = sqrt(gr->inv[0][a] * gr->inv[0][a] + gr->inv[1][a] * gr->inv[1][a] +
                              gr->inv[2][a] * gr->inv[2][a]);
        double width = gr->ext[a] / colnorm / (double)gr->nbin[a];
        double r = ceil(rc / width);
        if (!gr->periodic[a] && r > (double)gr->nbin[a])
            r = (double)gr->nbin[a];
        if (r > 1e6)
            return fnq__fail(FNQ_STATUS_INVALID_ARG,
                             "the cell is %g A thin along axis %d: a %g A cutoff would need over a "
                             "million periodic images",
                             width, a, rc);
        gr->reach[a] = r < 1.0 ? 1 : (int64_t)r;
    }
    gr->bin_start = calloc((size_t)(total + 1), sizeof(int64_t));
    if (!gr->bin_start)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of host memory for %lld bins",
                         (long long)total);
    for (int64_t i = 0; i < n; i++) {
        int64_t b[3];
        for (int a = 0; a < 3; a++) {
            double f = (gr->frac[3 * i + a] - gr->s0[a]) / gr->ext[a] * (double)gr->nbin[a];
            b[a] = (int64_t)floor(f);
            if (b[a] < 0) b[a] = 0;
            if (b[a] >= gr->nbin[a]) b[a] = gr->nbin[a] - 1;
        }
        gr->atom_bin[i] = (b[0] * gr->nbin[1] + b[1]) * gr->nbin[2] + b[2];
        gr->bin_start[gr->atom_bin[i] + 1]++;
    }
    for (int64_t k = 0; k < total; k++)
        gr->bin_start[k + 1] += gr->bin_start[k];
    int64_t *fill = malloc(sizeof(int64_t) * (size_t)(total > 0 ? total : 1));
    if (!fill)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of host memory for bins");
    memcpy(fill, gr->bin_start, sizeof(int64_t) * (size_t)total);
    for (int64_t i = 0; i < n; i++)
        gr->bin_atoms[fill[gr->atom_bin[i]]++] = i;
    free(fill);
    return FNQ_STATUS_OK;
}

static inline int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Visit the neighbours of atom i; write them at out (if not NULL). Returns the count. */
static int64_t visit(const struct cell_grid *gr, const double *pos, int64_t i, double rc2,
                     int64_t *out_send, double *out_vec)
{
    int64_t bi = gr->atom_bin[i];
    int64_t b[3] = {bi / (gr->nbin[1] * gr->nbin[2]), (bi / gr->nbin[2]) % gr->nbin[1],
                    bi % gr->nbin[2]};
    int64_t count = 0;
    for (int64_t o0 = -gr->reach[0]; o0 <= gr->reach[0]; o0++)
        for (int64_t o1 = -gr->reach[1]; o1 <= gr->reach[1]; o1++)
            for (int64_t o2 = -gr->reach[2]; o2 <= gr->reach[2]; o2++) {
                int64_t o[3] = {o0, o1, o2}, nb[3], img[3];
                int skip = 0;
                for (int a = 0; a < 3 && !skip; a++) {
                    int64_t t = b[a] + o[a];
                    if (gr->periodic[a]) {
                        img[a] = floor_div(t, gr->nbin[a]);
                        nb[a] = t - img[a] * gr->nbin[a];
                    } else {
                        img[a] = 0;
                        nb[a] = t;
                        skip = (t < 0 || t >= gr->nbin[a]);
                    }
                }
                if (skip)
                    continue;
                int64_t bin = (nb[0] * gr->nbin[1] + nb[1]) * gr->nbin[2] + nb[2];
                for (int64_t q = gr->bin_start[bin]; q < gr->bin_start[bin + 1]; q++) {
                    int64_t j = gr->bin_atoms[q];
                    double S[3];
                    for (int a = 0; a < 3; a++)
                        S[a] = (double)img[a] + gr->wrap[3 * j + a] - gr->wrap[3 * i + a];
                    if (j == i && S[0] == 0.0 && S[1] == 0.0 && S[2] == 0.0)
                        continue;
                    double r[3];
                    for (int k = 0; k < 3; k++)
                        r[k] = pos[3 * j + k] - pos[3 * i + k] + S[0] * gr->cell[0][k] +
                               S[1] * gr->cell[1][k] + S[2] * gr->cell[2][k];
                    if (r[0] * r[0] + r[1] * r[1] + r[2] * r[2] >= rc2)
                        continue;
                    if (out_send) {
                        out_send[count] = j;
                        memcpy(out_vec + 3 * count, r, sizeof(r));
                    }
                    count++;
                }
            }
    return count;
}

enum fnq_status fnq__graph_from_cell(struct fnq_graph_buf *b, int64_t n, const double *pos,
                                     const int32_t *species, const double *cell,
                                     const int32_t *pbc, const struct fnq_limits *lim)
{
    FNQ_CHECK(fnq__check_positions(n, pos));
    struct cell_grid gr;
    memset(&gr, 0, sizeof(gr));
    FNQ_CHECK(make_cell(cell, pbc, &gr));
    gr.frac = malloc(sizeof(double) * 3 * (size_t)(n > 0 ? n : 1));
    gr.wrap = malloc(sizeof(double) * 3 * (size_t)(n > 0 ? n : 1));
    gr.bin_atoms = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    gr.atom_bin = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    enum fnq_status st = FNQ_STATUS_OK;
    if (!gr.frac || !gr.wrap || !gr.bin_atoms || !gr.atom_bin)
        st = fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of host memory for the neighbour list");
    if (st == FNQ_STATUS_OK)
        st = make_bins(n, pos, lim->cutoff, &gr);
    if (st == FNQ_STATUS_OK)
        st = fnq__graph_reserve(b, n, 0);
    const double rc2 = lim->cutoff * lim->cutoff;
    if (st == FNQ_STATUS_OK) {
        int64_t *cnt = b->scratch;
#pragma omp parallel for schedule(dynamic, 64)
        for (int64_t i = 0; i < n; i++)
            cnt[i] = visit(&gr, pos, i, rc2, NULL, NULL);
        for (int64_t i = 0; i < n && st == FNQ_STATUS_OK; i++)
            if (cnt[i] > lim->max_neighbors)
                st = fnq__fail(FNQ_STATUS_INVALID_ARG,
                               "atom %lld has %lld neighbours within the %g A cutoff, more than "
                               "the limit of %lld (positions in the wrong units, or a cell too "
                               "small? raise it with fnq_ctx_set_max_neighbors)",
                               (long long)i, (long long)cnt[i], lim->cutoff,
                               (long long)lim->max_neighbors);
        int64_t total = 0;
        for (int64_t i = 0; i < n; i++)
            total += cnt[i];
        if (st == FNQ_STATUS_OK)
            st = fnq__graph_reserve(b, n, total);
        if (st == FNQ_STATUS_OK) {
            cnt = b->scratch;
            b->recv_start[0] = 0;
            for (int64_t i = 0; i < n; i++)
                b->recv_start[i + 1] = b->recv_start[i] + cnt[i];
#pragma omp parallel for schedule(dynamic, 64)
            for (int64_t i = 0; i < n; i++) {
                int64_t e0 = b->recv_start[i];
                int64_t k = visit(&gr, pos, i, rc2, b->edge_send + e0, b->edge_vec + 3 * e0);
                for (int64_t q = 0; q < k; q++)
                    b->edge_recv[e0 + q] = i;
            }
            b->g.n_local = n;
            b->g.n_all = n;
            b->g.n_edges = total;
            b->g.species = species;
            st = fnq__graph_finish(b, lim);
        }
    }
    free(gr.frac), free(gr.wrap), free(gr.bin_atoms), free(gr.atom_bin), free(gr.bin_start);
    return st;
}
