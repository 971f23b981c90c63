/*
 * halo_error.c: mpi/'s failures through the core's last-error message (halo_error.h).
 */
#include <stdarg.h>
#include <stdio.h>

#include "halo_error.h"

enum fnq_status halo_fail(enum fnq_status status, const char *fmt, ...)
{
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    return fnq_error_set(status, message);
}
