/*
 * pair_potential.c: the model's pair term (model.h, struct fnq_pair_potential) on the host, in
 * double for both precisions of the network: per-atom energies of the receivers and the
 * gradient with respect to each edge vector, which fnq__assemble_edge_gradients turns into
 * forces, virial and per-atom virials together with the network's.
 *
 * ZBL as nequip evaluates it (nequip.nn.pair_potential.ZBL): LAMMPS pair_zbl's universal
 * screening function psi(x) = sum_k c_k exp(d_k x) with x = r (Zi^0.23 + Zj^0.23) / a0, the
 * Coulomb energy k_e Zi Zj / r, and nequip's polynomial envelope over the whole cutoff
 * (not LAMMPS' inner/outer switching), or over the edge type's cutoff (Allegro's
 * per_edge_type_cutoff). Half of each pair on each of its two directed edges.
 */
#include <math.h>

#include "backend/pair_potential.h"
#include "math/radial.h"

static const double zbl_a0 = FNQ_ZBL_A0, zbl_pow = FNQ_ZBL_POW;
static const double zbl_c[4] = FNQ_ZBL_C, zbl_d[4] = FNQ_ZBL_D;

/* Energy of one directed edge at distance r between species ti and tj, and dE/dr. */
static void zbl_edge(const struct fnq_pair_potential *pp, int32_t ti, int32_t tj, double r,
                     double *e, double *de_dr)
{
    const double zi = pp->charge[ti], zj = pp->charge[tj];
    const double s = (pow(zi, zbl_pow) + pow(zj, zbl_pow)) / zbl_a0;
    double psi = 0.0, dpsi = 0.0;
    for (int k = 0; k < 4; k++) {
        const double t = zbl_c[k] * exp(zbl_d[k] * s * r);
        psi += t;
        dpsi += zbl_d[k] * s * t;
    }
    const double q = 0.5 * pp->coulomb * zi * zj; /* half the pair on each directed edge */
    const double v = q * psi / r, dv = q * (dpsi / r - psi / (r * r));
    const double rc = pp->cutoff_by_type ? pp->cutoff_by_type[ti * pp->n_types + tj] : pp->cutoff;
    double f, df;
    fnq__poly_envelope(pp->poly_p, r / rc, &f, &df);
    *e = v * f;
    *de_dr = dv * f + v * df / rc;
}

static void edge_term(const struct fnq_pair_potential *pp, const struct fnq_graph *g, int64_t e,
                      double *energy, double *de_dr, double *r)
{
    const double *v = g->edge_vec + 3 * e;
    *r = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    zbl_edge(pp, g->species[g->edge_recv[e]], g->species[g->edge_send[e]], *r, energy, de_dr);
}

double fnq__pair_atom_energy(const struct fnq_model *m, const struct fnq_graph *g, int64_t i)
{
    if (m->pair.kind == FNQ_PAIR_NONE)
        return 0.0;
    double sum = 0.0;
    for (int64_t e = g->recv_start[i]; e < g->recv_start[i + 1]; e++) {
        double energy, de_dr, r;
        edge_term(&m->pair, g, e, &energy, &de_dr, &r);
        sum += energy;
    }
    return sum;
}

void fnq__pair_add_atom_energies(const struct fnq_model *m, const struct fnq_graph *g,
                                 double *energies)
{
    if (m->pair.kind == FNQ_PAIR_NONE)
        return;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < g->n_local; i++)
        energies[i] += fnq__pair_atom_energy(m, g, i);
}

void fnq__pair_add_edge_gradients(const struct fnq_model *m, const struct fnq_graph *g,
                                  double *edge_grad)
{
    if (m->pair.kind == FNQ_PAIR_NONE)
        return;
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < g->n_edges; e++) {
        double energy, de_dr, r;
        edge_term(&m->pair, g, e, &energy, &de_dr, &r);
        for (int k = 0; k < 3; k++)
            edge_grad[3 * e + k] += de_dr * g->edge_vec[3 * e + k] / r;
    }
}
