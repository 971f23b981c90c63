/*
 * fnqm.h: the project's own model format, .fnqm (docs/model-format.md): one JSON header line
 * that describes the network explicitly, then named .npy arrays. fnqm_arrays.c reads and
 * checks the arrays; fnqm_load.c builds the in-memory model from the header.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "fnq.h"
#include "model.h"
#include "npy.h"

#define FNQM_FORMAT "fusednequip-model"
#define FNQM_VERSION 1

struct fnqm_array {
    char name[96];
    struct fnq_npy rec;
};

struct fnqm_arrays {
    const char *file;
    int32_t n;
    struct fnqm_array *entry;
    int64_t n_values;
};

/* Parse every record after the header (starting at `offset`) and check it against the
 * header's "arrays" list (names, shapes, nothing missing, nothing left over). */
enum fnq_status fnq__fnqm_arrays_read(const cJSON *header, const char *file, const uint8_t *buf,
                                      size_t size, size_t offset, struct fnqm_arrays *a);
void fnq__fnqm_arrays_free(struct fnqm_arrays *a);

/* The array that header field `field` (its JSON value `ref`, a name) refers to, checked to
 * have `ndim` dims equal to `shape`, as newly allocated doubles in *out. */
enum fnq_status fnq__fnqm_array_get(const struct fnqm_arrays *a, const char *field,
                                    const cJSON *ref, int32_t ndim, const int64_t *shape,
                                    double **out);

/* Build the model from a .fnqm header and its arrays. */
enum fnq_status fnq__fnqm_build(const cJSON *header, const struct fnqm_arrays *a,
                                struct fnq_model *m);
