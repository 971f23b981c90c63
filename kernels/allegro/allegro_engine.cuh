/*
 * allegro_engine.cuh: the CUDA backend's engine for Allegro models (allegro_engine.cu), a
 * function table of its own that the CUDA backend's registry entry names for Allegro models
 * (core/src/backend/backend.h, fnq__backend_reg_table). The context builds the graph on the host; the
 * engine evaluates the model on the GPU, chunk by chunk of whole centre atoms, and returns
 * dE/d(edge vector), which the host turns into forces, virial and per-atom virials with the
 * pair term (ZBL) added, as the CPU engine does.
 */
#pragma once

#include "runtime/common.cuh"

namespace fnqcu {

extern const struct fnq_backend_i allegro_table_f32, allegro_table_f64;

} // namespace fnqcu
