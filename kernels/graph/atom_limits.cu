/*
 * atom_limits.cu: the checks of the host route (core/src/api/ctx.c, graph.c) on each atom's inputs
 * and neighbourhood, and the receivers' first-edge offsets, see atom_limits.cuh.
 */
#include <cub/device/device_scan.cuh>

#include "graph/atom_limits.cuh"

namespace fnqcu {

/* One thread per atom, and one more for the scan's trailing zero: too many neighbours, a
 * pair closer than allowed (or at distance 0), or, with ghosts folded, a pair whose reverse
 * is missing */
template <typename CountT> __global__ void atom_limits_kernel(AtomLimitArgs<CountT> a)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i > a.n)
        return;
    if (i == a.n) {
        a.counts64[i] = 0;
        return;
    }
    const int64_t c = (int64_t)a.count[i];
    a.counts64[i] = c;
    const double d2 = a.min_d2[i];
    bool bad = c > a.max_neighbors || (c > 0 && (d2 < a.min_d2_allowed || d2 == 0.0));
    if (a.from_owned)
        bad = bad || a.from_owned[i] != a.sent[i];
    if (bad)
        atomicOr(a.bad, 1u);
}

template <typename CountT>
cudaError_t atom_limits_launch(const AtomLimitArgs<CountT> &a, void *tmp, size_t *tmp_bytes,
                               cudaStream_t stream)
{
    if (!tmp)
        return cub::DeviceScan::ExclusiveSum(nullptr, *tmp_bytes, a.counts64, a.starts,
                                             a.n + 1, stream);
    cudaError_t e = cudaMemsetAsync(a.bad, 0, sizeof(unsigned int), stream);
    if (e != cudaSuccess)
        return e;
    const int threads = 256;
    atom_limits_kernel<CountT><<<(unsigned)((a.n + threads) / threads), threads, 0, stream>>>(a);
    e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    return cub::DeviceScan::ExclusiveSum(tmp, *tmp_bytes, a.counts64, a.starts, a.n + 1, stream);
}

__global__ void atom_inputs_kernel(int64_t n, const double *pos, const int32_t *species,
                                   int32_t n_species, unsigned int *bad)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const double *r = pos + 3 * i;
    if (!isfinite(r[0]) || !isfinite(r[1]) || !isfinite(r[2]) ||
        (species && (species[i] < 0 || species[i] >= n_species)))
        atomicOr(bad, 1u);
}

cudaError_t atom_inputs_launch(int64_t n, const double *pos, const int32_t *species,
                               int32_t n_species, unsigned int *bad, cudaStream_t stream)
{
    cudaError_t e = cudaMemsetAsync(bad, 0, sizeof(unsigned int), stream);
    if (e != cudaSuccess || n == 0)
        return e;
    const int threads = 256;
    atom_inputs_kernel<<<(unsigned)((n + threads - 1) / threads), threads, 0, stream>>>(
        n, pos, species, n_species, bad);
    return cudaGetLastError();
}

template cudaError_t atom_limits_launch<int32_t>(const AtomLimitArgs<int32_t> &, void *, size_t *,
                                                 cudaStream_t);
template cudaError_t atom_limits_launch<int64_t>(const AtomLimitArgs<int64_t> &, void *, size_t *,
                                                 cudaStream_t);

} // namespace fnqcu
