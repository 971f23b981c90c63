/*
 * halo_rows.c: pack, unpack and reverse-sum of ghost rows on the host along a plan
 * (halo_rows.h). Plain loops, one definition for both dtypes (a macro), so the CUDA versions
 * can mirror them line by line.
 */
#include "halo_rows.h"

#include <string.h>

#include "halo_error.h"

#define FNQ_HALO_ROWS_DEFINE(SUFFIX, REAL)                                                      \
    void fnq_halo_pack_forward_##SUFFIX(const struct fnq_halo_plan *plan, const REAL *rows,    \
                                        int32_t width, REAL *send_buf)                         \
    {                                                                                          \
        const size_t w = (size_t)width;                                                        \
        for (int64_t s = 0; s < fnq_halo_plan_n_send(plan); s++)                               \
            memcpy(send_buf + (size_t)s * w, rows + (size_t)plan->send_index[s] * w,           \
                   sizeof(REAL) * w);                                                          \
    }                                                                                          \
    void fnq_halo_unpack_forward_##SUFFIX(const struct fnq_halo_plan *plan,                    \
                                          const REAL *recv_buf, int32_t width, REAL *rows)     \
    {                                                                                          \
        const size_t w = (size_t)width;                                                        \
        for (int64_t s = 0; s < fnq_halo_plan_n_recv(plan); s++)                               \
            memcpy(rows + (size_t)plan->recv_index[s] * w, recv_buf + (size_t)s * w,           \
                   sizeof(REAL) * w);                                                          \
    }                                                                                          \
    void fnq_halo_pack_reverse_##SUFFIX(const struct fnq_halo_plan *plan, const REAL *rows,    \
                                        int32_t width, REAL *send_buf)                         \
    {                                                                                          \
        const size_t w = (size_t)width;                                                        \
        for (int64_t s = 0; s < fnq_halo_plan_n_recv(plan); s++)                               \
            memcpy(send_buf + (size_t)s * w, rows + (size_t)plan->recv_index[s] * w,           \
                   sizeof(REAL) * w);                                                          \
    }                                                                                          \
    void fnq_halo_sum_reverse_##SUFFIX(const struct fnq_halo_plan *plan, const REAL *recv_buf, \
                                       int32_t width, REAL *rows)                              \
    {                                                                                          \
        const size_t w = (size_t)width;                                                        \
        for (int64_t k = 0; k < plan->n_sum; k++) {                                            \
            REAL *owner = rows + (size_t)plan->sum_atom[k] * w;                                \
            /* one slot after the other, never a tree: the order is the plan's */              \
            for (int64_t q = plan->sum_start[k]; q < plan->sum_start[k + 1]; q++) {            \
                const REAL *slot = recv_buf + (size_t)plan->sum_slot[q] * w;                   \
                for (size_t c = 0; c < w; c++)                                                 \
                    owner[c] += slot[c];                                                       \
            }                                                                                  \
        }                                                                                      \
    }

FNQ_HALO_ROWS_DEFINE(f64, double)
FNQ_HALO_ROWS_DEFINE(f32, float)

static enum fnq_status bad_dtype(const char *what, enum fnq_dtype dtype)
{
    return halo_fail(FNQ_STATUS_INVALID_ARG, "%s: rows of dtype %s (%d); float32 or float64 only",
                     what, fnq_dtype_name(dtype), (int)dtype);
}

/* the dtype dispatchers: one switch each, the same shape for all four operations */
#define FNQ_HALO_DISPATCH(OP, IN, OUT)                                                          \
    enum fnq_status fnq_halo_##OP(const struct fnq_halo_plan *plan, const void *IN,             \
                                  int32_t width, enum fnq_dtype dtype, void *OUT)              \
    {                                                                                          \
        switch (dtype) {                                                                       \
        case FNQ_DTYPE_F64: fnq_halo_##OP##_f64(plan, IN, width, OUT); return FNQ_STATUS_OK;   \
        case FNQ_DTYPE_F32: fnq_halo_##OP##_f32(plan, IN, width, OUT); return FNQ_STATUS_OK;   \
        default: return bad_dtype("fnq_halo_" #OP, dtype);                                     \
        }                                                                                      \
    }

FNQ_HALO_DISPATCH(pack_forward, rows, send_buf)
FNQ_HALO_DISPATCH(unpack_forward, recv_buf, rows)
FNQ_HALO_DISPATCH(pack_reverse, rows, send_buf)
FNQ_HALO_DISPATCH(sum_reverse, recv_buf, rows)
