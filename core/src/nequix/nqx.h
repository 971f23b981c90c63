/*
 * nqx.h: the Nequix .nqx reader (nqx_load.c), called by model_load.c for a header that is a
 * Nequix training config.
 */
#pragma once

#include <cjson/cJSON.h>

#include "fnq.h"
#include "model/loader.h"
#include "model/model.h"

/* Build the model from the config line and the array leaves that follow it. */
enum fnq_status fnq__nqx_build(const cJSON *config, struct fnq_leaf_reader *leaves,
                               struct fnq_model *m);
