/*
 * model_upload.cuh: host model -> device tables (model_upload.cu).
 */
#pragma once

#include "common.cuh"
#include "model_dev.cuh"

namespace fnqcu {

template <typename REAL> enum fnq_status model_upload(const struct fnq_model *m, DeviceModel<REAL> *dm);
template <typename REAL> void model_release(DeviceModel<REAL> *dm);

} // namespace fnqcu
