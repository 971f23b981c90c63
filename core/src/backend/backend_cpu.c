/*
 * backend_cpu.c: the CPU backend: the exact reference, float64 or float32, OpenMP-parallel.
 */
#include <stdlib.h>

#include "allegro/allegro.h"
#include "backend/backend.h"
#include "nequip/cpu_eval.h"
#include "api/status.h"

struct cpu_state {
    enum fnq_dtype dtype;
    int allegro; /* the engine: Allegro's (allegro_eval.inc) or NequIP's (cpu_eval.inc) */
    void *impl;
};

static void cpu_free(void *p)
{
    struct cpu_state *s = p;
    if (!s)
        return;
    const int f32 = s->dtype == FNQ_DTYPE_F32;
    if (s->allegro)
        (f32 ? fnq__allegro_free_f32 : fnq__allegro_free_f64)(s->impl);
    else
        (f32 ? fnq__cpu_free_f32 : fnq__cpu_free_f64)(s->impl);
    free(s);
}

static enum fnq_status cpu_init(const struct fnq_model *m, enum fnq_dtype dtype, int32_t device_id,
                                const struct fnq_options *opt, void **out)
{
    (void)device_id;
    struct cpu_state *s = calloc(1, sizeof(*s));
    if (!s)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of host memory");
    s->dtype = dtype;
    s->allegro = m->allegro != NULL;
    const int f32 = dtype == FNQ_DTYPE_F32;
    enum fnq_status st = s->allegro ? (f32 ? fnq__allegro_init_f32(m, &s->impl)
                                           : fnq__allegro_init_f64(m, &s->impl))
                                    : (f32 ? fnq__cpu_init_f32(m, opt, &s->impl)
                                           : fnq__cpu_init_f64(m, opt, &s->impl));
    if (st != FNQ_STATUS_OK) {
        cpu_free(s);
        return st;
    }
    *out = s;
    return FNQ_STATUS_OK;
}

static enum fnq_status cpu_compute(void *p, const struct fnq_graph *g,
                                   const struct fnq_exchange *x, struct fnq_results *out)
{
    struct cpu_state *s = p;
    const int f32 = s->dtype == FNQ_DTYPE_F32;
    if (s->allegro) /* strictly local: ghosts need positions only, no exchange */
        return f32 ? fnq__allegro_compute_f32(s->impl, g, out)
                   : fnq__allegro_compute_f64(s->impl, g, out);
    return f32 ? fnq__cpu_compute_f32(s->impl, g, x, out) : fnq__cpu_compute_f64(s->impl, g, x, out);
}

const struct fnq_backend_i fnq__backend_cpu = {"cpu", cpu_init, cpu_free, cpu_compute,
                                                NULL,  NULL,     NULL,     NULL,
                                                NULL};
