/*
 * allegro_eval_f64.c: the Allegro CPU engine in double (the body is allegro_eval.inc).
 */
#include <math.h>
#include <stdlib.h>

#include "allegro/allegro.h"
#include "backend/pair_potential.h"
#include "backend/parallel.h"
#include "math/radial.h"
#include "math/sh.h"
#include "api/status.h"

#define REAL double
#define FN(name) name##_f64
#include "allegro/allegro_eval.inc"

enum fnq_status fnq__allegro_init_f64(const struct fnq_model *m, void **state)
{
    return FN(allegro_init)(m, state);
}
void fnq__allegro_free_f64(void *state) { FN(allegro_free)(state); }
enum fnq_status fnq__allegro_compute_f64(void *state, const struct fnq_graph *g,
                                         struct fnq_results *out)
{
    return FN(allegro_compute)(state, g, out);
}
