/*
 * cell_grid.h: the binning behind the library's neighbour list, shared by the CPU builder
 * (neighbor.c) and the CUDA one (kernels/graph/neighbor.cu).
 *
 * The host prepares the grid once per evaluation, in O(N): the cell used for binning (the
 * caller's rows, with missing rows of non-periodic axes completed), fractional coordinates
 * wrapped into [0, 1) along periodic axes, bins whose width perpendicular to each pair of cell
 * faces is at least the cutoff where the cell allows, the search reach in bins, and atoms
 * sorted by bin. fnq__cell_visit then finds the neighbours of one atom; it is plain C that
 * also compiles as CUDA device code.
 */
#pragma once

#include <stdint.h>

#include "fnq.h"

#if defined(__CUDACC__)
#define FNQ_HD __host__ __device__
#else
#define FNQ_HD
#endif

/* What the visit needs, by value; pointers are host or device memory alike. */
struct fnq_cell_view {
    double cell[3][3];   /* rows: lattice vectors used for the image shifts */
    int32_t periodic[3];
    int64_t nbin[3];
    int64_t reach[3];
    const double *wrap;       /* [n*3] integer image each atom was wrapped by */
    const int64_t *bin_start; /* [nbins+1] */
    const int64_t *bin_atoms; /* [n] atoms sorted by bin, ascending within a bin */
    const int64_t *atom_bin;  /* [n] */
};

struct fnq_cell_grid {
    struct fnq_cell_view view;
    double inv[3][3];
    double s0[3], ext[3];
    int64_t nbins;
    double *frac, *wrap;
    int64_t *bin_start, *bin_atoms, *atom_bin;
};

/* Build the grid for n atoms (host). Errors name the problem (singular cell, ...). */
enum fnq_status fnq__cell_grid_build(int64_t n, const double *pos, const double *cell,
                                     const int32_t *pbc, double cutoff,
                                     struct fnq_cell_grid *gr);
void fnq__cell_grid_free(struct fnq_cell_grid *gr);

static inline FNQ_HD int64_t fnq__floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/*
 * The bin at offset o from bin b (b, o: per axis) and the image it lies in; 0 when the offset
 * leaves a non-periodic axis (nothing to visit).
 */
static inline FNQ_HD int fnq__cell_offset(const struct fnq_cell_view *gr, const int64_t b[3],
                                          const int64_t o[3], int64_t *bin, int64_t img[3])
{
    int64_t nb[3];
    for (int a = 0; a < 3; a++) {
        int64_t t = b[a] + o[a];
        if (gr->periodic[a]) {
            img[a] = fnq__floor_div(t, gr->nbin[a]);
            nb[a] = t - img[a] * gr->nbin[a];
        } else {
            img[a] = 0;
            nb[a] = t;
            if (t < 0 || t >= gr->nbin[a])
                return 0;
        }
    }
    *bin = (nb[0] * gr->nbin[1] + nb[1]) * gr->nbin[2] + nb[2];
    return 1;
}

/*
 * r = x_j - x_i + S.cell for atom j of a bin in image img; returns |r|^2, or a negative number
 * for atom i itself at S = 0 (not its own neighbour).
 */
static inline FNQ_HD double fnq__cell_pair(const struct fnq_cell_view *gr, const double *pos,
                                           int64_t i, int64_t j, const int64_t img[3],
                                           double r[3])
{
    double S[3];
    for (int a = 0; a < 3; a++)
        S[a] = (double)img[a] + gr->wrap[3 * j + a] - gr->wrap[3 * i + a];
    if (j == i && S[0] == 0.0 && S[1] == 0.0 && S[2] == 0.0)
        return -1.0;
    for (int k = 0; k < 3; k++)
        r[k] = pos[3 * j + k] - pos[3 * i + k] + S[0] * gr->cell[0][k] + S[1] * gr->cell[1][k] +
               S[2] * gr->cell[2][k];
    return r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
}

/* atom i's bin as three indices */
static inline FNQ_HD void fnq__cell_of(const struct fnq_cell_view *gr, int64_t i, int64_t b[3])
{
    const int64_t bi = gr->atom_bin[i];
    b[0] = bi / (gr->nbin[1] * gr->nbin[2]);
    b[1] = (bi / gr->nbin[2]) % gr->nbin[1];
    b[2] = bi % gr->nbin[2];
}

/*
 * Visit the neighbours of atom i: every (j, image) with |r| < cutoff, r = x_j - x_i + S.cell,
 * except j == i at S = 0. Writes them (when out_send is not NULL) in a fixed order: bin offset,
 * then atom order within the bin. Returns the count; *min_d2 (if given) gets the smallest |r|^2.
 * (The GPU's warp-wide visit, kernels/graph/neighbor.cu, keeps this order.)
 */
static inline FNQ_HD int64_t fnq__cell_visit(const struct fnq_cell_view *gr, const double *pos,
                                             int64_t i, double rc2, int64_t *out_send,
                                             double *out_vec, double *min_d2)
{
    int64_t b[3];
    fnq__cell_of(gr, i, b);
    int64_t count = 0;
    double best = 1e300;
    for (int64_t o0 = -gr->reach[0]; o0 <= gr->reach[0]; o0++)
        for (int64_t o1 = -gr->reach[1]; o1 <= gr->reach[1]; o1++)
            for (int64_t o2 = -gr->reach[2]; o2 <= gr->reach[2]; o2++) {
                const int64_t o[3] = {o0, o1, o2};
                int64_t bin, img[3];
                if (!fnq__cell_offset(gr, b, o, &bin, img))
                    continue;
                for (int64_t q = gr->bin_start[bin]; q < gr->bin_start[bin + 1]; q++) {
                    const int64_t j = gr->bin_atoms[q];
                    double r[3];
                    const double d2 = fnq__cell_pair(gr, pos, i, j, img, r);
                    if (d2 < 0.0 || d2 >= rc2)
                        continue;
                    if (d2 < best)
                        best = d2;
                    if (out_send) {
                        out_send[count] = j;
                        out_vec[3 * count + 0] = r[0];
                        out_vec[3 * count + 1] = r[1];
                        out_vec[3 * count + 2] = r[2];
                    }
                    count++;
                }
            }
    if (min_d2)
        *min_d2 = best;
    return count;
}
