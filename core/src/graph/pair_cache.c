/*
 * pair_cache.c: the last fnq_ctx_compute_graph's inputs for fnq_ctx_compute_graph_repeat.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/pair_cache.h"
#include "api/status.h"

/* *p holds `bytes` copied from src (NULL src: *p freed) */
static int copy_into(void **p, const void *src, size_t bytes)
{
    free(*p);
    *p = NULL;
    if (!src)
        return 1;
    *p = malloc(bytes ? bytes : 1);
    if (!*p)
        return 0;
    memcpy(*p, src, bytes);
    return 1;
}

enum fnq_status fnq__pair_cache_save(struct fnq_pair_cache *c, int on_backend, int64_t n_local,
                                     int64_t n_all, const int32_t *species, int64_t n_edges,
                                     const int64_t *recv, const int64_t *send,
                                     const double *shift, const int64_t *owner)
{
    c->valid = 0;
    const size_t na = (size_t)n_all, ng = (size_t)(n_all - n_local), np = (size_t)n_edges;
    int ok = copy_into((void **)&c->species, species, sizeof(int32_t) * na) &&
             copy_into((void **)&c->owner, owner, sizeof(int64_t) * ng) &&
             copy_into((void **)&c->recv, on_backend ? NULL : recv, sizeof(int64_t) * np) &&
             copy_into((void **)&c->send, on_backend ? NULL : send, sizeof(int64_t) * np) &&
             copy_into((void **)&c->shift, on_backend ? NULL : shift, sizeof(double) * 3 * np);
    if (!ok)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY,
                         "out of host memory keeping %lld pairs for fnq_ctx_compute_graph_repeat",
                         (long long)n_edges);
    c->on_backend = on_backend;
    c->n_local = n_local, c->n_all = n_all, c->n_edges = n_edges;
    c->shifted = shift != NULL;
    c->valid = 1;
    return FNQ_STATUS_OK;
}

void fnq__pair_cache_free(struct fnq_pair_cache *c)
{
    free(c->species), free(c->owner), free(c->recv), free(c->send), free(c->shift);
    memset(c, 0, sizeof(*c));
}
