/*
 * loader.c: what the model readers share: required JSON header fields and the array records
 * after the header, each with a message naming the file and the field or record.
 */
#include <math.h>
#include <stdio.h>

#include "model/loader.h"
#include "model/npy.h"
#include "api/status.h"

enum fnq_status fnq__json_number(const cJSON *obj, const char *file, const char *key, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return fnq__fail(FNQ_STATUS_FORMAT, "%s: header field '%s' is missing", file, key);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) /* cJSON reads 1e999 as inf */
        return fnq__fail(FNQ_STATUS_FORMAT, "%s: header field '%s' is not a (finite) number",
                         file, key);
    *out = v->valuedouble;
    return FNQ_STATUS_OK;
}

enum fnq_status fnq__json_int(const cJSON *obj, const char *file, const char *key, int64_t *out)
{
    double v = 0.0;
    FNQ_CHECK(fnq__json_number(obj, file, key, &v));
    if (v != floor(v) || fabs(v) > 9e15)
        return fnq__fail(FNQ_STATUS_FORMAT, "%s: header field '%s' = %g is not an integer", file,
                         key, v);
    *out = (int64_t)v;
    return FNQ_STATUS_OK;
}

enum fnq_status fnq__json_bool(const cJSON *obj, const char *file, const char *key, int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return fnq__fail(FNQ_STATUS_FORMAT, "%s: header field '%s' is missing", file, key);
    if (!cJSON_IsBool(v))
        return fnq__fail(FNQ_STATUS_FORMAT, "%s: header field '%s' is not true/false", file, key);
    *out = cJSON_IsTrue(v) ? 1 : 0;
    return FNQ_STATUS_OK;
}

enum fnq_status fnq__json_string(const cJSON *obj, const char *file, const char *key,
                                 const char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return fnq__fail(FNQ_STATUS_FORMAT, "%s: header field '%s' is missing", file, key);
    if (!cJSON_IsString(v))
        return fnq__fail(FNQ_STATUS_FORMAT, "%s: header field '%s' is not a string", file, key);
    *out = v->valuestring;
    return FNQ_STATUS_OK;
}

enum fnq_status fnq__leaf_read(struct fnq_leaf_reader *r, const char *what, int32_t ndim,
                               const int64_t *shape, double *out)
{
    struct fnq_npy rec;
    char why[512];
    if (r->offset >= r->size)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: file ends before array %d (%s): truncated or not a complete model",
                         r->file, r->index, what);
    if (fnq__npy_parse(r->buf, r->size, r->offset, &rec, why, sizeof(why)) != 0)
        return fnq__fail(FNQ_STATUS_FORMAT, "%s: array %d (%s): %s", r->file, r->index, what, why);
    int ok = rec.ndim == ndim && (rec.descr[1] == 'f');
    for (int32_t d = 0; ok && d < ndim; d++)
        ok = rec.shape[d] == shape[d];
    if (!ok) {
        char got[128] = "", want[128] = "";
        int a = 0, b = 0;
        for (int32_t d = 0; d < rec.ndim; d++)
            a += snprintf(got + a, sizeof(got) - (size_t)a, "%s%lld", d ? ", " : "",
                          (long long)rec.shape[d]);
        for (int32_t d = 0; d < ndim; d++)
            b += snprintf(want + b, sizeof(want) - (size_t)b, "%s%lld", d ? ", " : "",
                          (long long)shape[d]);
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: array %d (%s) has type %s shape (%s), expected float shape (%s): "
                         "the file does not match the architecture in its header",
                         r->file, r->index, what, rec.descr, got, want);
    }
    fnq__npy_to_double(&rec, out);
    for (int64_t i = 0; i < rec.count; i++)
        if (!isfinite(out[i]))
            return fnq__fail(FNQ_STATUS_FORMAT, "%s: array %d (%s) element %lld is %g (corrupt "
                                                "file)",
                             r->file, r->index, what, (long long)i, out[i]);
    r->offset = rec.end;
    r->index++;
    r->n_values += rec.count;
    return FNQ_STATUS_OK;
}

enum fnq_status fnq__leaf_room(const struct fnq_leaf_reader *r, const char *what, int64_t count)
{
    size_t left = r->offset < r->size ? r->size - r->offset : 0;
    if (count < 0 || (uint64_t)count > left / 4)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: %s: %lld values needed from array %d on, more than the %zu "
                         "bytes left in the file hold: truncated file, or a header that does "
                         "not match its arrays",
                         r->file, what, (long long)count, r->index, left);
    return FNQ_STATUS_OK;
}
