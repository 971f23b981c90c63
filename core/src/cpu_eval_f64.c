/*
 * cpu_eval_f64.c: the CPU evaluation in double (the body is cpu_eval.inc).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cpu_eval.h"
#include "hot.h"
#include "options.h"
#include "pair_potential.h"
#include "parallel.h"
#include "radial.h"
#include "radial_table.h"
#include "sh.h"
#include "status.h"

#define REAL double
#define FN(name) name##_f64
#define EXP exp
#define TANH tanh
#define LOG1P log1p
#define FABS fabs
#include "cpu_eval.inc"

enum fnq_status fnq__cpu_init_f64(const struct fnq_model *m, const struct fnq_options *opt,
                                   void **state)
{
    return FN(state_init)(m, opt, state);
}
void fnq__cpu_free_f64(void *state) { FN(state_free)(state); }
enum fnq_status fnq__cpu_compute_f64(void *state, const struct fnq_graph *g,
                                    const struct fnq_exchange *x, struct fnq_results *out)
{
    return FN(compute)(state, g, x, out);
}
