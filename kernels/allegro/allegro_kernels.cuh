/*
 * allegro_kernels.cuh: the CUDA Allegro engine's per-edge and per-centre kernels (the MLPs are
 * GEMMs: allegro_mlp.cuh). docs/allegro.md numbers the steps; each launcher says which. They
 * work on one chunk of the graph: a run of whole centre atoms and their edges (active edges
 * only, in the host graph's order), so every array below is chunk-local unless it says
 * otherwise. Every sum over edges runs in edge order in one thread: bitwise reproducible.
 */
#pragma once

#include "runtime/common.cuh"

namespace fnqcu {
namespace allegro {

constexpr int kMaxLmax = 3;   /* the generated spherical harmonics (sh_code.inc) */
constexpr int kMaxDim = 32;   /* values per channel of a tensor feature (l <= 3, both parities) */

/* What the per-edge kernels need of the model, device pointers */
template <typename REAL> struct Params {
    int T, S, U, N, H, nl, nsh, lmax;
    double r_max, poly_p;
    const double *cut;      /* [T][T] per-edge-type cutoffs (centre, neighbour), or null */
    const double *bessel_w; /* [N] */
    const REAL *cemb, *nemb; /* [T][H] */
    const double *env_norm;  /* [T] c(t) of the environment sums */
    const double *edge_scale, *shift; /* [T] energy_scale * edge_norm / sqrt 2, energy_shift */
};

/* One tensor-product layer: its non-zero coupling terms, path by path */
struct TpTerm {
    int16_t i1, i2, i3, path;
    double coef;
};
template <typename REAL> struct TpLayer {
    int n_terms, n_paths, din, dout, coupled;
    const TpTerm *terms;
    const REAL *w; /* [U or 1][n_paths] */
    /* per path FNQ_TP_CODE(l1, l2, l3) where both irreps are one block per l from 0 up (block
     * l at offset l^2: parity off, as Allegro-OAM-L): the kernels then run the generated
     * Clebsch-Gordan code (tp_code.inc) on registers; else null (the terms, generic) */
    const int *code;
};

/* One chunk: edges edge0 .. edge0 + n - 1 of the structure and centres centre0 .. centre0 +
 * nc - 1, the pointers moved to the chunk's first edge and centre; centre[] and start[] hold
 * the structure's numbers (a centre's edges: start[i] .. start[i + 1] - 1) */
struct Chunk {
    int64_t n, edge0;
    int32_t nc, centre0;
    const double *vec;
    const int32_t *ti, *tj, *centre;
    const int64_t *start; /* [nc + 1] */
    const int32_t *ctype; /* [nc] */
};

/* Steps 1-2: Y [n][nsh], the Bessel basis and its derivative in x = d / r_c [n][N] */
template <typename REAL>
cudaError_t geometry(const Params<REAL> &p, const Chunk &c, REAL *Y, REAL *basis, REAL *dbasis,
                     cudaStream_t s);
/* Step 3 (and its backward): z0[e][k] *= centre embedding of t_i (k < H), else neighbour's */
template <typename REAL>
cudaError_t embed_scale(const Params<REAL> &p, const Chunk &c, REAL *z0, cudaStream_t s);
/* Step 5: V0[e][q][u] = w[e][u][l(q)] Y[e][q] (the tensor features V, G and their gradients
 * are component-major, [row][q][u]: allegro_kernels.cu, feat) */
template <typename REAL>
cudaError_t tensor_embed(const Params<REAL> &p, const Chunk &c, const REAL *w, const REAL *Y,
                         REAL *V0, cudaStream_t s);
/* Step 7a: G[i][q][u] = c(t_i) sum over i's edges of omega[e][u][l(q)] Y[e][q] */
template <typename REAL>
cudaError_t env_sum(const Params<REAL> &p, const Chunk &c, const REAL *omega, const REAL *Y,
                    REAL *G, cudaStream_t s);
/* Step 7b-c: Vout = TP(Vin, G of the centre), per channel; scal[e ld_scal + u] = Vout[e][0][u] */
template <typename REAL>
cudaError_t tp_forward(const Params<REAL> &p, const Chunk &c, const TpLayer<REAL> &tp,
                       const REAL *Vin, const REAL *G, REAL *Vout, REAL *scal, int ld_scal,
                       cudaStream_t s);
/* Steps 9-10 without the pair term: energy[i] = edge_scale(t_i) sum eps[e] + shift(t_i),
 * summed in double, written at energy[first_centre + i] */
template <typename REAL>
cudaError_t centre_energy(const Params<REAL> &p, const Chunk &c, const REAL *eps, double *energy,
                          cudaStream_t s);
/* dE/d eps[e] = edge_scale(t_i) */
template <typename REAL>
cudaError_t readout_seed(const Params<REAL> &p, const Chunk &c, REAL *g, cudaStream_t s);
/* Step 7b backward: gVin[e] = dTP/dVin . (gVout[e] + gscal[e] at component 0) and
 * gG[i] = sum over i's edges of dTP/dG . (the same); gVout may be null (last layer) */
template <typename REAL>
cudaError_t tp_backward(const Params<REAL> &p, const Chunk &c, const TpLayer<REAL> &tp,
                        const REAL *Vin, const REAL *G, const REAL *gVout, const REAL *gscal,
                        REAL *gVin, REAL *gG, cudaStream_t s);
/* Step 7a backward: gomega[e] = c dG/domega . gG[i] (row e at gomega + e ld_gomega),
 * gY[e] (+)= c dG/dY . gG[i] */
template <typename REAL>
cudaError_t env_backward(const Params<REAL> &p, const Chunk &c, const REAL *gG, const REAL *omega,
                         const REAL *Y, REAL *gomega, int ld_gomega, REAL *gY, int add_gY,
                         cudaStream_t s);
/* Step 5 backward: gw[e][u][l] = sum_q gV0 Y, gY[e][q] += sum_u gV0 w */
template <typename REAL>
cudaError_t tensor_embed_backward(const Params<REAL> &p, const Chunk &c, const REAL *gV0,
                                  const REAL *Y, const REAL *w, REAL *gw, REAL *gY,
                                  cudaStream_t s);
/* Steps 2-1 backward: grad[e] = dE/dr_e (double) from dE/d(basis) and dE/dY */
template <typename REAL>
cudaError_t edge_gradient(const Params<REAL> &p, const Chunk &c, const REAL *gbasis,
                          const REAL *dbasis, const REAL *gY, double *grad, cudaStream_t s);

} // namespace allegro
} // namespace fnqcu
