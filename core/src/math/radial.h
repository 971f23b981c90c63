/*
 * radial.h: the radial embedding of an edge of length d, always in double precision:
 * B_n(d) = (2/rc) sin(w_n d / rc) / d times the envelope: the polynomial
 * f(u) = 1 - (p+1)(p+2)/2 u^p + p(p+2) u^(p+1) - p(p+1)/2 u^(p+2), u = d/rc < 1 (else 0), or
 * SevenNet's XPLOR switch f(d) = 1 below r_on, (rc^2 - d^2)^2 (rc^2 + 2 d^2 - 3 r_on^2) /
 * (rc^2 - r_on^2)^3 from r_on to rc, 0 beyond.
 */
#pragma once

#include "model/model.h"

/* f(u) and df/du (the envelope alone; nequip applies it to its pair terms too) */
void fnq__poly_envelope(double p, double u, double *f, double *df_du);
/* f(d) and df/dd of the XPLOR switch */
void fnq__xplor_envelope(double r_on, double rc, double d, double *f, double *df_dd);

/* basis[n_basis] and, if dbasis != NULL, its derivative with respect to d */
void fnq__radial_basis(const struct fnq_model *m, double d, double *basis, double *dbasis);
