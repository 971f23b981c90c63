/*
 * halo_error.h: how mpi/ reports failures: a message through the core's fnq_error_set, so that
 * callers read it with fnq_last_error() as they read the core's, and a status returned.
 */
#pragma once

#include "fnq.h"

#ifdef __cplusplus
extern "C" {
#endif

enum fnq_status halo_fail(enum fnq_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define HALO_CHECK(expr)                                                                        \
    do {                                                                                        \
        enum fnq_status halo_check_status_ = (expr);                                            \
        if (halo_check_status_ != FNQ_STATUS_OK)                                                \
            return halo_check_status_;                                                          \
    } while (0)

#ifdef __cplusplus
}
#endif
