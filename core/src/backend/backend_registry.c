/*
 * backend_registry.c: the backends this build has, in a table fixed at compile time (as ggml's
 * backend registry lists its backends): the CPU reference backend always, the CUDA backend
 * when the build has it (FNQ_HAVE_CUDA, a usage requirement of the kernels/ target). The CUDA
 * entry is a direct call into kernels/ (backend_cuda.h): a CUDA build whose kernels are not
 * linked in fails to link, where a weak symbol would have run it without CUDA. Entries are
 * constant, so lookups need no initialisation and are safe from any thread.
 */
#include <string.h>

#include "backend/backend.h"
#ifdef FNQ_HAVE_CUDA
#include "runtime/backend_cuda.h"
#endif

static int32_t cpu_device_count(void) { return 1; }

static const struct fnq_backend_reg *cpu_reg(void)
{
    static const struct fnq_backend_reg reg = {FNQ_DEVICE_CPU, &fnq__backend_cpu,
                                               &fnq__backend_cpu, cpu_device_count, NULL, NULL};
    return &reg;
}

/* In order of registration; the first entry is the fallback of device "auto". */
static const struct fnq_backend_reg *(*const registry[])(void) = {
    cpu_reg,
#ifdef FNQ_HAVE_CUDA
    fnq__backend_cuda_reg,
#endif
};

int32_t fnq__backend_reg_count(void) { return (int32_t)(sizeof(registry) / sizeof(registry[0])); }

const struct fnq_backend_reg *fnq__backend_reg_get(int32_t index)
{
    return index >= 0 && index < fnq__backend_reg_count() ? registry[index]() : NULL;
}

const struct fnq_backend_reg *fnq__backend_reg_by_device(enum fnq_device device)
{
    for (int32_t i = 0; i < fnq__backend_reg_count(); i++)
        if (registry[i]()->device == device)
            return registry[i]();
    return NULL;
}

const struct fnq_backend_reg *fnq__backend_reg_by_name(const char *name)
{
    for (int32_t i = 0; name && i < fnq__backend_reg_count(); i++)
        if (strcmp(registry[i]()->f32->name, name) == 0)
            return registry[i]();
    return NULL;
}

int32_t fnq_backend_count(void) { return fnq__backend_reg_count(); }

const char *fnq_backend_name(int32_t index)
{
    const struct fnq_backend_reg *reg = fnq__backend_reg_get(index);
    return reg ? reg->f32->name : NULL;
}

int32_t fnq_cuda_device_count(void)
{
    const struct fnq_backend_reg *cuda = fnq__backend_reg_by_device(FNQ_DEVICE_CUDA);
    return cuda ? cuda->device_count() : 0;
}
