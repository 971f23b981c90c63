/*
 * quad_plan.h: the quads plan of an e3nn linear (quad_plan.cpp), shared by the CUDA upload
 * (model_upload.cu) and the unit tests.
 */
#pragma once

#include <stdint.h>
#include <vector>

struct fnq_linear; /* core/src/model/model.h */
struct fnq_irreps;

namespace fnqcu {

/* One destination block of a linear run by quads (node_ops.cuh linear_quads): its instruction
 * (or -1: no input reaches it), sum length K, lanes per quad g (the K input channels split in g
 * slices, g a power of 2 <= kQuadMaxSlices) and its units [first, first + units), a unit being
 * one lane's slice of one quad. */
struct QuadBlock {
    int k, K, g, first, units;
};
constexpr int kQuadMaxSlices = 8;

/* The plan for blocks of `threads` threads; empty where the linear does not run by quads.
 * *n_units: the unit slots of the plan (its last block's end). */
std::vector<QuadBlock> quad_plan(const struct fnq_linear &h, const struct fnq_irreps &src,
                                 const struct fnq_irreps &dst, bool transpose, int threads,
                                 int *n_units);
/* The units of a plan whose g are set, laid out; returns the slots used. */
int quad_layout(std::vector<QuadBlock> &plan, const std::vector<int> &quads);
/* The model time of a laid-out plan (quad_plan picks the plan that minimises it). */
int64_t quad_makespan(const std::vector<QuadBlock> &plan, int n_units, int threads);

} // namespace fnqcu
