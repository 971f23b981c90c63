/*
 * cpu_eval.h: entry points of the two CPU evaluation instances (cpu_eval.inc).
 */
#pragma once

#include "backend/backend.h"

struct fnq_options;
enum fnq_status fnq__cpu_init_f64(const struct fnq_model *m, const struct fnq_options *opt,
                                  void **state);
void fnq__cpu_free_f64(void *state);
enum fnq_status fnq__cpu_compute_f64(void *state, const struct fnq_graph *g,
                                     const struct fnq_exchange *x, struct fnq_results *out);
enum fnq_status fnq__cpu_init_f32(const struct fnq_model *m, const struct fnq_options *opt,
                                  void **state);
void fnq__cpu_free_f32(void *state);
enum fnq_status fnq__cpu_compute_f32(void *state, const struct fnq_graph *g,
                                     const struct fnq_exchange *x, struct fnq_results *out);
