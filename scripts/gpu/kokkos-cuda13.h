/* Force-included (nvcc -include) into the build of LAMMPS with KOKKOS by gpu-lammps-kokkos.sh.
 * CUDA 13 changed three runtime signatures that the Kokkos LAMMPS bundles (4.5.01, LAMMPS
 * 4 Feb 2025) calls in their CUDA 12 form: edge data in cudaGraphAddDependencies, and a
 * cudaMemLocation instead of a device number in cudaMemAdvise and cudaMemPrefetchAsync.
 * These C++ overloads give the CUDA 12 forms back on top of the new ones, so that source
 * builds unchanged; with CUDA 12 they are not defined. */
#ifndef FNQ_KOKKOS_CUDA13_H
#define FNQ_KOKKOS_CUDA13_H
#ifdef __cplusplus
#include <cuda_runtime_api.h>
#if CUDART_VERSION >= 13000

static inline cudaMemLocation fnq_location_of_device(int device)
{
  cudaMemLocation location;
  location.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  location.id = device == cudaCpuDeviceId ? 0 : device;
  return location;
}

inline cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t *from,
                                            const cudaGraphNode_t *to, size_t count)
{
  return cudaGraphAddDependencies(graph, from, to, nullptr, count);
}

inline cudaError_t cudaMemAdvise(const void *pointer, size_t bytes, cudaMemoryAdvise advice,
                                 int device)
{
  return cudaMemAdvise(pointer, bytes, advice, fnq_location_of_device(device));
}

inline cudaError_t cudaMemPrefetchAsync(const void *pointer, size_t bytes, int device,
                                        cudaStream_t stream = nullptr)
{
  return cudaMemPrefetchAsync(pointer, bytes, fnq_location_of_device(device), 0, stream);
}

#endif
#endif
#endif
