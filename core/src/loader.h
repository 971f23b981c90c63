/*
 * loader.h: model-file readers. model_load.c reads the file, splits the JSON header line from
 * the array records and hands both to the reader for the header's format.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "fnq.h"
#include "model.h"
#include "npy.h"

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

/* Required header fields, with messages naming the field. */
enum fnq_status fnq__json_number(const cJSON *obj, const char *file, const char *key, double *out);
enum fnq_status fnq__json_int(const cJSON *obj, const char *file, const char *key, int64_t *out);
enum fnq_status fnq__json_bool(const cJSON *obj, const char *file, const char *key, int *out);
enum fnq_status fnq__json_string(const cJSON *obj, const char *file, const char *key,
                                 const char **out);

/* Order of a Linear's instructions as equinox serialises its weight dict (sorted keys). */
void fnq__linear_key_order(const struct fnq_linear *lin, int32_t *order);

enum fnq_status fnq__nqx_build(const cJSON *config, struct fnq_leaf_reader *leaves,
                               struct fnq_model *m);
