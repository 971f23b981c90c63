/*
 * pair_potential.h: the model's pair term (ZBL) on the host, for the CPU backend
 * (pair_potential.c; model.h describes the term).
 */
#pragma once

#include "backend/backend.h"

/* The pair term's energy of receiver i: the sum over its edges (0 without a pair term). */
double fnq__pair_atom_energy(const struct fnq_model *m, const struct fnq_graph *g, int64_t i);

/* energies[i] += the pair term's energy of receiver i, for the graph's owned atoms */
void fnq__pair_add_atom_energies(const struct fnq_model *m, const struct fnq_graph *g,
                                 double *energies);

/* edge_grad[e] += dE_pair/dr_e for every edge (nothing without a pair term). */
void fnq__pair_add_edge_gradients(const struct fnq_model *m, const struct fnq_graph *g,
                                  double *edge_grad);
