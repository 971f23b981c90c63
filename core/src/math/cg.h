/*
 * cg.h: real Clebsch-Gordan coefficients in e3nn's basis (e3nn-jax `clebsch_gordan`, equal to
 * e3nn-torch `wigner_3j`): su(2) coefficients divided by sqrt(2 l3 + 1), rotated into e3nn's
 * real basis. Frobenius norm 1. Computed in extended precision, returned as double.
 */
#pragma once

/* Fill c[(2l1+1)(2l2+1)(2l3+1)], index [m1][m2][m3] (0-based m). Returns 0, or -1 if the triple
 * violates the triangle rule (then c is all zero). */
int fnq__cg_real(int l1, int l2, int l3, double *c);
