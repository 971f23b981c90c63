/*
 * exchange.c: ghost-atom exchange for fnq_ctx_compute_graph through the caller's fnq_comm
 * (LAMMPS, MPI): the callbacks move rows between ranks. Ghosts given by an owner map never get
 * here: they are folded onto their owners as the graph is built (graph.h).
 */
#include "backend/backend.h"
#include "api/status.h"

static enum fnq_status no_comm(const struct fnq_exchange *x)
{
    return fnq__fail(FNQ_STATUS_INTERNAL, "%lld ghost rows to exchange but no comm installed",
                     (long long)(x->n_all - x->n_local));
}

enum fnq_status fnq__exchange_forward(const struct fnq_exchange *x, void *rows, int32_t width,
                                      enum fnq_dtype dtype)
{
    if (!x->comm || !x->comm->forward)
        return no_comm(x);
    if (x->comm->forward(x->comm->user, rows, width, dtype) != 0)
        return fnq__fail(FNQ_STATUS_COMM, "forward ghost exchange of %d values per atom failed",
                         width);
    return FNQ_STATUS_OK;
}

enum fnq_status fnq__exchange_reverse(const struct fnq_exchange *x, void *rows, int32_t width,
                                      enum fnq_dtype dtype)
{
    if (!x->comm || !x->comm->reverse)
        return no_comm(x);
    if (x->comm->reverse(x->comm->user, rows, width, dtype) != 0)
        return fnq__fail(FNQ_STATUS_COMM, "reverse ghost exchange of %d values per atom failed",
                         width);
    return FNQ_STATUS_OK;
}
