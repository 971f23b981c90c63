/*
 * neighbor.c: the library's own neighbour list on the CPU: all directed pairs (i, j, image S)
 * with |x_j - x_i + S.cell| < cutoff, excluding i == j at S == 0, for any triclinic cell,
 * periodic or not per axis, including cells thinner than the cutoff (several images of one
 * neighbour). The binning is in cell_grid.h; each (bin offset) maps to one (bin, image) pair,
 * so no pair is found twice. Atoms are processed independently (count pass, then fill pass),
 * giving an order that does not depend on the number of threads.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/cell_grid.h"
#include "graph/graph.h"
#include "backend/parallel.h"
#include "api/status.h"

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

/* Limits of what the cell grid can represent exactly enough: a cell vector longer than this
 * (metres or an "infinite" box given as a cell) overflows the grid's arithmetic; an atom
 * farther outside a periodic cell than this many cell lengths has lost, in double precision,
 * the digits that wrapping it back needs (1e6 lengths: ~2e-10 of a length is left). */
enum { kMaxCellLength = 100000000 }; /* A */
#define MAX_CELLS_OUTSIDE 1e6

static double norm3(const double *a) { return sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]); }

/* The cell used for binning: the caller's rows where given; missing rows of non-periodic axes
 * are replaced by unit vectors perpendicular to the others (ASE's complete_cell idea). */
static enum fnq_status make_cell(const double *cell, const int32_t *pbc, struct fnq_cell_grid *gr)
{
    int any_pbc = 0;
    for (int a = 0; a < 3; a++) {
        gr->view.periodic[a] = pbc ? (pbc[a] != 0) : 0;
        any_pbc |= gr->view.periodic[a];
    }
    if (any_pbc && !cell)
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "periodic boundaries need a cell");
    /* without periodic axes the caller's cell plays no role: bin in Cartesian space */
    for (int a = 0; a < 3; a++)
        for (int k = 0; k < 3; k++) {
            gr->view.cell[a][k] = any_pbc ? cell[3 * a + k] : 0.0;
            if (!isfinite(gr->view.cell[a][k]))
                return fnq__fail(FNQ_STATUS_INVALID_ARG, "cell vector %d is not finite", a);
        }
    double len[3];
    for (int a = 0; a < 3; a++) {
        len[a] = norm3(gr->view.cell[a]);
        if (gr->view.periodic[a] && len[a] < 1e-9)
            return fnq__fail(FNQ_STATUS_INVALID_ARG,
                             "axis %d is periodic but its cell vector is zero", a);
        if (len[a] > kMaxCellLength)
            return fnq__fail(FNQ_STATUS_INVALID_ARG,
                             "cell vector %d is %g A long; cells up to %g A are supported (the "
                             "models work in Angstrom; a non-periodic axis needs no cell vector)",
                             a, len[a], (double)kMaxCellLength);
    }
    static const double unit[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    for (int a = 0; a < 3; a++) {
        if (len[a] >= 1e-9)
            continue;
        int b = (a + 1) % 3, c = (a + 2) % 3;
        double v[3];
        if (len[b] >= 1e-9 && len[c] >= 1e-9) {
            cross(gr->view.cell[b], gr->view.cell[c], v);
        } else if (len[b] >= 1e-9 || len[c] >= 1e-9) {
            const double *w = len[b] >= 1e-9 ? gr->view.cell[b] : gr->view.cell[c];
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
            gr->view.cell[a][k] = v[k] / nv;
        len[a] = 1.0;
    }
    double det = det3(gr->view.cell);
    if (fabs(det) < 1e-9 * len[0] * len[1] * len[2])
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "the cell is singular (volume %g A^3): its vectors are linearly dependent",
                         det);
    const double (*A)[3] = gr->view.cell;
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

static enum fnq_status make_bins(int64_t n, const double *pos, double rc, struct fnq_cell_grid *gr)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int64_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) {
            double s = 0.0;
            for (int k = 0; k < 3; k++)
                s += pos[3 * i + k] * gr->inv[k][a];
            double w = 0.0;
            if (gr->view.periodic[a] && !(fabs(s) <= MAX_CELLS_OUTSIDE))
                return fnq__fail_atoms(FNQ_STATUS_INVALID_ARG, i, -1,
                                       "atom %lld lies %g cell lengths outside the cell along "
                                       "lattice vector %d; beyond %g its position has lost the "
                                       "precision wrapping it back needs (wrap it into the cell, "
                                       "or check the units)",
                                       (long long)i, fabs(s), a, MAX_CELLS_OUTSIDE);
            if (gr->view.periodic[a]) {
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
        if (gr->view.periodic[a]) {
            gr->s0[a] = 0.0;
            gr->ext[a] = 1.0;
        } else {
            gr->s0[a] = lo[a];
            gr->ext[a] = (hi[a] > lo[a]) ? (hi[a] - lo[a]) * (1.0 + 1e-12) : 1e-12;
        }
        double perp = gr->ext[a] * spacing;
        double nb = floor(perp / rc);
        gr->view.nbin[a] = nb < 1.0 ? 1 : (nb > 1e6 ? 1000000 : (int64_t)nb);
        total *= gr->view.nbin[a];
    }
    /* keep the grid no larger than a few bins per atom (sparse molecules in large boxes) */
    while (total > 8 * n + 64) {
        int big = 0;
        for (int a = 1; a < 3; a++)
            if (gr->view.nbin[a] > gr->view.nbin[big])
                big = a;
        total /= gr->view.nbin[big];
        gr->view.nbin[big] = (gr->view.nbin[big] + 1) / 2;
        total *= gr->view.nbin[big];
    }
    for (int a = 0; a < 3; a++) {
        double colnorm = sqrt(gr->inv[0][a] * gr->inv[0][a] + gr->inv[1][a] * gr->inv[1][a] +
                              gr->inv[2][a] * gr->inv[2][a]);
        double width = gr->ext[a] / colnorm / (double)gr->view.nbin[a];
        double r = ceil(rc / width);
        if (!gr->view.periodic[a] && r > (double)gr->view.nbin[a])
            r = (double)gr->view.nbin[a];
        if (r > 1e6)
            return fnq__fail(FNQ_STATUS_INVALID_ARG,
                             "the cell is %g A thin along axis %d: a %g A cutoff would need over a "
                             "million periodic images",
                             width, a, rc);
        gr->view.reach[a] = r < 1.0 ? 1 : (int64_t)r;
    }
    gr->nbins = total;
    gr->bin_start = calloc((size_t)(total + 1), sizeof(int64_t));
    if (!gr->bin_start)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of host memory for %lld bins",
                         (long long)total);
    for (int64_t i = 0; i < n; i++) {
        int64_t b[3];
        for (int a = 0; a < 3; a++) {
            double f = (gr->frac[3 * i + a] - gr->s0[a]) / gr->ext[a] * (double)gr->view.nbin[a];
            b[a] = (int64_t)floor(f);
            if (b[a] < 0) b[a] = 0;
            if (b[a] >= gr->view.nbin[a]) b[a] = gr->view.nbin[a] - 1;
        }
        gr->atom_bin[i] = (b[0] * gr->view.nbin[1] + b[1]) * gr->view.nbin[2] + b[2];
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

enum fnq_status fnq__cell_grid_build(int64_t n, const double *pos, const double *cell,
                                     const int32_t *pbc, double cutoff, struct fnq_cell_grid *gr)
{
    memset(gr, 0, sizeof(*gr));
    FNQ_CHECK(make_cell(cell, pbc, gr));
    size_t m = (size_t)(n > 0 ? n : 1);
    gr->frac = malloc(sizeof(double) * 3 * m);
    gr->wrap = malloc(sizeof(double) * 3 * m);
    gr->bin_atoms = malloc(sizeof(int64_t) * m);
    gr->atom_bin = malloc(sizeof(int64_t) * m);
    if (!gr->frac || !gr->wrap || !gr->bin_atoms || !gr->atom_bin) {
        fnq__cell_grid_free(gr);
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of host memory for the neighbour list");
    }
    enum fnq_status st = make_bins(n, pos, cutoff, gr);
    if (st != FNQ_STATUS_OK) {
        fnq__cell_grid_free(gr);
        return st;
    }
    gr->view.wrap = gr->wrap;
    gr->view.bin_start = gr->bin_start;
    gr->view.bin_atoms = gr->bin_atoms;
    gr->view.atom_bin = gr->atom_bin;
    return FNQ_STATUS_OK;
}

void fnq__cell_grid_free(struct fnq_cell_grid *gr)
{
    free(gr->frac), free(gr->wrap), free(gr->bin_atoms), free(gr->atom_bin), free(gr->bin_start);
    memset(gr, 0, sizeof(*gr));
}

/*
 * The host's search: atom i's neighbours, every (j, image) with |r| < cutoff, r = x_j - x_i +
 * S.cell, except j == i at S = 0, written in a fixed order (bin offset, then atom order within
 * the bin; the GPU's warp-wide visit keeps it), with the bins that cannot hold a neighbour left
 * out before their atoms are looked at. A bin's atoms span a range of
 * fractional coordinates along each axis; r's component along that axis's face normal is at
 * least the range's distance from atom i times the faces' spacing, so a bin whose distance
 * passes the cutoff (with room for rounding) holds no neighbour, and the list is the same bit
 * for bit. Small periodic cells gain most: an 8-atom Si cell with a 6 A cutoff visits 125
 * images of its one bin, of which about 30 can reach the atom.
 */
struct host_search {
    const struct fnq_cell_view *view;
    const double *frac;     /* [n*3] the grid's wrapped fractional coordinates */
    double *lo, *hi;        /* [nbins*3] each bin's range of them */
    double spacing[3];      /* between the faces s_a = 0 and s_a = 1 */
    double reach2;          /* the cutoff with room for rounding, squared */
};

static enum fnq_status host_search_make(struct host_search *h, const struct fnq_cell_grid *gr,
                                        int64_t n, double cutoff)
{
    h->view = &gr->view;
    h->frac = gr->frac;
    h->lo = malloc(sizeof(double) * 6 * (size_t)gr->nbins);
    if (!h->lo)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of host memory for %lld bins",
                         (long long)gr->nbins);
    h->hi = h->lo + 3 * gr->nbins;
    for (int64_t k = 0; k < 3 * gr->nbins; k++) {
        h->lo[k] = INFINITY;
        h->hi[k] = -INFINITY;
    }
    for (int64_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) {
            const int64_t k = 3 * gr->atom_bin[i] + a;
            const double f = gr->frac[3 * i + a];
            if (f < h->lo[k]) h->lo[k] = f;
            if (f > h->hi[k]) h->hi[k] = f;
        }
    for (int a = 0; a < 3; a++)
        h->spacing[a] = 1.0 / sqrt(gr->inv[0][a] * gr->inv[0][a] + gr->inv[1][a] * gr->inv[1][a] +
                                   gr->inv[2][a] * gr->inv[2][a]);
    /* 1e-7 relative: far above the fractional coordinates' rounding (1e-16 of positions up
     * to 1e8 A), far below any gain */
    const double reach = cutoff * (1.0 + 1e-7);
    h->reach2 = reach * reach;
    return FNQ_STATUS_OK;
}

/* no atom of this bin, in image img, within the cutoff of atom i */
static int bin_out_of_reach(const struct host_search *h, int64_t bin, const int64_t img[3],
                            int64_t i)
{
    double d2 = 0.0;
    for (int a = 0; a < 3; a++) {
        const double lo = h->lo[3 * bin + a] + (double)img[a] - h->frac[3 * i + a];
        const double hi = h->hi[3 * bin + a] + (double)img[a] - h->frac[3 * i + a];
        const double d = (lo > 0.0 ? lo : (hi < 0.0 ? -hi : 0.0)) * h->spacing[a];
        if (d * d > d2)
            d2 = d * d;
    }
    return d2 >= h->reach2;
}

/* atom i's neighbours from the bins within reach; only their count without out_send; with
 * bound_only, the candidates those bins hold (a bound on the count, no distances computed) */
static int64_t host_visit(const struct host_search *h, const double *pos, int64_t i, double rc2,
                          int64_t *out_send, double *out_vec, int bound_only)
{
    const struct fnq_cell_view *gr = h->view;
    int64_t b[3], count = 0;
    fnq__cell_of(gr, i, b);
    for (int64_t o0 = -gr->reach[0]; o0 <= gr->reach[0]; o0++)
        for (int64_t o1 = -gr->reach[1]; o1 <= gr->reach[1]; o1++)
            for (int64_t o2 = -gr->reach[2]; o2 <= gr->reach[2]; o2++) {
                const int64_t o[3] = {o0, o1, o2};
                int64_t bin, img[3];
                if (!fnq__cell_offset(gr, b, o, &bin, img) ||
                    gr->bin_start[bin] == gr->bin_start[bin + 1] ||
                    bin_out_of_reach(h, bin, img, i))
                    continue;
                if (bound_only) {
                    count += gr->bin_start[bin + 1] - gr->bin_start[bin];
                    continue;
                }
                for (int64_t q = gr->bin_start[bin]; q < gr->bin_start[bin + 1]; q++) {
                    const int64_t j = gr->bin_atoms[q];
                    double r[3];
                    const double d2 = fnq__cell_pair(gr, pos, i, j, img, r);
                    if (d2 < 0.0 || d2 >= rc2)
                        continue;
                    if (out_send) {
                        out_send[count] = j;
                        out_vec[3 * count + 0] = r[0];
                        out_vec[3 * count + 1] = r[1];
                        out_vec[3 * count + 2] = r[2];
                    }
                    count++;
                }
            }
    return count;
}

static enum fnq_status too_many_neighbours(int64_t i, int64_t count, const struct fnq_limits *lim)
{
    return fnq__fail_atoms(FNQ_STATUS_INVALID_ARG, i, -1,
                           "atom %lld has %lld neighbours within the %g A cutoff, more than the "
                           "limit of %lld (positions in the wrong units, or a cell too small? "
                           "raise it with fnq_ctx_set_max_neighbors)",
                           (long long)i, (long long)count, lim->cutoff,
                           (long long)lim->max_neighbors);
}

/* Below this many atoms the list is made by one thread in one pass (room for each atom's
 * candidates, then its visit writes its edges): a batch's small structures, each listed by
 * a thread of its own, spent 90 % of their time in the two passes of the parallel path. */
#define SERIAL_LIST_ATOMS 512

static enum fnq_status edges_one_pass(struct fnq_graph_buf *b, const struct host_search *gr,
                                      int64_t n, const double *pos, double rc2,
                                      const struct fnq_limits *lim)
{
    int64_t total = 0;
    b->recv_start[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t room = host_visit(gr, pos, i, rc2, NULL, NULL, 1);
        /* many candidates (a tiny cell, wrong units): count first, never reserve them all */
        if (room > 4 * lim->max_neighbors) {
            room = host_visit(gr, pos, i, rc2, NULL, NULL, 0);
            if (room > lim->max_neighbors)
                return too_many_neighbours(i, room, lim);
        }
        FNQ_CHECK(fnq__graph_reserve_growing(b, n, total + room));
        const int64_t k =
            host_visit(gr, pos, i, rc2, b->edge_send + total, b->edge_vec + 3 * total, 0);
        if (k > lim->max_neighbors)
            return too_many_neighbours(i, k, lim);
        for (int64_t q = 0; q < k; q++)
            b->edge_recv[total + q] = i;
        total += k;
        b->recv_start[i + 1] = total;
    }
    b->g.n_edges = total;
    return FNQ_STATUS_OK;
}

/* Count pass, then fill pass, each over the atoms in parallel. */
static enum fnq_status edges_two_passes(struct fnq_graph_buf *b, const struct host_search *gr,
                                        int64_t n, const double *pos, double rc2,
                                        const struct fnq_limits *lim)
{
    int64_t *cnt = b->scratch;
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t i = 0; i < n; i++)
        cnt[i] = host_visit(gr, pos, i, rc2, NULL, NULL, 0);
    int64_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        if (cnt[i] > lim->max_neighbors)
            return too_many_neighbours(i, cnt[i], lim);
        total += cnt[i];
    }
    FNQ_CHECK(fnq__graph_reserve(b, n, total));
    cnt = b->scratch;
    b->recv_start[0] = 0;
    for (int64_t i = 0; i < n; i++)
        b->recv_start[i + 1] = b->recv_start[i] + cnt[i];
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t i = 0; i < n; i++) {
        int64_t e0 = b->recv_start[i];
        int64_t k = host_visit(gr, pos, i, rc2, b->edge_send + e0, b->edge_vec + 3 * e0, 0);
        for (int64_t q = 0; q < k; q++)
            b->edge_recv[e0 + q] = i;
    }
    b->g.n_edges = total;
    return FNQ_STATUS_OK;
}

enum fnq_status fnq__graph_from_cell(struct fnq_graph_buf *b, int64_t n, const double *pos,
                                     const int32_t *species, const double *cell,
                                     const int32_t *pbc, const struct fnq_limits *lim)
{
    FNQ_CHECK(fnq__check_positions(n, pos));
    struct fnq_cell_grid gr;
    FNQ_CHECK(fnq__cell_grid_build(n, pos, cell, pbc, lim->cutoff, &gr));
    const double rc2 = lim->cutoff * lim->cutoff;
    struct host_search h = {0};
    enum fnq_status st = host_search_make(&h, &gr, n, lim->cutoff);
    if (st == FNQ_STATUS_OK)
        st = fnq__graph_reserve(b, n, 0);
    if (st == FNQ_STATUS_OK)
        st = n <= SERIAL_LIST_ATOMS ? edges_one_pass(b, &h, n, pos, rc2, lim)
                                    : edges_two_passes(b, &h, n, pos, rc2, lim);
    free(h.lo);
    if (st == FNQ_STATUS_OK) {
        b->g.n_local = n;
        b->g.n_all = n;
        b->g.species = species;
        st = fnq__graph_finish(b, lim);
    }
    fnq__cell_grid_free(&gr);
    return st;
}
