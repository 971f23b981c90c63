/*
 * model_upload.cuh: host model -> device tables (model_upload.cu).
 */
#pragma once

#include "runtime/common.cuh"
#include "nequip/model_dev.cuh"

namespace fnqcu {

/* How the model goes onto the GPU (the context's switches, options.h) */
struct UploadChoices {
    int table_intervals; /* > 0: the radial weights as tables of that many intervals
                          * (radial_table.h) instead of the MLP */
    bool quads;          /* node linears by quads where they have a plan (quad_plan.h) */
    bool groups;         /* tensor-product paths run in path groups (tp_group.cuh) */
    bool verbose;        /* print each radial table's interpolation error */
    bool sh_generic;     /* harmonics by the runtime recursion (Geometry::sh_generic) */
};

template <typename REAL>
enum fnq_status model_upload(const struct fnq_model *m, const UploadChoices &c,
                             DeviceModel<REAL> *dm);
template <typename REAL> void model_release(DeviceModel<REAL> *dm);

} // namespace fnqcu
