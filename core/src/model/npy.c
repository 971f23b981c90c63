/*
 * npy.c: parse .npy headers ("\x93NUMPY", version, header length, Python dict literal) and
 * convert the data. The dict is read with a few targeted scans; anything unexpected is an error.
 */
#include "model/npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPY_MAX_HEADER 65535 /* a version 1 header's limit; ours are ~120 bytes */

static const char *find_key(const char *hdr, size_t len, const char *key)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl <= len; i++)
        if (memcmp(hdr + i, key, kl) == 0)
            return hdr + i + kl;
    return NULL;
}

int fnq__npy_parse(const uint8_t *buf, size_t size, size_t offset, struct fnq_npy *rec,
                   char *why, size_t why_cap)
{
    memset(rec, 0, sizeof(*rec));
    if (offset + 10 > size) {
        snprintf(why, why_cap, "file ends at byte %zu inside an array header (truncated file)",
                 size);
        return -1;
    }
    const uint8_t *p = buf + offset;
    if (memcmp(p, "\x93NUMPY", 6) != 0) {
        snprintf(why, why_cap, "no .npy array record at byte %zu (corrupt file)", offset);
        return -1;
    }
    size_t hlen, hstart;
    if (p[6] == 1) {
        hlen = (size_t)p[8] | ((size_t)p[9] << 8);
        hstart = offset + 10;
    } else if (p[6] == 2 || p[6] == 3) {
        if (offset + 12 > size) {
            snprintf(why, why_cap, "file ends inside an array header (truncated file)");
            return -1;
        }
        hlen = (size_t)p[8] | ((size_t)p[9] << 8) | ((size_t)p[10] << 16) | ((size_t)p[11] << 24);
        hstart = offset + 12;
    } else {
        snprintf(why, why_cap, "unsupported .npy version %d at byte %zu", p[6], offset);
        return -1;
    }
    if (hstart + hlen > size) {
        snprintf(why, why_cap, "file ends inside an array header at byte %zu (truncated file)",
                 offset);
        return -1;
    }
    /* the dict, as a string of its own: nothing below reads past the header's end */
    if (hlen > NPY_MAX_HEADER) {
        snprintf(why, why_cap, "array header at byte %zu declares %zu bytes; at most %d are "
                               "supported (corrupt file)",
                 offset, hlen, NPY_MAX_HEADER);
        return -1;
    }
    char hdr[NPY_MAX_HEADER + 1];
    memcpy(hdr, buf + hstart, hlen);
    hdr[hlen] = 0;

    const char *d = find_key(hdr, hlen, "'descr':");
    const char *f = find_key(hdr, hlen, "'fortran_order':");
    const char *s = find_key(hdr, hlen, "'shape':");
    if (!d || !f || !s) {
        snprintf(why, why_cap, "array header at byte %zu lacks descr/fortran_order/shape", offset);
        return -1;
    }
    while (*d == ' ')
        d++;
    if (*d != '\'' || sscanf(d + 1, "%7[^']", rec->descr) != 1) {
        snprintf(why, why_cap, "bad descr in array header at byte %zu", offset);
        return -1;
    }
    while (*f == ' ')
        f++;
    if (strncmp(f, "False", 5) != 0) {
        snprintf(why, why_cap, "array at byte %zu is in Fortran order (unsupported)", offset);
        return -1;
    }
    while (*s == ' ')
        s++;
    if (*s != '(') {
        snprintf(why, why_cap, "bad shape in array header at byte %zu", offset);
        return -1;
    }
    s++;
    rec->count = 1;
    while (*s && *s != ')') {
        while (*s == ' ' || *s == ',')
            s++;
        if (*s == ')')
            break;
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v < 0 || rec->ndim >= FNQ_NPY_MAX_DIMS) {
            snprintf(why, why_cap, "bad shape in array header at byte %zu", offset);
            return -1;
        }
        rec->shape[rec->ndim++] = v;
        /* more elements than the file has bytes: corrupt; checked before multiplying, so that
         * neither the count nor the size computation below can overflow */
        if (v > 0 && rec->count > (long long)size / v) {
            snprintf(why, why_cap, "array at byte %zu declares more elements than the file has "
                                   "bytes (corrupt file)", offset);
            return -1;
        }
        rec->count *= v;
        s = end;
    }
    if (*s != ')') {
        snprintf(why, why_cap, "bad shape in array header at byte %zu", offset);
        return -1;
    }
    if (strcmp(rec->descr, "<f4") == 0 || strcmp(rec->descr, "<i4") == 0)
        rec->itemsize = 4;
    else if (strcmp(rec->descr, "<f8") == 0 || strcmp(rec->descr, "<i8") == 0)
        rec->itemsize = 8;
    else if (strcmp(rec->descr, "|b1") == 0 || strcmp(rec->descr, "|u1") == 0)
        rec->itemsize = 1;
    else {
        snprintf(why, why_cap, "unsupported array type '%s' at byte %zu", rec->descr, offset);
        return -1;
    }
    rec->data_offset = hstart + hlen;
    size_t nbytes = (size_t)rec->count * rec->itemsize;
    if (rec->data_offset + nbytes > size) {
        snprintf(why, why_cap,
                 "array at byte %zu needs %zu data bytes but the file ends after %zu (truncated "
                 "file)",
                 offset, nbytes, size - rec->data_offset);
        return -1;
    }
    rec->data = buf + rec->data_offset;
    rec->end = rec->data_offset + nbytes;
    return 0;
}

int fnq__npy_to_double(const struct fnq_npy *rec, double *out)
{
    if (strcmp(rec->descr, "<f4") == 0) {
        for (int64_t i = 0; i < rec->count; i++) {
            float v;
            memcpy(&v, rec->data + 4 * i, 4);
            out[i] = (double)v;
        }
        return 0;
    }
    if (strcmp(rec->descr, "<f8") == 0) {
        memcpy(out, rec->data, (size_t)rec->count * 8);
        return 0;
    }
    return -1;
}
