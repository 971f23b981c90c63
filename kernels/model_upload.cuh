/*
 * model_upload.cuh: host model -> device tables (model_upload.cu).
 */
#pragma once

#include "common.cuh"
#include "model_dev.cuh"

namespace fnqcu {

/* table_intervals > 0: the radial weights as tables of that many intervals (radial_table.h)
 * instead of the MLP */
template <typename REAL>
enum fnq_status model_upload(const struct fnq_model *m, int table_intervals, DeviceModel<REAL> *dm);
template <typename REAL> void model_release(DeviceModel<REAL> *dm);

} // namespace fnqcu
