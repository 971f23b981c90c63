/*
 * backend_cpu.c: the CPU backend: the exact reference, float64 or float32, OpenMP-parallel.
 */
#include <stdlib.h>

#include "backend.h"
#include "cpu_eval.h"
#include "status.h"

struct cpu_state {
    enum fnq_dtype dtype;
    void *impl;
};

static enum fnq_status cpu_init(const struct fnq_model *m, enum fnq_dtype dtype, int32_t device_id,
                                const struct fnq_options *opt, void **out)
{
    (void)device_id;
    struct cpu_state *s = calloc(1, sizeof(*s));
    if (!s)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of host memory");
    s->dtype = dtype;
    enum fnq_status st = dtype == FNQ_DTYPE_F32 ? fnq__cpu_init_f32(m, opt, &s->impl)
                                                : fnq__cpu_init_f64(m, opt, &s->impl);
    if (st != FNQ_STATUS_OK) {
        free(s);
        return st;
    }
    *out = s;
    return FNQ_STATUS_OK;
}

static void cpu_free(void *p)
{
    struct cpu_state *s = p;
    if (!s)
        return;
    if (s->dtype == FNQ_DTYPE_F32)
        fnq__cpu_free_f32(s->impl);
    else
        fnq__cpu_free_f64(s->impl);
    free(s);
}

static enum fnq_status cpu_compute(void *p, const struct fnq_graph *g,
                                   const struct fnq_exchange *x, struct fnq_results *out)
{
    struct cpu_state *s = p;
    return s->dtype == FNQ_DTYPE_F32 ? fnq__cpu_compute_f32(s->impl, g, x, out)
                                     : fnq__cpu_compute_f64(s->impl, g, x, out);
}

const struct fnq_backend_i fnq__backend_cpu = {"cpu", cpu_init, cpu_free, cpu_compute,
                                                NULL,  NULL,     NULL,     NULL,
                                                NULL};
