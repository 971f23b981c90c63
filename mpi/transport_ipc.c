/*
 * transport_ipc.c: ghost rows between ranks on one node by CUDA IPC: each rank maps its peers'
 * message buffers (cudaIpcOpenMemHandle, once per routing) and copies its packed rows straight
 * into them, GPU memory to GPU memory, also between ranks that share one GPU (which NCCL
 * refuses and where the staged route pays two host copies and MPI). The writes are ordered on
 * the GPU by interprocess events, so no stream is drained: each rank records "my buffers may be
 * written" (all its earlier work on them is behind it in its stream) and, after its copies,
 * "my writes are out"; a peer's stream waits on those events. Two host barriers per exchange
 * only make sure that the events a rank waits on have been recorded for this exchange, not an
 * earlier one (a wait takes an event's latest record at the time it is enqueued).
 */
#include <stdlib.h>
#include <string.h>

#include "halo.h"

struct ipc_peers {
    void **fwd, **bwd;     /* [n_ranks] peers' forward / backward buffers, mapped (NULL: self) */
    cudaEvent_t ready, written;             /* mine, interprocess */
    cudaEvent_t *peer_ready, *peer_written; /* [n_ranks] peers' events, opened (NULL: self) */
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
    p->fwd = p->bwd = NULL, p->fwd_at = p->bwd_at = NULL;
}

/* my two events and the peers' (opened once: the events outlive every routing) */
static enum fnq_status open_events(struct fnq_halo *h, struct ipc_peers *p)
{
    if (p->peer_ready)
        return FNQ_STATUS_OK;
    const int n = h->n_ranks;
    const unsigned flags = cudaEventDisableTiming | cudaEventInterprocess;
    cudaIpcEventHandle_t mine[2], *all = malloc(sizeof(cudaIpcEventHandle_t) * 2 * (size_t)n);
    cudaEvent_t *ready = calloc((size_t)n, sizeof(cudaEvent_t));
    cudaEvent_t *written = calloc((size_t)n, sizeof(cudaEvent_t));
    int ok = all && ready && written;
    if (ok && !p->ready)
        ok = cudaEventCreateWithFlags(&p->ready, flags) == cudaSuccess &&
             cudaEventCreateWithFlags(&p->written, flags) == cudaSuccess;
    ok = ok && cudaIpcGetEventHandle(&mine[0], p->ready) == cudaSuccess &&
         cudaIpcGetEventHandle(&mine[1], p->written) == cudaSuccess;
    /* collective whatever happened here: every rank takes part in the gather */
    if (!ok)
        memset(mine, 0, sizeof(mine));
    if (all)
        MPI_Allgather(mine, (int)sizeof(mine), MPI_BYTE, all, (int)sizeof(mine), MPI_BYTE,
                      h->comm);
    for (int q = 0; ok && q < n; q++)
        if (q != h->rank)
            ok = cudaIpcOpenEventHandle(&ready[q], all[2 * q]) == cudaSuccess &&
                 cudaIpcOpenEventHandle(&written[q], all[2 * q + 1]) == cudaSuccess;
    free(all);
    if (!ok) {
        cudaGetLastError();
        free(ready), free(written);
        return halo_fail(FNQ_STATUS_DEVICE, "ghost exchange 'ipc': rank %d cannot share CUDA "
                                            "events with its peers (cudaIpc*EventHandle); use "
                                            "'staged'", h->rank);
    }
    p->peer_ready = ready, p->peer_written = written;
    return FNQ_STATUS_OK;
}

static void close_events(struct fnq_halo *h, struct ipc_peers *p)
{
    for (int q = 0; p->peer_ready && q < h->n_ranks; q++) {
        if (p->peer_ready[q])
            cudaEventDestroy(p->peer_ready[q]);
        if (p->peer_written[q])
            cudaEventDestroy(p->peer_written[q]);
    }
    if (p->ready)
        cudaEventDestroy(p->ready), cudaEventDestroy(p->written);
    free(p->peer_ready), free(p->peer_written);
    p->peer_ready = p->peer_written = NULL;
    p->ready = p->written = NULL;
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
    close_events(h, h->transport_state);
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
    return st == FNQ_STATUS_OK ? open_events(h, p) : st;
}

/* every rank has enqueued its record of `mine` for this exchange */
static enum fnq_status record_and_meet(struct fnq_halo *h, cudaEvent_t mine, cudaStream_t stream)
{
    const cudaError_t e = cudaEventRecord(mine, stream);
    if (e != cudaSuccess)
        return halo_fail(FNQ_STATUS_DEVICE, "ghost exchange 'ipc': %s", cudaGetErrorString(e));
    return MPI_Barrier(h->comm) == MPI_SUCCESS
               ? FNQ_STATUS_OK
               : halo_fail(FNQ_STATUS_COMM, "ghost exchange 'ipc': MPI_Barrier failed");
}

/* the stream waits for peer q's event where `start` says rows pass between us */
static enum fnq_status wait_peers(struct fnq_halo *h, cudaEvent_t *peer, const int64_t *start,
                                  cudaStream_t stream)
{
    for (int q = 0; q < h->n_ranks; q++)
        if (q != h->rank && start[q + 1] > start[q] &&
            cudaStreamWaitEvent(stream, peer[q], 0) != cudaSuccess)
            return halo_fail(FNQ_STATUS_DEVICE, "ghost exchange 'ipc': waiting on rank %d: %s",
                             q, cudaGetErrorString(cudaGetLastError()));
    return FNQ_STATUS_OK;
}

static enum fnq_status ipc_move(struct fnq_halo *h, const void *src, const int64_t *src_start,
                                void *dst, const int64_t *dst_start, size_t row_bytes,
                                cudaStream_t stream)
{
    const struct ipc_peers *p = h->transport_state;
    const int me = h->rank, forward = src == h->dev.fwd_buf;
    HALO_CHECK(record_and_meet(h, p->ready, stream));
    HALO_CHECK(wait_peers(h, p->peer_ready, src_start, stream)); /* they have read their buffers */
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
    HALO_CHECK(record_and_meet(h, p->written, stream));
    return wait_peers(h, p->peer_written, dst_start, stream); /* their writes have landed */
}

const struct halo_transport_i halo_transport_ipc = {"ipc", 0, ipc_init, ipc_free, ipc_routed,
                                                    ipc_move};
