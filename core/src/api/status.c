/*
 * status.c: status strings, the thread-local last error (message and atoms) and the log
 * callback.
 */
#include "api/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[2048];
/* the atoms the last failure is about, as indices of the failing call's arrays */
static _Thread_local int64_t last_atoms[2];
static _Thread_local int32_t n_last_atoms;

static void default_log(enum fnq_log_level level, const char *message, void *user)
{
    (void)user;
    if (level >= FNQ_LOG_WARN)
        fprintf(stderr, "fusednequip: %s: %s\n", level == FNQ_LOG_WARN ? "warning" : "error",
                message);
}

static fnq_log_callback log_callback = default_log;
static void *log_user;

int32_t fnq_abi_version(void) { return FNQ_ABI_VERSION; }

const char *fnq_version_string(void) { return FNQ_VERSION; }

const char *fnq_status_string(enum fnq_status status)
{
    switch (status) {
    case FNQ_STATUS_OK: return "ok";
    case FNQ_STATUS_INVALID_ARG: return "invalid argument";
    case FNQ_STATUS_IO: return "input/output error";
    case FNQ_STATUS_FORMAT: return "bad model file";
    case FNQ_STATUS_UNSUPPORTED: return "unsupported";
    case FNQ_STATUS_OUT_OF_MEMORY: return "out of memory";
    case FNQ_STATUS_DEVICE: return "device error";
    case FNQ_STATUS_COMM: return "communication error";
    case FNQ_STATUS_INTERNAL: return "internal error";
    }
    return "unknown status";
}

const char *fnq_dtype_name(enum fnq_dtype dtype)
{
    switch (dtype) {
    case FNQ_DTYPE_F32: return "float32";
    case FNQ_DTYPE_F64: return "float64";
    case FNQ_DTYPE_DEFAULT: return "default";
    }
    return "unknown";
}

const char *fnq_device_name(enum fnq_device device)
{
    switch (device) {
    case FNQ_DEVICE_CPU: return "cpu";
    case FNQ_DEVICE_CUDA: return "cuda";
    case FNQ_DEVICE_AUTO: return "auto";
    }
    return "unknown";
}

const char *fnq_last_error(void) { return last_error; }

int32_t fnq_last_error_atoms(int64_t *atoms, int32_t cap)
{
    for (int32_t k = 0; k < n_last_atoms && k < cap && atoms; k++)
        atoms[k] = last_atoms[k];
    return n_last_atoms;
}

void fnq__clear_error(void)
{
    last_error[0] = 0;
    n_last_atoms = 0;
}

static void record(const char *fmt, va_list ap)
{
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    n_last_atoms = 0;
}

enum fnq_status fnq__fail(enum fnq_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(fmt, ap);
    va_end(ap);
    return status;
}

enum fnq_status fnq__fail_in_structure(enum fnq_status status, int64_t s, int64_t atom_offset)
{
    char inner[sizeof(last_error)];
    memcpy(inner, last_error, sizeof(inner));
    snprintf(last_error, sizeof(last_error), "structure %lld: %.2000s", (long long)s, inner);
    for (int32_t k = 0; k < n_last_atoms; k++)
        last_atoms[k] += atom_offset;
    return status;
}

enum fnq_status fnq_error_set(enum fnq_status status, const char *message)
{
    return fnq__fail(status, "%s", message ? message : "");
}

enum fnq_status fnq__fail_atoms(enum fnq_status status, int64_t a, int64_t b, const char *fmt,
                                ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(fmt, ap);
    va_end(ap);
    last_atoms[n_last_atoms++] = a;
    if (b >= 0)
        last_atoms[n_last_atoms++] = b;
    return status;
}

void fnq_log_set(fnq_log_callback callback, void *user)
{
    log_callback = callback ? callback : default_log;
    log_user = callback ? user : NULL;
}

void fnq__log(enum fnq_log_level level, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log_callback(level, msg, log_user);
}
