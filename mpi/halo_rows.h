/*
 * halo_rows.h: the four host row operations of a ghost exchange along a plan (halo_plan.h),
 * between the caller's rows (row i at rows + i*width, width values of float or double) and
 * the message buffers a transport moves. The CUDA versions in mpi/ do exactly the same.
 *
 * Buffers (`width` values per slot, peer p's part starting at slot start[p]):
 *   forward send   [n_send slots], laid out as send_index (send_start)
 *   forward recv   [n_recv slots], laid out as recv_index (recv_start)
 *   reverse send   [n_recv slots], laid out as recv_index (recv_start)
 *   reverse recv   [n_send slots], laid out as send_index (send_start)
 * A forward exchange: pack_forward, the transport delivers peer p's send part for this domain
 * into recv part p (peer == rank: a copy), unpack_forward. A reverse exchange: pack_reverse,
 * the transport delivers peer p's reverse send part for this domain into reverse recv part p,
 * sum_reverse. Ghost rows are only read by the reverse exchange; owned rows not in the plan
 * are left alone by both.
 *
 * Each operation comes as _f64 (double) and _f32 (float), and as a dispatcher on
 * enum fnq_dtype for fnq_comm callbacks (FNQ_STATUS_INVALID_ARG for another dtype).
 */
#pragma once

#include <stdint.h>

#include "fnq.h"
#include "halo_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FNQ_HALO_ROWS_DECLARE(SUFFIX, REAL)                                                     \
    /* send_buf slot s = owned row send_index[s] */                                            \
    void fnq_halo_pack_forward_##SUFFIX(const struct fnq_halo_plan *plan, const REAL *rows,    \
                                        int32_t width, REAL *send_buf);                        \
    /* ghost row recv_index[s] = recv_buf slot s */                                            \
    void fnq_halo_unpack_forward_##SUFFIX(const struct fnq_halo_plan *plan,                    \
                                          const REAL *recv_buf, int32_t width, REAL *rows);    \
    /* send_buf slot s = ghost row recv_index[s] */                                            \
    void fnq_halo_pack_reverse_##SUFFIX(const struct fnq_halo_plan *plan, const REAL *rows,    \
                                        int32_t width, REAL *send_buf);                        \
    /* owned row sum_atom[k] += recv_buf slots sum_slot[sum_start[k] .. sum_start[k+1]), one   \
     * after the other in that order */                                                        \
    void fnq_halo_sum_reverse_##SUFFIX(const struct fnq_halo_plan *plan, const REAL *recv_buf, \
                                       int32_t width, REAL *rows);

FNQ_HALO_ROWS_DECLARE(f64, double)
FNQ_HALO_ROWS_DECLARE(f32, float)

enum fnq_status fnq_halo_pack_forward(const struct fnq_halo_plan *plan, const void *rows,
                                      int32_t width, enum fnq_dtype dtype, void *send_buf);
enum fnq_status fnq_halo_unpack_forward(const struct fnq_halo_plan *plan, const void *recv_buf,
                                        int32_t width, enum fnq_dtype dtype, void *rows);
enum fnq_status fnq_halo_pack_reverse(const struct fnq_halo_plan *plan, const void *rows,
                                      int32_t width, enum fnq_dtype dtype, void *send_buf);
enum fnq_status fnq_halo_sum_reverse(const struct fnq_halo_plan *plan, const void *recv_buf,
                                     int32_t width, enum fnq_dtype dtype, void *rows);

/* Bytes of one value of `dtype` (0 for FNQ_DTYPE_DEFAULT or anything else). */
static inline int32_t fnq_halo_value_bytes(enum fnq_dtype dtype)
{
    return dtype == FNQ_DTYPE_F64 ? 8 : dtype == FNQ_DTYPE_F32 ? 4 : 0;
}

#ifdef __cplusplus
}
#endif
