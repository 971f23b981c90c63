/*
 * cpu_eval_f32.c: the CPU evaluation in float (the body is cpu_eval.inc).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "nequip/cpu_eval.h"
#include "backend/hot.h"
#include "api/options.h"
#include "backend/pair_potential.h"
#include "backend/parallel.h"
#include "math/radial.h"
#include "math/radial_table.h"
#include "math/sh.h"
#include "api/status.h"

#define REAL float
#define FN(name) name##_f32
#define EXP expf
#define TANH tanhf
#define LOG1P log1pf
#define FABS fabsf
#include "nequip/cpu_eval.inc"

enum fnq_status fnq__cpu_init_f32(const struct fnq_model *m, const struct fnq_options *opt,
                                   void **state)
{
    return FN(state_init)(m, opt, state);
}
void fnq__cpu_free_f32(void *state) { FN(state_free)(state); }
enum fnq_status fnq__cpu_compute_f32(void *state, const struct fnq_graph *g,
                                    const struct fnq_exchange *x, struct fnq_results *out)
{
    return FN(compute)(state, g, x, out);
}
