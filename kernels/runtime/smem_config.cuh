/*
 * smem_config.cuh: kernels that take more dynamic shared memory than the default 48 KB must be
 * allowed it once, before their first launch.
 */
#pragma once

#include <cuda_runtime.h>
#include <stddef.h>

namespace fnqcu {

/* allow each of the kernels `smem` bytes of dynamic shared memory; the first error, if any */
template <size_t N>
inline cudaError_t allow_dynamic_smem(const void *const (&kernels)[N], size_t smem)
{
    for (const void *k : kernels) {
        const cudaError_t e =
            cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

} // namespace fnqcu
