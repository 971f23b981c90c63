/*
 * fnqm_arrays.c: the named arrays of a .fnqm file. The header's "arrays" list gives each
 * record's name and shape in file order; every record is parsed and checked against it once,
 * then the model reader asks for arrays by name and expected shape. Messages name the file,
 * the header field that refers to the array, and the array.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/fnqm.h"
#include "api/status.h"

static void shape_text(int32_t ndim, const int64_t *shape, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (int32_t d = 0; d < ndim && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", d ? ", " : "", (long long)shape[d]);
}

void fnq__fnqm_arrays_free(struct fnqm_arrays *a)
{
    free(a->entry);
    memset(a, 0, sizeof(*a));
}

enum fnq_status fnq__fnqm_arrays_read(const cJSON *header, const char *file, const uint8_t *buf,
                                      size_t size, size_t offset, struct fnqm_arrays *a)
{
    memset(a, 0, sizeof(*a));
    a->file = file;
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(header, "arrays");
    if (!cJSON_IsArray(list))
        return fnq__fail(FNQ_STATUS_FORMAT, "%s: header field 'arrays' is missing or not a list",
                         file);
    int32_t n = cJSON_GetArraySize(list);
    a->entry = calloc((size_t)(n > 0 ? n : 1), sizeof(*a->entry));
    if (!a->entry)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    const cJSON *it;
    cJSON_ArrayForEach(it, list)
    {
        struct fnqm_array *e = &a->entry[a->n];
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(it, "shape");
        if (!cJSON_IsString(name) || strlen(name->valuestring) >= sizeof(e->name) ||
            !cJSON_IsArray(shape) || cJSON_GetArraySize(shape) > FNQ_NPY_MAX_DIMS)
            return fnq__fail(FNQ_STATUS_FORMAT,
                             "%s: header field 'arrays' entry %d needs a \"name\" (string, under "
                             "%zu characters) and a \"shape\" (list of at most %d sizes)",
                             file, a->n, sizeof(e->name), FNQ_NPY_MAX_DIMS);
        snprintf(e->name, sizeof(e->name), "%s", name->valuestring);
        for (int32_t k = 0; k < a->n; k++)
            if (strcmp(a->entry[k].name, e->name) == 0)
                return fnq__fail(FNQ_STATUS_FORMAT, "%s: header field 'arrays' names '%s' twice",
                                 file, e->name);
        char why[512];
        if (offset >= size)
            return fnq__fail(FNQ_STATUS_FORMAT,
                             "%s: file ends before array %d ('%s'): truncated file", file, a->n,
                             e->name);
        if (fnq__npy_parse(buf, size, offset, &e->rec, why, sizeof(why)) != 0)
            return fnq__fail(FNQ_STATUS_FORMAT, "%s: array %d ('%s'): %s", file, a->n, e->name,
                             why);
        if (e->rec.descr[1] != 'f')
            return fnq__fail(FNQ_STATUS_FORMAT, "%s: array '%s' has type %s; arrays must be "
                                                "float32 or float64 ('<f4', '<f8')",
                             file, e->name, e->rec.descr);
        int ok = e->rec.ndim == cJSON_GetArraySize(shape);
        int32_t d = 0;
        const cJSON *s;
        cJSON_ArrayForEach(s, shape)
        {
            ok = ok && cJSON_IsNumber(s) && s->valuedouble == (double)e->rec.shape[d];
            d++;
        }
        if (!ok) {
            char got[128];
            shape_text(e->rec.ndim, e->rec.shape, got, sizeof(got));
            char *want = cJSON_PrintUnformatted(shape);
            enum fnq_status st = fnq__fail(
                FNQ_STATUS_FORMAT,
                "%s: array %d ('%s') has shape (%s) but the header's 'arrays' list says %s: "
                "corrupt file",
                file, a->n, e->name, got, want ? want : "?");
            free(want);
            return st;
        }
        offset = e->rec.end;
        a->n_values += e->rec.count;
        a->n++;
    }
    if (offset != size)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: %zu bytes follow the last array listed in the header: corrupt file "
                         "or a header that misses arrays",
                         file, size - offset);
    return FNQ_STATUS_OK;
}

const struct fnqm_array *fnq__fnqm_array_find(const struct fnqm_arrays *a, const cJSON *ref)
{
    for (int32_t k = 0; cJSON_IsString(ref) && k < a->n; k++)
        if (strcmp(a->entry[k].name, ref->valuestring) == 0)
            return &a->entry[k];
    return NULL;
}

enum fnq_status fnq__fnqm_array_get(const struct fnqm_arrays *a, const char *field,
                                    const cJSON *ref, int32_t ndim, const int64_t *shape,
                                    double **out)
{
    *out = NULL;
    if (!cJSON_IsString(ref))
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field '%s' must name an array (a string)", a->file, field);
    const struct fnqm_array *e = fnq__fnqm_array_find(a, ref);
    if (!e)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field '%s' names array '%s', which the file does not have",
                         a->file, field, ref->valuestring);
    int ok = e->rec.ndim == ndim;
    for (int32_t d = 0; ok && d < ndim; d++)
        ok = e->rec.shape[d] == shape[d];
    if (!ok) {
        char got[128], want[128];
        shape_text(e->rec.ndim, e->rec.shape, got, sizeof(got));
        shape_text(ndim, shape, want, sizeof(want));
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field '%s': array '%s' has shape (%s), the model needs (%s)",
                         a->file, field, e->name, got, want);
    }
    double *v = malloc(sizeof(double) * (size_t)(e->rec.count > 0 ? e->rec.count : 1));
    if (!v)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    fnq__npy_to_double(&e->rec, v);
    for (int64_t i = 0; i < e->rec.count; i++)
        if (!isfinite(v[i])) {
            free(v);
            return fnq__fail(FNQ_STATUS_FORMAT,
                             "%s: array '%s' (header field '%s') element %lld is not finite: "
                             "corrupt file",
                             a->file, e->name, field, (long long)i);
        }
    *out = v;
    return FNQ_STATUS_OK;
}
