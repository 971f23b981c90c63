/*
 * exchange.c: ghost-atom exchange for fnq_ctx_compute_graph. With a caller's fnq_comm (LAMMPS,
 * MPI) the callbacks move rows between ranks; without one, ghost_owner maps each ghost to the
 * owned atom it is an image of, all in this process.
 */
#include <string.h>

#include "backend.h"
#include "status.h"

enum fnq_status fnq__exchange_forward(const struct fnq_exchange *x, void *rows, int32_t width,
                                      enum fnq_dtype dtype)
{
    if (x->comm && x->comm->forward) {
        if (x->comm->forward(x->comm->user, rows, width, dtype) != 0)
            return fnq__fail(FNQ_STATUS_COMM, "forward ghost exchange of %d values per atom failed",
                             width);
        return FNQ_STATUS_OK;
    }
    if (!x->ghost_owner)
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "%lld ghost atoms but neither ghost_owner nor a comm was given",
                         (long long)(x->n_all - x->n_local));
    const size_t row = (size_t)width * (dtype == FNQ_DTYPE_F32 ? 4 : 8);
    char *base = rows;
    for (int64_t g = x->n_local; g < x->n_all; g++)
        memcpy(base + (size_t)g * row, base + (size_t)x->ghost_owner[g - x->n_local] * row, row);
    return FNQ_STATUS_OK;
}

enum fnq_status fnq__exchange_reverse(const struct fnq_exchange *x, void *rows, int32_t width,
                                      enum fnq_dtype dtype)
{
    if (x->comm && x->comm->reverse) {
        if (x->comm->reverse(x->comm->user, rows, width, dtype) != 0)
            return fnq__fail(FNQ_STATUS_COMM, "reverse ghost exchange of %d values per atom failed",
                             width);
        return FNQ_STATUS_OK;
    }
    if (!x->ghost_owner)
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "%lld ghost atoms but neither ghost_owner nor a comm was given",
                         (long long)(x->n_all - x->n_local));
    /* ghosts in ascending order, so the sum order is fixed */
    for (int64_t g = x->n_local; g < x->n_all; g++) {
        int64_t o = x->ghost_owner[g - x->n_local];
        if (dtype == FNQ_DTYPE_F32) {
            float *r = rows;
            for (int32_t k = 0; k < width; k++)
                r[o * width + k] += r[g * width + k];
        } else {
            double *r = rows;
            for (int32_t k = 0; k < width; k++)
                r[o * width + k] += r[g * width + k];
        }
    }
    return FNQ_STATUS_OK;
}
