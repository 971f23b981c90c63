/*
 * atom_limits.cuh: per-atom checks on the GPU (atom_limits.cu), so that the host reads back a
 * flag instead of every atom's data: the caller's device positions and species (finite, known),
 * and after a neighbour count (neighbor.cu, edge_list.cu) the model's limits per atom with the
 * receivers' first-edge offsets (edges kept: starts[n]). When a check fails the host route
 * runs on the same input to find the atom and word the message.
 */
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace fnqcu {

template <typename CountT> struct AtomLimitArgs {
    int64_t n;                          /* receiving atoms */
    const CountT *count;                /* kept pairs received per atom */
    const double *min_d2;               /* smallest squared distance received (count > 0) */
    const int32_t *from_owned, *sent;   /* pairs from owned senders == pairs sent, or nullptr */
    int64_t max_neighbors;
    double min_d2_allowed;              /* min_distance^2 */
    int64_t *counts64;                  /* [n + 1] scratch: the counts widened, then a 0 */
    int64_t *starts;                    /* [n + 1] out: exclusive prefix sums of count */
    unsigned int *bad;                  /* out: nonzero where some atom breaks a limit */
};

/* Check every atom and scan the counts (tmp == nullptr: size query of the CUB scratch into
 * *tmp_bytes). */
template <typename CountT>
cudaError_t atom_limits_launch(const AtomLimitArgs<CountT> &a, void *tmp, size_t *tmp_bytes,
                               cudaStream_t stream);

/* *bad (zeroed here) becomes nonzero where an atom has a non-finite coordinate or a species
 * outside [0, n_species) (species may be NULL: positions only) */
cudaError_t atom_inputs_launch(int64_t n, const double *pos, const int32_t *species,
                               int32_t n_species, unsigned int *bad, cudaStream_t stream);

} // namespace fnqcu
