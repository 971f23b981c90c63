/*
 * ctx.h: what an evaluation context holds, shared by the files of the public compute entry
 * points (ctx.c: one configuration; batch.c: many).
 */
#pragma once

#include "api/options.h"
#include "backend/backend.h"
#include "graph/graph.h"
#include "graph/pair_cache.h"

struct fnq_ctx {
    const struct fnq_model *model;
    enum fnq_device device;
    enum fnq_dtype dtype;
    const struct fnq_backend_i *backend;
    void *state;
    struct fnq_options options; /* read from the environment once, at fnq_ctx_init */
    struct fnq_limits limits;
    /* the caller's ghost exchange: at most one of the two */
    struct fnq_comm comm;
    struct fnq_device_comm device_comm;
    int has_comm, has_device_comm;
    struct fnq_graph_buf graph;
    /* fnq_ctx_compute_batch: the structures' lists before they join the batch's (in graph),
     * and the batch's per-atom results before they go to the caller */
    struct fnq_batch_parts batch_parts;
    double *batch_out;
    size_t batch_out_cap;
    int64_t last_edges;
    struct fnq_pair_cache last_call; /* for fnq_ctx_compute_graph_repeat */
    /* host copies of device positions and species to word a failed input check
     * (fnq_ctx_compute_graph_device): [n*3] doubles, then [n] int32 */
    void *mirror;
    size_t mirror_cap;
};

/* species[i] must be a species index of the model; names the first atom that is not */
enum fnq_status fnq__ctx_check_species(const struct fnq_model *m, int64_t n,
                                       const int32_t *species);
