/*
 * status.h: how the library reports failures: every public function returns an fnq_status and
 * leaves a message in a thread-local buffer (fnq_last_error). Nothing exits or aborts.
 */
#pragma once

#include "fnq.h"

/* Record a message and return `status`: `return fnq__fail(FNQ_STATUS_FORMAT, "...", ...);` */
enum fnq_status fnq__fail(enum fnq_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void fnq__clear_error(void);
void fnq__log(enum fnq_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define FNQ_CHECK(expr)                                                                         \
    do {                                                                                        \
        enum fnq_status fnq_check_status_ = (expr);                                             \
        if (fnq_check_status_ != FNQ_STATUS_OK)                                                 \
            return fnq_check_status_;                                                           \
    } while (0)
