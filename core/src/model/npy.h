/*
 * npy.h: a reader for NumPy .npy v1/v2 records laid end to end in a memory buffer (the leaf
 * stream written by equinox.tree_serialise_leaves). Only what model files need: little-endian
 * float32/float64 arrays in C order.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define FNQ_NPY_MAX_DIMS 4

struct fnq_npy {
    char descr[8]; /* "<f4", "<f8", ... */
    int32_t ndim;
    int64_t shape[FNQ_NPY_MAX_DIMS];
    int64_t count;       /* number of elements */
    size_t itemsize;
    const uint8_t *data; /* points into the buffer */
    size_t data_offset;  /* from the start of the buffer */
    size_t end;          /* offset just past the record */
};

/* Parse the record starting at `offset`. Returns 0, or -1 with a reason in `why`. */
int fnq__npy_parse(const uint8_t *buf, size_t size, size_t offset, struct fnq_npy *rec,
                   char *why, size_t why_cap);
/* Copy the elements of a float32 or float64 record into doubles. */
int fnq__npy_to_double(const struct fnq_npy *rec, double *out);
