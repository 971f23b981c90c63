/*
 * cell_grid.h: the binning behind the library's neighbour list, shared by the CPU builder
 * (neighbor.c) and the CUDA one (kernels/graph/neighbor.cu).
 *
 * The host prepares the grid once per evaluation, in O(N): the cell used for binning (the
 * caller's rows, with missing rows of non-periodic axes completed), fractional coordinates
 * wrapped into [0, 1) along periodic axes, bins whose width perpendicular to each pair of cell
 * faces is at least the cutoff where the cell allows, the search reach in bins, and atoms
 * sorted by bin. The helpers below (a bin's neighbour bins and their images, one pair's vector)
 * are plain C that also compiles as CUDA device code: both searches, the host's (neighbor.c)
 * and the GPU's warp-wide one (kernels/graph/neighbor.cu), visit the bins in the same order and
 * compute each vector the same way, so they make the same list.
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

