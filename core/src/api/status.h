/*
 * status.h: how the library reports failures: every public function returns an fnq_status and
 * leaves a message in a thread-local buffer (fnq_last_error), and the indices of the atoms it is
 * about where it names atoms (fnq_last_error_atoms). Nothing exits or aborts.
 */
#pragma once

#include "fnq.h"

/* Record a message and return `status`: `return fnq__fail(FNQ_STATUS_FORMAT, "...", ...);` */
enum fnq_status fnq__fail(enum fnq_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* As fnq__fail, for a failure about atom `a`, or atoms `a` and `b` (b < 0: only `a`); the
 * message names them too. */
enum fnq_status fnq__fail_atoms(enum fnq_status status, int64_t a, int64_t b, const char *fmt,
                                ...) __attribute__((format(printf, 4, 5)));
/* The last failure, about structure `s` of a batch whose atoms start at `atom_offset`: its
 * message gets "structure s: " in front (atom numbers in it stay the structure's own) and the
 * atoms it names become batch indices. Returns `status`. */
enum fnq_status fnq__fail_in_structure(enum fnq_status status, int64_t s, int64_t atom_offset);
void fnq__clear_error(void);
void fnq__log(enum fnq_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define FNQ_CHECK(expr)                                                                         \
    do {                                                                                        \
        enum fnq_status fnq_check_status_ = (expr);                                             \
        if (fnq_check_status_ != FNQ_STATUS_OK)                                                 \
            return fnq_check_status_;                                                           \
    } while (0)
