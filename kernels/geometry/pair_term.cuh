/*
 * pair_term.cuh: the model's pair term on the GPU (nequip's ZBL; the host's is
 * core/src/backend/pair_potential.c, whose math this follows), in double for both precisions. It is
 * fused into two passes that run anyway: edge_grad_kernel adds each edge's dE/dr to the edge's
 * gradient (forces, virial and per-atom virials then follow with the network's), and
 * assemble_kernel adds each receiver's edge energies to its atom energy, summed over its edges
 * in the same fixed order as its forces. The two evaluate an edge's term once each.
 *
 * Per directed edge (i <- j) at distance r: E = q_ij / r psi(s_ij r) f_p(r / cutoff), with
 * psi(x) = sum_k c_k exp(d_k x) (LAMMPS pair_zbl's universal screening), s_ij = (Zi^0.23 +
 * Zj^0.23) / 0.46850 A and q_ij = k_e Zi Zj / 2 (half the pair on each of its directed edges):
 * both per species pair, tabulated at upload (pair_term_tables). The envelope's cutoff is the
 * model's, or the edge type's where an Allegro model has per-type cutoffs.
 */
#pragma once

#include <math.h>

#include <vector>

#include "geometry/envelope.cuh"
#include "model/model.h"

namespace fnqcu {

struct PairTerm {
    int on;          /* 0: the model has no pair term */
    int n_species;
    double cutoff, poly_p;
    const double *screen;  /* [T][T] s_ij */
    const double *charges; /* [T][T] q_ij */
    const double *cutoff_by_type; /* [T][T] the envelope's cutoff per edge type, or null: cutoff */
};

/* s_ij and q_ij of the host model's pair term, [T][T] row-major (to upload; none without one) */
static inline void pair_term_tables(const struct fnq_model *m, std::vector<double> *screen,
                                    std::vector<double> *charges)
{
    const struct fnq_pair_potential &h = m->pair;
    const int T = m->n_species;
    screen->assign((size_t)T * T, 0.0), charges->assign((size_t)T * T, 0.0);
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
            (*screen)[(size_t)i * T + j] =
                (pow(h.charge[i], FNQ_ZBL_POW) + pow(h.charge[j], FNQ_ZBL_POW)) / FNQ_ZBL_A0;
            (*charges)[(size_t)i * T + j] = 0.5 * h.coulomb * h.charge[i] * h.charge[j];
        }
}

/* The pair term's energy of the edge (i <- j) at distance r and its derivative dE/dr. */
__device__ __forceinline__ void pair_term_edge(const PairTerm &p, int ti, int tj, double r,
                                               double *e, double *de_dr)
{
    constexpr double c[4] = FNQ_ZBL_C, d[4] = FNQ_ZBL_D;
    const int ij = ti * p.n_species + tj;
    const double s = p.screen[ij], q = p.charges[ij];
    double psi = 0.0, dpsi = 0.0;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const double t = c[k] * exp(d[k] * s * r);
        psi += t;
        dpsi += d[k] * s * t;
    }
    const double v = q * psi / r, dv = q * (dpsi / r - psi / (r * r));
    const double rc = p.cutoff_by_type ? p.cutoff_by_type[ij] : p.cutoff;
    double f, df;
    poly_envelope(p.poly_p, r / rc, &f, &df);
    *e = v * f;
    *de_dr = dv * f + v * df / rc;
}

/* What the two passes read besides the term: each edge's atoms and their species. */
struct PairEdges {
    PairTerm term;
    const int64_t *edge_recv, *edge_send;
    const int *species;
};

} // namespace fnqcu
