/*
 * fuzz_fnqm.c: libFuzzer harness of the .fnqm reader (core/src/model/model_load.c, fnqm_arrays.c,
 * fnqm_load.c, loader.c, npy.c).
 *
 * A .fnqm model is one file (docs/model-format.md), not a directory or an archive: a JSON
 * header line that spells the network out and lists its arrays ("arrays": name and shape of
 * each, in file order), then one .npy record per array. Each input is loaded twice:
 *
 *  1. as it is: the whole file, header and records, any bytes (the container: the header
 *     line, the .npy records and their agreement with the "arrays" list);
 *  2. with its header line only, followed by records made here to match the header's
 *     "arrays" list (the declared shapes, float32, deterministic values), when that list is
 *     readable and declares at most FUZZ_SYNTH_MAX values. Byte-level mutations of a real
 *     file rarely keep the records in step with a changed header, so without this most header
 *     edits would stop at the first record; here every edit of a field, an irreps string, a
 *     path, a gate or a shape reaches the model builder (fnqm_load.c) and, when accepted, the
 *     evaluation.
 *
 * Seeds: the fixture models (tests/fixtures/nequip/NAME.fnqm) and their header lines alone
 * (scripts/test-fuzz.sh makes those). Build and run: scripts/test-fuzz.sh.
 */
#include <math.h>

#include <cjson/cJSON.h>

#include "fuzz_model.h"

#define FUZZ_SYNTH_MAX (1 << 18) /* values in all arrays of a synthesised file */

/* one .npy v1 record of float32 values of `shape`, appended at *out (capacity checked) */
static size_t npy_record(uint8_t *out, int ndim, const long long *shape, size_t *serial)
{
    char dict[200];
    int n = snprintf(dict, sizeof(dict), "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    long long count = 1;
    for (int d = 0; d < ndim; d++) {
        n += snprintf(dict + n, sizeof(dict) - (size_t)n, "%lld,%s", shape[d],
                      d + 1 < ndim ? " " : "");
        count *= shape[d];
    }
    n += snprintf(dict + n, sizeof(dict) - (size_t)n, "), }");
    size_t hlen = (size_t)n + 1; /* + '\n' */
    size_t pad = (64 - (10 + hlen) % 64) % 64;
    hlen += pad;
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    out[8] = (uint8_t)(hlen & 0xff);
    out[9] = (uint8_t)(hlen >> 8);
    memcpy(out + 10, dict, (size_t)n);
    memset(out + 10 + n, ' ', pad);
    out[10 + hlen - 1] = '\n';
    uint8_t *p = out + 10 + hlen;
    for (long long i = 0; i < count; i++) {
        /* values in [0.1, 1.1): finite, nonzero, different from array to array */
        float v = (float)(0.1 + fmod(0.618033988749895 * (double)(++*serial), 1.0));
        memcpy(p + 4 * i, &v, 4);
    }
    return 10 + hlen + 4 * (size_t)count;
}

/* The header line of `data` with records for its "arrays" list; 0 when the list is not a
 * readable list of small arrays (mode 1 covers those). */
static int synthesise(const uint8_t *data, size_t size, uint8_t **out, size_t *out_size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t hsize = nl ? (size_t)(nl - data) : size;
    cJSON *h = cJSON_ParseWithLength((const char *)data, hsize);
    const cJSON *list = h ? cJSON_GetObjectItemCaseSensitive(h, "arrays") : NULL;
    int ok = cJSON_IsArray(list) && cJSON_GetArraySize(list) <= 4096;
    long long total = 0;
    size_t bytes = hsize + 1;
    const cJSON *it;
    cJSON_ArrayForEach(it, list)
    {
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(it, "shape");
        if (!ok || !cJSON_IsArray(shape) || cJSON_GetArraySize(shape) > 4) {
            ok = 0;
            break;
        }
        long long count = 1;
        const cJSON *s;
        cJSON_ArrayForEach(s, shape)
        {
            if (!cJSON_IsNumber(s) || s->valuedouble < 0 || s->valuedouble > FUZZ_SYNTH_MAX ||
                s->valuedouble != floor(s->valuedouble))
                ok = 0;
            else
                count *= (long long)s->valuedouble;
            if (count > FUZZ_SYNTH_MAX)
                ok = 0;
        }
        total += count;
        bytes += 256 + 4 * (size_t)(count > 0 ? count : 0);
        if (total > FUZZ_SYNTH_MAX)
            ok = 0;
    }
    if (!ok) {
        cJSON_Delete(h);
        return 0;
    }
    uint8_t *buf = malloc(bytes);
    memcpy(buf, data, hsize);
    buf[hsize] = '\n';
    size_t n = hsize + 1, serial = 0;
    cJSON_ArrayForEach(it, list)
    {
        long long shape[4];
        int ndim = 0;
        const cJSON *s;
        cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(it, "shape"))
            shape[ndim++] = (long long)s->valuedouble;
        n += npy_record(buf + n, ndim, shape, &serial);
    }
    cJSON_Delete(h);
    *out = buf;
    *out_size = n;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_model_bytes(data, size, "fuzz-input.fnqm");
    uint8_t *synth;
    size_t synth_size;
    if (synthesise(data, size, &synth, &synth_size)) {
        fuzz_model_bytes(synth, synth_size, "fuzz-synth.fnqm");
        free(synth);
    }
    return 0;
}
