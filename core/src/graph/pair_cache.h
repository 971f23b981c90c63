/*
 * pair_cache.h: what fnq_ctx_compute_graph_repeat needs of the last fnq_ctx_compute_graph: the
 * atom counts, species and ghost map, and the pairs themselves where the backend does not keep
 * them (the CUDA backend keeps them on the GPU, so a caller whose list changes every few steps
 * sends it once per rebuild instead of every step).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "fnq.h"

struct fnq_pair_cache {
    int valid;
    int on_backend; /* the backend keeps the pairs (no copies here) */
    int64_t n_local, n_all, n_edges;
    int shifted;    /* the pairs had shifts */
    int32_t *species; /* [n_all] */
    int64_t *owner;   /* [n_all-n_local] ghost map folded into the graph, or NULL */
    int64_t *recv, *send; /* [n_edges], when !on_backend */
    double *shift;        /* [n_edges*3], when !on_backend and shifted */
};

/* Remember a call's inputs (the pairs only when !on_backend); the cache is invalid on failure. */
enum fnq_status fnq__pair_cache_save(struct fnq_pair_cache *c, int on_backend, int64_t n_local,
                                     int64_t n_all, const int32_t *species, int64_t n_edges,
                                     const int64_t *recv, const int64_t *send,
                                     const double *shift, const int64_t *owner);
void fnq__pair_cache_free(struct fnq_pair_cache *c);
