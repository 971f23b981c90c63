/*
 * transport_staged.c: ghost rows between ranks through host memory: the packed rows of all
 * peers in one copy to pinned memory, MPI_Isend/Irecv with each peer at once, one copy back.
 * Works with any MPI (none here is CUDA-aware) and with several ranks on one GPU, where NCCL
 * refuses; it waits on the host, so the model around it runs unrecorded.
 */
#include "halo.h"

enum { kTag = 0x464e }; /* messages between two ranks arrive in order: one tag will do */

/* slots [a, b) of a device buffer and its host mirror */
static cudaError_t copy_slots(void *dst, const void *src, int64_t a, int64_t b, size_t row_bytes,
                              enum cudaMemcpyKind kind, cudaStream_t stream)
{
    if (b <= a)
        return cudaSuccess;
    return cudaMemcpyAsync((char *)dst + a * row_bytes, (const char *)src + a * row_bytes,
                           (size_t)(b - a) * row_bytes, kind, stream);
}

static void *host_mirror(struct fnq_halo *h, const void *device_buf)
{
    return device_buf == h->dev.fwd_buf ? h->host_fwd : h->host_bwd;
}

static enum fnq_status staged_move(struct fnq_halo *h, const void *src, const int64_t *src_start,
                                   void *dst, const int64_t *dst_start, size_t row_bytes,
                                   cudaStream_t stream)
{
    const int me = h->rank, n = h->n_ranks;
    void *hsrc = host_mirror(h, src), *hdst = host_mirror(h, dst);
    const int64_t self = src_start[me + 1] - src_start[me];
    cudaError_t e = cudaSuccess;
    /* periodic images of own atoms: on the GPU */
    if (self > 0)
        e = cudaMemcpyAsync((char *)dst + dst_start[me] * row_bytes,
                            (const char *)src + src_start[me] * row_bytes, self * row_bytes,
                            cudaMemcpyDeviceToDevice, stream);
    e = e ? e : copy_slots(hsrc, src, 0, src_start[me], row_bytes, cudaMemcpyDeviceToHost, stream);
    e = e ? e : copy_slots(hsrc, src, src_start[me + 1], src_start[n], row_bytes,
                           cudaMemcpyDeviceToHost, stream);
    const double t0 = h->timing ? halo_now() : 0;
    e = e ? e : cudaStreamSynchronize(stream);
    if (e != cudaSuccess)
        return halo_fail(FNQ_STATUS_DEVICE, "staged ghost exchange: %s", cudaGetErrorString(e));
    const double t1 = h->timing ? halo_now() : 0;
    MPI_Datatype row;
    MPI_Type_contiguous((int)row_bytes, MPI_BYTE, &row);
    MPI_Type_commit(&row);
    MPI_Request req[2 * n];
    int n_req = 0;
    for (int q = 0; q < n; q++) {
        const int64_t count = dst_start[q + 1] - dst_start[q];
        if (q != me && count > 0)
            MPI_Irecv((char *)hdst + dst_start[q] * row_bytes, (int)count, row, q, kTag, h->comm,
                      &req[n_req++]);
    }
    for (int q = 0; q < n; q++) {
        const int64_t count = src_start[q + 1] - src_start[q];
        if (q != me && count > 0)
            MPI_Isend((char *)hsrc + src_start[q] * row_bytes, (int)count, row, q, kTag, h->comm,
                      &req[n_req++]);
    }
    const int rc = MPI_Waitall(n_req, req, MPI_STATUSES_IGNORE);
    MPI_Type_free(&row);
    if (h->timing) {
        h->stats.t_to_host += t1 - t0;
        h->stats.t_mpi += halo_now() - t1;
    }
    if (rc != MPI_SUCCESS)
        return halo_fail(FNQ_STATUS_COMM, "staged ghost exchange: MPI_Waitall failed (%d)", rc);
    e = copy_slots(dst, hdst, 0, dst_start[me], row_bytes, cudaMemcpyHostToDevice, stream);
    e = e ? e : copy_slots(dst, hdst, dst_start[me + 1], dst_start[n], row_bytes,
                           cudaMemcpyHostToDevice, stream);
    if (e != cudaSuccess)
        return halo_fail(FNQ_STATUS_DEVICE, "staged ghost exchange: %s", cudaGetErrorString(e));
    return FNQ_STATUS_OK;
}

const struct halo_transport_i halo_transport_staged = {"staged", 0, NULL, NULL, NULL, staged_move};
