/*
 * species_order.cuh: the owned atoms in species order (species_order.cu), for the node GEMMs of
 * linears with weights per species (NequIP's self-connection): their tiles then hold rows of
 * one species, or two at a boundary (node_gemm.cu). A stable sort, so the order is a function
 * of the species alone and every run sums in the same order.
 */
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace fnqcu {

struct SpeciesOrderArgs {
    int64_t n;          /* owned atoms */
    int n_species;
    const int *species; /* [n] */
    int *keys_sorted;   /* [n] scratch */
    int *ids;           /* [n] scratch: 0 .. n-1 */
    int *order;         /* [n] out: atom indices, species ascending, index ascending within */
};

/* Sort (tmp == nullptr: size query of the CUB scratch into *tmp_bytes). */
cudaError_t species_order_launch(const SpeciesOrderArgs &a, void *tmp, size_t *tmp_bytes,
                                 cudaStream_t stream);

} // namespace fnqcu
