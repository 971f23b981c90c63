/*
 * modality.h: multi-modal models (modality.c): reading a .fnqm file's modalities and checking
 * that one was chosen before a context is made.
 */
#pragma once

#include <stddef.h>

#include <cjson/cJSON.h>

#include "fnq.h"
#include "model/fnqm.h"
#include "model/model.h"

/* 'modalities', energy_scale / energy_shift ([n_species] or [n_modalities][n_species]) and
 * the layers' linear_1_bias / linear_2_bias, after the layers are read */
enum fnq_status fnq__fnqm_modalities(const cJSON *header, const struct fnqm_arrays *a,
                                     struct fnq_model *m);
/* FNQ_STATUS_INVALID_ARG naming the modalities when a multi-modal model has no choice yet */
enum fnq_status fnq__model_check_modality(const struct fnq_model *m);
/* "R2SCAN, PBE" */
void fnq__modality_list(const struct fnq_model *m, char *buf, size_t cap);
