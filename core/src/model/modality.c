/*
 * modality.c: multi-modal models (SevenNet's multi-fidelity 7net-mf-0: one network trained on
 * several data sets at once, told which one by a one-hot input). With the one-hot fixed, its
 * weights are biases on the scalar outputs of the linears it enters, and the energy scale and
 * shift may be the modality's own. A .fnqm file holds every modality's values
 * (docs/model-format.md); fnq_model_set_modality picks one before contexts are made, and a
 * context refuses a multi-modal model without a choice.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/status.h"
#include "model/fnqm.h"
#include "model/modality.h"

#define MAX_MODALITIES 64

/* energy_scale or energy_shift: [n_species], or [n_modalities][n_species] in a multi-modal
 * model (then *modal holds it and *shared gets the chosen row later) */
static enum fnq_status read_energy(const cJSON *h, const struct fnqm_arrays *a, const char *key,
                                   struct fnq_model *m, double **shared, double **modal)
{
    const cJSON *ref = fnq__fnqm_field(h, key);
    FNQ_CHECK(fnq__fnqm_need(ref, a->file, key));
    const struct fnqm_array *e = fnq__fnqm_array_find(a, ref);
    if (m->n_modalities > 0 && e && e->rec.ndim == 2) {
        int64_t shape[2] = {m->n_modalities, m->n_species};
        FNQ_CHECK(fnq__fnqm_array_get(a, key, ref, 2, shape, modal));
        *shared = calloc((size_t)m->n_species, sizeof(double));
        return *shared ? FNQ_STATUS_OK : fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    return fnq__fnqm_per_species(a, h, key, key, m->n_species, shared);
}

/* A layer's optional `<linear>_bias` [n_modalities][out dim]: nonzero only on scalar (0e)
 * outputs, where a constant keeps the model equivariant */
static enum fnq_status read_bias(const cJSON *layer, const struct fnqm_arrays *a, int32_t i,
                                 const char *key, const struct fnq_irreps *out,
                                 struct fnq_model *m, struct fnq_linear *lin)
{
    const cJSON *ref = fnq__fnqm_field(layer, key);
    if (!ref)
        return FNQ_STATUS_OK;
    char path[64];
    snprintf(path, sizeof(path), "layers[%d].%s", i, key);
    if (m->n_modalities == 0)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field '%s' is only allowed in a model with 'modalities'",
                         a->file, path);
    int64_t shape[2] = {m->n_modalities, out->dim};
    FNQ_CHECK(fnq__fnqm_array_get(a, path, ref, 2, shape, &lin->bias_modal));
    for (int32_t b = 0; b < out->n_blocks; b++) {
        const struct fnq_irrep_block *k = &out->block[b];
        if (k->l == 0 && k->parity > 0)
            continue;
        for (int32_t q = 0; q < m->n_modalities; q++)
            for (int64_t v = 0; v < (int64_t)k->mul * (2 * k->l + 1); v++)
                if (lin->bias_modal[q * out->dim + k->offset + v] != 0.0)
                    return fnq__fail(FNQ_STATUS_FORMAT,
                                     "%s: array '%s' has a nonzero bias on output block %d "
                                     "(l = %d%c), which would break equivariance: biases "
                                     "act on 0e outputs only",
                                     a->file, path, b, k->l, k->parity > 0 ? 'e' : 'o');
    }
    return FNQ_STATUS_OK;
}

enum fnq_status fnq__fnqm_modalities(const cJSON *h, const struct fnqm_arrays *a,
                                     struct fnq_model *m)
{
    const char *file = a->file;
    const cJSON *list = fnq__fnqm_field(h, "modalities");
    if (list) {
        if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) < 1 ||
            cJSON_GetArraySize(list) > MAX_MODALITIES)
            return fnq__fail(FNQ_STATUS_FORMAT,
                             "%s: header field 'modalities' must be a list of 1 to %d names",
                             file, MAX_MODALITIES);
        m->n_modalities = cJSON_GetArraySize(list);
        m->modality = -1;
        m->modality_name = calloc((size_t)m->n_modalities, sizeof(*m->modality_name));
        if (!m->modality_name)
            return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
        for (int32_t q = 0; q < m->n_modalities; q++) {
            const cJSON *it = cJSON_GetArrayItem(list, q);
            if (!cJSON_IsString(it) || !it->valuestring[0] ||
                strlen(it->valuestring) >= sizeof(m->modality_name[q]) ||
                strpbrk(it->valuestring, " \t\n,"))
                return fnq__fail(FNQ_STATUS_FORMAT,
                                 "%s: header field 'modalities[%d]' must be a name of 1 to 31 "
                                 "characters without spaces or commas",
                                 file, q);
            for (int32_t r = 0; r < q; r++)
                if (!strcmp(m->modality_name[r], it->valuestring))
                    return fnq__fail(FNQ_STATUS_FORMAT,
                                     "%s: header field 'modalities' names '%s' twice", file,
                                     it->valuestring);
            strcpy(m->modality_name[q], it->valuestring);
        }
    }
    FNQ_CHECK(read_energy(h, a, "energy_scale", m, &m->energy_scale, &m->energy_scale_modal));
    FNQ_CHECK(read_energy(h, a, "energy_shift", m, &m->energy_shift, &m->energy_shift_modal));
    const cJSON *layers = fnq__fnqm_field(h, "layers");
    for (int32_t i = 0; i < m->n_layers; i++) {
        const cJSON *j = cJSON_GetArrayItem(layers, i);
        struct fnq_layer *L = &m->layers[i];
        FNQ_CHECK(read_bias(j, a, i, "linear_1_bias", &L->in, m, &L->linear_1));
        FNQ_CHECK(read_bias(j, a, i, "linear_2_bias", &L->conv, m, &L->linear_2));
    }
    return FNQ_STATUS_OK;
}

enum fnq_status fnq__model_check_modality(const struct fnq_model *m)
{
    if (m->n_modalities == 0 || m->modality >= 0)
        return FNQ_STATUS_OK;
    char names[512];
    fnq__modality_list(m, names, sizeof(names));
    return fnq__fail(FNQ_STATUS_INVALID_ARG,
                     "model %s is multi-modal (modalities: %s): choose one (CLI --modal NAME, "
                     "ASE modal=NAME, LAMMPS pair_style fusednequip modal NAME, C "
                     "fnq_model_set_modality)",
                     m->source, names);
}

void fnq__modality_list(const struct fnq_model *m, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (int32_t q = 0; q < m->n_modalities && n < cap; q++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", q ? ", " : "", m->modality_name[q]);
}

int32_t fnq_model_num_modalities(const struct fnq_model *m) { return m ? m->n_modalities : 0; }

const char *fnq_model_modality_name(const struct fnq_model *m, int32_t index)
{
    return (m && index >= 0 && index < m->n_modalities) ? m->modality_name[index] : NULL;
}

const char *fnq_model_modality(const struct fnq_model *m)
{
    return (m && m->n_modalities > 0 && m->modality >= 0) ? m->modality_name[m->modality] : NULL;
}

static void choose_row(double *shared, const double *modal, int32_t q, int32_t n)
{
    if (modal)
        memcpy(shared, modal + (size_t)q * (size_t)n, sizeof(double) * (size_t)n);
}

enum fnq_status fnq_model_set_modality(struct fnq_model *m, const char *name)
{
    fnq__clear_error();
    if (!m || !name)
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "fnq_model_set_modality: NULL argument");
    char names[512];
    fnq__modality_list(m, names, sizeof(names));
    if (m->n_modalities == 0)
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "model %s has no modalities; modality '%s' cannot be chosen",
                         m->source, name);
    int32_t q = 0;
    while (q < m->n_modalities && strcmp(m->modality_name[q], name) != 0)
        q++;
    if (q == m->n_modalities)
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "model %s has no modality '%s' (modalities: %s)",
                         m->source, name, names);
    /* contexts copy the model's values when made: a second, different choice would leave them
     * on the first one */
    if (m->modality >= 0 && m->modality != q)
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "model %s: modality '%s' was already chosen; load the model again for "
                         "'%s'",
                         m->source, m->modality_name[m->modality], name);
    m->modality = q;
    choose_row(m->energy_scale, m->energy_scale_modal, q, m->n_species);
    choose_row(m->energy_shift, m->energy_shift_modal, q, m->n_species);
    for (int32_t i = 0; i < m->n_layers; i++) {
        struct fnq_layer *L = &m->layers[i];
        if (L->linear_1.bias_modal)
            L->linear_1.bias = L->linear_1.bias_modal + (size_t)q * (size_t)L->in.dim;
        if (L->linear_2.bias_modal)
            L->linear_2.bias = L->linear_2.bias_modal + (size_t)q * (size_t)L->conv.dim;
    }
    return FNQ_STATUS_OK;
}
