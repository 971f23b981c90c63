/*
 * fnqm_header.c: small readers of a .fnqm header's fields, shared by the NequIP builder
 * (fnqm_load.c) and the Allegro builder (allegro_load.c); every message names the field.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/fnqm.h"
#include "api/status.h"

const cJSON *fnq__fnqm_field(const cJSON *obj, const char *key) /* NULL when absent or null */
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return (v && !cJSON_IsNull(v)) ? v : NULL;
}

enum fnq_status fnq__fnqm_need(const cJSON *v, const char *file, const char *path)
{
    return v ? FNQ_STATUS_OK
             : fnq__fail(FNQ_STATUS_FORMAT, "%s: header field '%s' is missing", file, path);
}

enum fnq_status fnq__fnqm_number(const cJSON *obj, const char *key, const char *file,
                                  const char *path, double *out)
{
    const cJSON *v = fnq__fnqm_field(obj, key);
    FNQ_CHECK(fnq__fnqm_need(v, file, path));
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return fnq__fail(FNQ_STATUS_FORMAT, "%s: header field '%s' is not a number", file, path);
    *out = v->valuedouble;
    return FNQ_STATUS_OK;
}

enum fnq_status fnq__fnqm_int(const cJSON *v, const char *file, const char *path, int64_t lo,
                               int64_t hi, int32_t *out)
{
    FNQ_CHECK(fnq__fnqm_need(v, file, path));
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field '%s' must be an integer in %lld..%lld", file, path,
                         (long long)lo, (long long)hi);
    *out = (int32_t)v->valuedouble;
    return FNQ_STATUS_OK;
}

enum fnq_status fnq__fnqm_per_species(const struct fnqm_arrays *a, const cJSON *obj,
                                        const char *key, const char *path, int32_t n_species,
                                        double **out)
{
    const cJSON *ref = fnq__fnqm_field(obj, key);
    FNQ_CHECK(fnq__fnqm_need(ref, a->file, path));
    int64_t shape[1] = {n_species};
    return fnq__fnqm_array_get(a, path, ref, 1, shape, out);
}

enum fnq_status fnq__fnqm_species(const cJSON *h, const char *file, struct fnq_model *m)
{
    const cJSON *list = fnq__fnqm_field(h, "species");
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) < 1 || cJSON_GetArraySize(list) > 118)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field 'species' must be a list of element symbols", file);
    int32_t n = cJSON_GetArraySize(list);
    m->species_z = calloc((size_t)n, sizeof(int32_t));
    m->species_symbol = calloc((size_t)n, sizeof(*m->species_symbol));
    if (!m->species_z || !m->species_symbol)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    const cJSON *it;
    int32_t k = 0;
    cJSON_ArrayForEach(it, list)
    {
        int32_t z = cJSON_IsString(it) ? fnq__element_z(it->valuestring) : 0;
        if (z == 0)
            return fnq__fail(FNQ_STATUS_FORMAT,
                             "%s: header field 'species[%d]' is not an element symbol", file, k);
        for (int32_t q = 0; q < k; q++)
            if (m->species_z[q] == z)
                return fnq__fail(FNQ_STATUS_FORMAT,
                                 "%s: header field 'species' lists %s twice", file,
                                 it->valuestring);
        m->species_z[k] = z;
        snprintf(m->species_symbol[k], sizeof(m->species_symbol[k]), "%s",
                 fnq__element_symbol(z));
        k++;
    }
    m->n_species = n;
    return FNQ_STATUS_OK;
}

enum fnq_status fnq__fnqm_pair_potential(const cJSON *h, const char *file, struct fnq_model *m)
{
    const cJSON *pp = fnq__fnqm_field(h, "pair_potential");
    m->pair.kind = FNQ_PAIR_NONE;
    if (!pp)
        return FNQ_STATUS_OK;
    const cJSON *kind = fnq__fnqm_field(pp, "kind");
    if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "zbl") != 0)
        return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                         "%s: header field 'pair_potential.kind' must be \"zbl\" (the only pair "
                         "term this build knows)",
                         file);
    struct fnq_pair_potential *p = &m->pair;
    FNQ_CHECK(fnq__fnqm_number(pp, "coulomb_constant", file, "pair_potential.coulomb_constant",
                         &p->coulomb));
    FNQ_CHECK(fnq__fnqm_number(pp, "cutoff", file, "pair_potential.cutoff", &p->cutoff));
    FNQ_CHECK(fnq__fnqm_number(pp, "polynomial_p", file, "pair_potential.polynomial_p", &p->poly_p));
    if (!(p->coulomb > 0.0) || !(p->cutoff > 0.0) || p->cutoff > m->cutoff || !(p->poly_p >= 1.0))
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field 'pair_potential' needs coulomb_constant > 0, 0 < cutoff "
                         "<= the model's cutoff (%g) and polynomial_p >= 1",
                         file, m->cutoff);
    const cJSON *zs = fnq__fnqm_field(pp, "atomic_numbers");
    if (!cJSON_IsArray(zs) || cJSON_GetArraySize(zs) != m->n_species)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field 'pair_potential.atomic_numbers' must list one atomic "
                         "number per species (%d)",
                         file, m->n_species);
    p->charge = calloc((size_t)m->n_species, sizeof(double));
    if (!p->charge)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int32_t t = 0; t < m->n_species; t++) {
        char path[64];
        int32_t z = 0;
        snprintf(path, sizeof(path), "pair_potential.atomic_numbers[%d]", t);
        FNQ_CHECK(fnq__fnqm_int(cJSON_GetArrayItem(zs, t), file, path, 1, 118, &z));
        p->charge[t] = z;
    }
    p->kind = FNQ_PAIR_ZBL;
    return FNQ_STATUS_OK;
}

