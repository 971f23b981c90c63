/*
 * transport_ipc.c: ghost rows between ranks on one node by CUDA IPC: each rank maps its peers'
 * message buffers (cudaIpcOpenMemHandle, once per routing) and copies its packed rows straight
 * into them, GPU memory to GPU memory, also between ranks that share one GPU (which NCCL
 * refuses and where the staged route pays two host copies and MPI). Two barriers per exchange
 * order the writes: after the first, every rank has finished reading its buffers (its stream
 * drained); after the second, every write into them has landed.
 */
#include <stdlib.h>
#include <string.h>

#include "halo.h"

struct ipc_peers {
    void **fwd, **bwd;     /* [n_ranks] peers' forward / backward buffers, mapped (NULL: self) */
    int64_t *fwd_at;       /* [n_ranks] where my reverse rows start in peer q's fwd buffer */
    int64_t *bwd_at;       /* [n_ranks] where my forward rows start in peer q's bwd buffer */
};

static void unmap(struct fnq_halo *h, struct ipc_peers *p)
{
    for (int q = 0; p->fwd && q < h->n_ranks; q++) {
        if (p->fwd[q])
            cudaIpcCloseMemHandle(p->fwd[q]);
        if (p->bwd[q])
            cudaIpcCloseMemHandle(p->bwd[q]);
    }
    free(p->fwd), free(p->bwd), free(p->fwd_at), free(p->bwd_at);
    memset(p, 0, sizeof(*p));
}

static enum fnq_status ipc_init(struct fnq_halo *h)
{
    h->transport_state = calloc(1, sizeof(struct ipc_peers));
    return h->transport_state ? FNQ_STATUS_OK
                              : halo_fail(FNQ_STATUS_OUT_OF_MEMORY, "out of host memory");
}

static void ipc_free(struct fnq_halo *h)
{
    if (!h->transport_state)
        return;
    unmap(h, h->transport_state);
    free(h->transport_state);
    h->transport_state = NULL;
}

/* after each routing: the peers' buffers (they may have moved) and where my rows go in them */
static enum fnq_status ipc_routed(struct fnq_halo *h)
{
    struct ipc_peers *p = h->transport_state;
    const int n = h->n_ranks;
    unmap(h, p);
    cudaIpcMemHandle_t mine[2], *all = malloc(sizeof(cudaIpcMemHandle_t) * 2 * (size_t)n);
    int64_t *to = malloc(sizeof(int64_t) * 2 * (size_t)n), *from = malloc(sizeof(int64_t) * 2 * (size_t)n);
    p->fwd = calloc((size_t)n, sizeof(void *)), p->bwd = calloc((size_t)n, sizeof(void *));
    p->fwd_at = calloc((size_t)n, sizeof(int64_t)), p->bwd_at = calloc((size_t)n, sizeof(int64_t));
    enum fnq_status st = FNQ_STATUS_OK;
    if (!all || !to || !from || !p->fwd || !p->bwd || !p->fwd_at || !p->bwd_at) {
        st = halo_fail(FNQ_STATUS_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    if (cudaIpcGetMemHandle(&mine[0], h->dev.fwd_buf) != cudaSuccess ||
        cudaIpcGetMemHandle(&mine[1], h->dev.bwd_buf) != cudaSuccess) {
        cudaGetLastError();
        st = halo_fail(FNQ_STATUS_DEVICE, "ghost exchange 'ipc': cudaIpcGetMemHandle failed");
        goto done;
    }
    MPI_Allgather(mine, (int)sizeof(mine), MPI_BYTE, all, (int)sizeof(mine), MPI_BYTE, h->comm);
    /* peer q tells me where my rows start in its buffers: its recv_start[me] (forward) and
     * its send_start[me] (reverse) */
    for (int q = 0; q < n; q++)
        to[2 * q] = h->plan.recv_start[q], to[2 * q + 1] = h->plan.send_start[q];
    MPI_Alltoall(to, 2, MPI_INT64_T, from, 2, MPI_INT64_T, h->comm);
    for (int q = 0; q < n && st == FNQ_STATUS_OK; q++) {
        p->bwd_at[q] = from[2 * q], p->fwd_at[q] = from[2 * q + 1];
        if (q == h->rank)
            continue;
        if (cudaIpcOpenMemHandle(&p->fwd[q], all[2 * q], cudaIpcMemLazyEnablePeerAccess) !=
                cudaSuccess ||
            cudaIpcOpenMemHandle(&p->bwd[q], all[2 * q + 1], cudaIpcMemLazyEnablePeerAccess) !=
                cudaSuccess) {
            cudaGetLastError();
            st = halo_fail(FNQ_STATUS_DEVICE,
                           "ghost exchange 'ipc': rank %d cannot map rank %d's GPU memory "
                           "(cudaIpcOpenMemHandle); ranks must be on one node with GPUs that "
                           "reach each other; use 'staged'",
                           h->rank, q);
        }
    }
done:
    free(all), free(to), free(from);
    return st;
}

static enum fnq_status drained_and_met(struct fnq_halo *h, cudaStream_t stream)
{
    const cudaError_t e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess)
        return halo_fail(FNQ_STATUS_DEVICE, "ghost exchange 'ipc': %s", cudaGetErrorString(e));
    return MPI_Barrier(h->comm) == MPI_SUCCESS
               ? FNQ_STATUS_OK
               : halo_fail(FNQ_STATUS_COMM, "ghost exchange 'ipc': MPI_Barrier failed");
}

static enum fnq_status ipc_move(struct fnq_halo *h, const void *src, const int64_t *src_start,
                                void *dst, const int64_t *dst_start, size_t row_bytes,
                                cudaStream_t stream)
{
    const struct ipc_peers *p = h->transport_state;
    const int me = h->rank, forward = src == h->dev.fwd_buf;
    HALO_CHECK(drained_and_met(h, stream)); /* every rank has read its buffers */
    for (int q = 0; q < h->n_ranks; q++) {
        const int64_t rows = src_start[q + 1] - src_start[q];
        if (rows == 0)
            continue;
        char *to = q == me ? (char *)dst + dst_start[me] * row_bytes
                   : forward ? (char *)p->bwd[q] + p->bwd_at[q] * row_bytes
                             : (char *)p->fwd[q] + p->fwd_at[q] * row_bytes;
        const cudaError_t e =
            cudaMemcpyAsync(to, (const char *)src + src_start[q] * row_bytes,
                            (size_t)rows * row_bytes, cudaMemcpyDeviceToDevice, stream);
        if (e != cudaSuccess)
            return halo_fail(FNQ_STATUS_DEVICE, "ghost exchange 'ipc' to rank %d: %s", q,
                             cudaGetErrorString(e));
    }
    return drained_and_met(h, stream); /* every write into every buffer has landed */
}

const struct halo_transport_i halo_transport_ipc = {"ipc", 0, ipc_init, ipc_free, ipc_routed,
                                                    ipc_move};
