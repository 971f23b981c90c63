/*
 * cuda_exchange.cu: one layer's ghost rows between kernels, through the caller's exchange:
 *   device_comm (fnq_ctx_set_device_comm; mpi/'s fnq_halo): the rows stay on the GPU, the
 *     exchange is enqueued on the context's stream, recordable in the CUDA graph when the
 *     exchange says so (NCCL);
 *   comm (fnq_ctx_set_comm; the LAMMPS pair style's "host" route): all rows to the host, the
 *     callbacks, the changed rows back.
 */
#include <stdio.h>
#include <vector>

#include "runtime/cuda_state.cuh"

namespace fnqcu {

bool exchange_recordable(const struct fnq_exchange *x, uint64_t *version)
{
    *version = 0;
    if (x->comm)
        return false;
    if (x->device_comm) {
        if (!x->device_comm->version)
            return false;
        *version = x->device_comm->version(x->device_comm->user);
        return *version != 0;
    }
    return true;
}

template <typename REAL>
static enum fnq_status exchange_on_device(State<REAL> *s, const struct fnq_device_comm *c,
                                          REAL *rows, int width, bool forward)
{
    const enum fnq_dtype dt = sizeof(REAL) == 4 ? FNQ_DTYPE_F32 : FNQ_DTYPE_F64;
    const int rc = forward ? c->forward(c->user, rows, width, dt, s->stream)
                           : c->reverse(c->user, rows, width, dt, s->stream);
    if (rc != 0) { /* the exchange left its reason in fnq_last_error() */
        char why[512];
        snprintf(why, sizeof(why), "%s", fnq_last_error());
        return fnq__fail(FNQ_STATUS_COMM, "%s ghost exchange of %d values per atom on the GPU "
                                          "failed: %s",
                         forward ? "forward" : "reverse", width, why[0] ? why : "no reason given");
    }
    return FNQ_STATUS_OK;
}

template <typename REAL>
static enum fnq_status exchange_on_host(State<REAL> *s, const struct fnq_exchange *x, REAL *rows,
                                        int width, bool forward)
{
    const int64_t nl = x->n_local, na = x->n_all;
    const enum fnq_dtype dt = sizeof(REAL) == 4 ? FNQ_DTYPE_F32 : FNQ_DTYPE_F64;
    s->host_rows.resize((size_t)na * width);
    FNQ_CUDA_CHECK(cudaMemcpyAsync(s->host_rows.data(), rows, sizeof(REAL) * na * width,
                                   cudaMemcpyDeviceToHost, s->stream));
    FNQ_CUDA_CHECK(cudaStreamSynchronize(s->stream));
    if (forward)
        FNQ_CHECK(fnq__exchange_forward(x, s->host_rows.data(), width, dt));
    else
        FNQ_CHECK(fnq__exchange_reverse(x, s->host_rows.data(), width, dt));
    /* forward changed the ghost rows, reverse the owned ones */
    const int64_t first = forward ? nl : 0, count = forward ? na - nl : nl;
    FNQ_CUDA_CHECK(cudaMemcpyAsync(rows + first * width, s->host_rows.data() + (size_t)first * width,
                                   sizeof(REAL) * count * width, cudaMemcpyHostToDevice,
                                   s->stream));
    return FNQ_STATUS_OK;
}

template <typename REAL>
enum fnq_status exchange_rows(State<REAL> *s, const struct fnq_exchange *x, REAL *rows, int width,
                              bool forward)
{
    if (x->device_comm)
        return exchange_on_device(s, x->device_comm, rows, width, forward);
    return exchange_on_host(s, x, rows, width, forward);
}

template enum fnq_status exchange_rows<float>(State<float> *, const struct fnq_exchange *, float *,
                                              int, bool);
template enum fnq_status exchange_rows<double>(State<double> *, const struct fnq_exchange *,
                                               double *, int, bool);

} // namespace fnqcu
