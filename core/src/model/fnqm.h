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
#include "model/model.h"
#include "model/npy.h"

#define FNQM_FORMAT "fusednequip-model"
/* version 2 adds radial_basis.envelope (the XPLOR envelope of SevenNet), version 3
 * spherical_harmonics.normalize and the modalities; older files are read as before */
#define FNQM_VERSION 3

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

/* The record that `ref` (a header value naming an array) names, or NULL: its declared shape
 * for a reader that accepts several (one set or one per species, per modality, ...). */
const struct fnqm_array *fnq__fnqm_array_find(const struct fnqm_arrays *a, const cJSON *ref);

/* The array that header field `field` (its JSON value `ref`, a name) refers to, checked to
 * have `ndim` dims equal to `shape`, as newly allocated doubles in *out. */
enum fnq_status fnq__fnqm_array_get(const struct fnqm_arrays *a, const char *field,
                                    const cJSON *ref, int32_t ndim, const int64_t *shape,
                                    double **out);

/* Header readers (fnqm_header.c); messages name `path`, the field's place in the header. */
const cJSON *fnq__fnqm_field(const cJSON *obj, const char *key); /* NULL when absent or null */
enum fnq_status fnq__fnqm_need(const cJSON *v, const char *file, const char *path);
enum fnq_status fnq__fnqm_number(const cJSON *obj, const char *key, const char *file,
                                 const char *path, double *out);
enum fnq_status fnq__fnqm_int(const cJSON *v, const char *file, const char *path, int64_t lo,
                              int64_t hi, int32_t *out);
/* the array [n_species] that field `key` of obj names */
enum fnq_status fnq__fnqm_per_species(const struct fnqm_arrays *a, const cJSON *obj,
                                      const char *key, const char *path, int32_t n_species,
                                      double **out);
/* m->species_z, species_symbol, n_species from 'species' */
enum fnq_status fnq__fnqm_species(const cJSON *h, const char *file, struct fnq_model *m);
/* m->pair from 'pair_potential' (m->cutoff and n_species set) */
enum fnq_status fnq__fnqm_pair_potential(const cJSON *h, const char *file, struct fnq_model *m);

/* Build the model from a .fnqm header and its arrays. */
enum fnq_status fnq__fnqm_build(const cJSON *header, const struct fnqm_arrays *a,
                                struct fnq_model *m);
