/*
 * sh.h: e3nn's real spherical harmonics of a unit vector, "component" normalisation
 * (|Y_l|^2 = 2l+1), and their gradient. Same recursion as e3nn-jax: Y_l is the Clebsch-Gordan
 * product of Y_{l1} and Y_{l2} (l2 the largest power of two below l), normalised by the value
 * at the pole, which fixes e3nn's signs for every l. Y_1 = sqrt(3) (x, y, z) in x, y, z order.
 */
#pragma once

#include "model/model.h"

int fnq__sh_plan_init(struct fnq_sh_plan *plan, int32_t lmax);
void fnq__sh_plan_free(struct fnq_sh_plan *plan);

/* y[(lmax+1)^2], block l at y + l*l. `n` must be a unit vector. */
void fnq__sh_eval(const struct fnq_sh_plan *plan, const double n[3], double *y);
/* y as above and dy[(lmax+1)^2][3] = dY/dn (the polynomial's gradient, not projected). */
void fnq__sh_eval_grad(const struct fnq_sh_plan *plan, const double n[3], double *y, double *dy);
