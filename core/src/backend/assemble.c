/*
 * assemble.c: forces, virial and per-atom virial from g_e = dE/dr_e, the energy gradient with
 * respect to each edge vector r_e = x_send - x_recv (+ shift). Each atom gathers its own terms
 * (as receiver, then as sender) in edge order: no scatter, so the result is deterministic.
 *   F_i = sum_{e: recv i} g_e - sum_{e: send i} g_e
 *   W   = -sum_e sym(g_e (x) r_e)     (W = -dE/d(strain), ASE Voigt order)
 */
#include <string.h>

#include "backend/backend.h"

static void edge_virial(const double *g, const double *r, double *w)
{
    w[0] = -g[0] * r[0];
    w[1] = -g[1] * r[1];
    w[2] = -g[2] * r[2];
    w[3] = -0.5 * (g[1] * r[2] + g[2] * r[1]);
    w[4] = -0.5 * (g[0] * r[2] + g[2] * r[0]);
    w[5] = -0.5 * (g[0] * r[1] + g[1] * r[0]);
}

void fnq__assemble_edge_gradients(const struct fnq_graph *g, const double *edge_grad,
                                  struct fnq_results *out)
{
    if (out->forces) {
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < g->n_all; i++) {
            double f[3] = {0, 0, 0};
            if (i < g->n_local)
                for (int64_t e = g->recv_start[i]; e < g->recv_start[i + 1]; e++)
                    for (int k = 0; k < 3; k++)
                        f[k] += edge_grad[3 * e + k];
            for (int64_t q = g->send_start[i]; q < g->send_start[i + 1]; q++) {
                int64_t e = g->send_edges[q];
                for (int k = 0; k < 3; k++)
                    f[k] -= edge_grad[3 * e + k];
            }
            memcpy(out->forces + 3 * i, f, sizeof(f));
        }
    }
    double vir[6] = {0, 0, 0, 0, 0, 0};
    for (int64_t e = 0; e < g->n_edges; e++) {
        double w[6];
        edge_virial(edge_grad + 3 * e, g->edge_vec + 3 * e, w);
        for (int k = 0; k < 6; k++)
            vir[k] += w[k];
    }
    memcpy(out->virial, vir, sizeof(vir));
    if (out->atom_virial) {
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < g->n_all; i++) {
            double v[6] = {0, 0, 0, 0, 0, 0}, w[6];
            if (i < g->n_local)
                for (int64_t e = g->recv_start[i]; e < g->recv_start[i + 1]; e++) {
                    edge_virial(edge_grad + 3 * e, g->edge_vec + 3 * e, w);
                    for (int k = 0; k < 6; k++)
                        v[k] += 0.5 * w[k];
                }
            for (int64_t q = g->send_start[i]; q < g->send_start[i + 1]; q++) {
                int64_t e = g->send_edges[q];
                edge_virial(edge_grad + 3 * e, g->edge_vec + 3 * e, w);
                for (int k = 0; k < 6; k++)
                    v[k] += 0.5 * w[k];
            }
            memcpy(out->atom_virial + 6 * i, v, sizeof(v));
        }
    }
}
