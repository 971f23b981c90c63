/*
 * species_order.cu: the owned atoms sorted by species (species_order.cuh), CUB's stable radix
 * sort over the bits that the species count needs.
 */
#include <cub/cub.cuh>

#include "nequip/species_order.cuh"

namespace fnqcu {

__global__ void iota_kernel(int *ids, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        ids[i] = (int)i;
}

cudaError_t species_order_launch(const SpeciesOrderArgs &a, void *tmp, size_t *tmp_bytes,
                                 cudaStream_t stream)
{
    int bits = 1;
    while ((1 << bits) < a.n_species)
        bits++;
    const int n = (int)a.n;
    if (!tmp)
        return cub::DeviceRadixSort::SortPairs(nullptr, *tmp_bytes, a.species, a.keys_sorted,
                                               a.ids, a.order, n, 0, bits, stream);
    if (n == 0)
        return cudaSuccess;
    const int blocks = (int)std::min<int64_t>((a.n + 255) / 256, 1024);
    iota_kernel<<<blocks, 256, 0, stream>>>(a.ids, a.n);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    return cub::DeviceRadixSort::SortPairs(tmp, *tmp_bytes, a.species, a.keys_sorted, a.ids,
                                           a.order, n, 0, bits, stream);
}

} // namespace fnqcu
