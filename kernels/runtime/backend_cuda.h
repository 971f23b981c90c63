/*
 * backend_cuda.h: the one entry point of the CUDA backend that the core calls. The core's
 * backend registry (core/src/backend/backend_registry.c) lists it in builds with the CUDA backend
 * (FNQ_HAVE_CUDA, set by the kernels/ target); a direct reference, so such a build without the
 * kernels' objects fails to link instead of silently running without CUDA.
 */
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

#include "backend/backend.h"

/* The CUDA backend's registry entry: name "cuda", its vtable and the number of GPUs present. */
const struct fnq_backend_reg *fnq__backend_cuda_reg(void);

#ifdef __cplusplus
}
#endif
