/*
 * backend_cuda.cu: the CUDA backend's function table (core/src/backend/backend.h), one per dtype, over
 * the context state of cuda_state.cuh. What each entry does lives by concern in cuda_state.cu
 * (creation, buffers), cuda_graph.cu (the graph, input checks), cuda_run.cu (the model) and
 * cuda_exchange.cu (ghost rows).
 */
#include "allegro/allegro_engine.cuh"
#include "runtime/backend_cuda.h"
#include "runtime/cuda_state.cuh"

using namespace fnqcu;

namespace {

/* The entries for one precision: each casts the opaque state and calls the concern's code. */
template <typename REAL> struct CudaTable {
    static State<REAL> *state(void *p) { return static_cast<State<REAL> *>(p); }

    static enum fnq_status init(const struct fnq_model *m, enum fnq_dtype dtype,
                                int32_t device_id, const struct fnq_options *opt, void **out)
    {
        State<REAL> *s = nullptr;
        FNQ_CHECK(state_init<REAL>(m, device_id, opt, &s));
        *out = s;
        return FNQ_STATUS_OK;
    }
    static void release(void *p) { state_free(state(p)); }
    static enum fnq_status compute(void *p, const struct fnq_graph *g,
                                   const struct fnq_exchange *x, struct fnq_results *out)
    {
        return compute_graph(state(p), g, x, out);
    }
    static enum fnq_status periodic(void *p, int64_t n, const double *pos, const int32_t *species,
                                    const double *cell, const int32_t *pbc,
                                    const struct fnq_limits *lim, struct fnq_results *out,
                                    int64_t *n_edges)
    {
        return compute_periodic(state(p), n, pos, species, cell, pbc, lim, out, n_edges);
    }
    static enum fnq_status edges(void *p, const struct fnq_edge_input *in,
                                 const struct fnq_limits *lim, const struct fnq_exchange *x,
                                 struct fnq_results *out, int64_t *n_edges)
    {
        return compute_edges(state(p), in, lim, x, out, n_edges);
    }
    static void launch_counts(void *p, int32_t *model, int32_t *nl)
    {
        *model = state(p)->launches_model;
        *nl = state(p)->launches_nl;
    }
    static enum fnq_status copy_to_host(void *p, void *dst, const void *src, size_t bytes,
                                        const char *what)
    {
        return to_host(state(p), dst, src, bytes, what);
    }
    static enum fnq_status inputs(void *p, int64_t n, const double *pos, const int32_t *species,
                                  int32_t n_species, int *ok)
    {
        return check_inputs(state(p), n, pos, species, n_species, ok);
    }
    static constexpr struct fnq_backend_i table = {
        "cuda", init, release, compute, periodic, edges, launch_counts, copy_to_host, inputs};
};

} // namespace

static int32_t cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

/* registered by core/src/backend/backend_registry.c in builds with the CUDA backend */
extern "C" const struct fnq_backend_reg *fnq__backend_cuda_reg(void)
{
    static const struct fnq_backend_reg reg = {FNQ_DEVICE_CUDA, &CudaTable<float>::table,
                                               &CudaTable<double>::table, cuda_device_count,
                                               &allegro_table_f32, &allegro_table_f64};
    return &reg;
}
