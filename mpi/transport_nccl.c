/*
 * transport_nccl.c: ghost rows GPU to GPU with grouped ncclSend/ncclRecv on the context's
 * stream: no host waits, so the exchange is recorded in the step's CUDA graph with the
 * kernels. One GPU per rank (fnq_halo_init refuses ranks sharing one before NCCL would).
 * Built when CMake finds NCCL (FNQ_HAVE_NCCL); else the table below is empty.
 */
#include "halo.h"

#ifdef FNQ_HAVE_NCCL
#include <nccl.h>

#define HALO_NCCL(expr)                                                                         \
    do {                                                                                        \
        ncclResult_t halo_nccl_ = (expr);                                                       \
        if (halo_nccl_ != ncclSuccess)                                                          \
            return halo_fail(FNQ_STATUS_COMM, "NCCL: %s: %s", #expr,                            \
                             ncclGetErrorString(halo_nccl_));                                   \
    } while (0)

static enum fnq_status nccl_init(struct fnq_halo *h)
{
    ncclUniqueId id;
    if (h->rank == 0)
        HALO_NCCL(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, h->comm);
    ncclComm_t comm;
    HALO_NCCL(ncclCommInitRank(&comm, h->n_ranks, id, h->rank));
    h->transport_state = comm;
    return FNQ_STATUS_OK;
}

static void nccl_free(struct fnq_halo *h)
{
    if (h->transport_state)
        ncclCommDestroy((ncclComm_t)h->transport_state);
    h->transport_state = NULL;
}

static enum fnq_status nccl_move(struct fnq_halo *h, const void *src, const int64_t *src_start,
                                 void *dst, const int64_t *dst_start, size_t row_bytes,
                                 cudaStream_t stream)
{
    const int me = h->rank, n = h->n_ranks;
    ncclComm_t comm = (ncclComm_t)h->transport_state;
    const int64_t self = src_start[me + 1] - src_start[me];
    if (self > 0) {
        const cudaError_t e = cudaMemcpyAsync((char *)dst + dst_start[me] * row_bytes,
                                              (const char *)src + src_start[me] * row_bytes,
                                              self * row_bytes, cudaMemcpyDeviceToDevice, stream);
        if (e != cudaSuccess)
            return halo_fail(FNQ_STATUS_DEVICE, "NCCL ghost exchange: %s", cudaGetErrorString(e));
    }
    HALO_NCCL(ncclGroupStart());
    for (int q = 0; q < n; q++) {
        if (q == me)
            continue;
        const int64_t out = src_start[q + 1] - src_start[q], in = dst_start[q + 1] - dst_start[q];
        if (out > 0)
            HALO_NCCL(ncclSend((const char *)src + src_start[q] * row_bytes,
                               (size_t)out * row_bytes, ncclChar, q, comm, stream));
        if (in > 0)
            HALO_NCCL(ncclRecv((char *)dst + dst_start[q] * row_bytes, (size_t)in * row_bytes,
                               ncclChar, q, comm, stream));
    }
    HALO_NCCL(ncclGroupEnd());
    return FNQ_STATUS_OK;
}

const struct halo_transport_i halo_transport_nccl = {"nccl", 1, nccl_init, nccl_free, NULL, nccl_move};
#else
const struct halo_transport_i halo_transport_nccl = {"nccl", 1, NULL, NULL, NULL, NULL};
#endif
