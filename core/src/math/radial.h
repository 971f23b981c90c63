/*
 * radial.h: the radial embedding of an edge of length d, always in double precision:
 * B_n(d) = (2/rc) sin(w_n d / rc) / d times the polynomial envelope
 * f(u) = 1 - (p+1)(p+2)/2 u^p + p(p+2) u^(p+1) - p(p+1)/2 u^(p+2), u = d/rc < 1 (else 0).
 */
#pragma once

#include "model/model.h"

/* f(u) and df/du (the envelope alone; nequip applies it to its pair terms too) */
void fnq__poly_envelope(double p, double u, double *f, double *df_du);

/* basis[n_basis] and, if dbasis != NULL, its derivative with respect to d */
void fnq__radial_basis(const struct fnq_model *m, double d, double *basis, double *dbasis);
