/*
 * loader.h: helpers the model-file readers share (loader.c): required JSON header fields and
 * a reader of the .npy array records that follow the header line. model_load.c reads the file,
 * splits the header from the records and hands both to the reader for the header's format
 * (nqx.h, fnqm.h); the readers depend on these helpers, never on each other.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "fnq.h"

/* The array records that follow the header line, read one by one with a name for messages. */
struct fnq_leaf_reader {
    const char *file;     /* file name for messages */
    const uint8_t *buf;
    size_t size;
    size_t offset;        /* next record */
    int32_t index;        /* records read so far */
    int64_t n_values;     /* sum of their element counts */
};

/* Read the next record, check it has `ndim` dims equal to `shape` and copy it into `out`
 * (doubles). `what` names it in error messages. */
enum fnq_status fnq__leaf_read(struct fnq_leaf_reader *r, const char *what, int32_t ndim,
                               const int64_t *shape, double *out);

/* Before allocating room for `count` values that the next records are to fill: the file must
 * still hold that many values (4 bytes each at least, float32), so that a size the header
 * declares but the file does not back is refused before anything is allocated. */
enum fnq_status fnq__leaf_room(const struct fnq_leaf_reader *r, const char *what, int64_t count);

/* Required header fields, with messages naming the field. */
enum fnq_status fnq__json_number(const cJSON *obj, const char *file, const char *key, double *out);
enum fnq_status fnq__json_int(const cJSON *obj, const char *file, const char *key, int64_t *out);
enum fnq_status fnq__json_bool(const cJSON *obj, const char *file, const char *key, int *out);
enum fnq_status fnq__json_string(const cJSON *obj, const char *file, const char *key,
                                 const char **out);
