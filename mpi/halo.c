/*
 * halo.c: the halo object of fnq_mpi.h: routing built with MPI once per neighbour-list rebuild
 * (each rank asks the owners of its ghosts for their rows), the exchange as a context's device
 * comm, the transport chosen at creation, and what was moved.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <time.h>

#include "halo.h"

const char *fnq_halo_transport_name(enum fnq_halo_transport transport)
{
    switch (transport) {
    case FNQ_HALO_STAGED: return "staged";
    case FNQ_HALO_NCCL: return "nccl";
    case FNQ_HALO_IPC: return "ipc";
    }
    return "unknown";
}

int32_t fnq_halo_has_nccl(void) { return halo_transport_nccl.move != NULL; }

/* ---- which ranks share a GPU ---- */

enum { kGpuKey = 160 };

/* "node/PCI bus id" of this rank's GPU; the node is NCCL_HOSTID where set (as NCCL takes it) */
static enum fnq_status gpu_key(int32_t device_id, char key[kGpuKey])
{
    char host[64] = "", bus[32] = "";
    const char *hostid = getenv("NCCL_HOSTID");
    if (hostid && *hostid)
        snprintf(host, sizeof(host), "%s", hostid);
    else
        gethostname(host, sizeof(host) - 1);
    const cudaError_t e = cudaDeviceGetPCIBusId(bus, sizeof(bus), device_id);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return halo_fail(FNQ_STATUS_DEVICE, "CUDA device %d: %s", device_id,
                         cudaGetErrorString(e));
    }
    snprintf(key, kGpuKey, "%s/%s", host, bus);
    return FNQ_STATUS_OK;
}

/* every rank's status is FNQ_STATUS_OK, or this one returns its own failure and the others
 * FNQ_STATUS_COMM naming the failed rank: a collective that never leaves a rank waiting */
static enum fnq_status agree(MPI_Comm comm, enum fnq_status mine, const char *what)
{
    int rank = 0, first = 0;
    MPI_Comm_rank(comm, &rank);
    int failed = mine != FNQ_STATUS_OK ? rank : INT_MAX;
    MPI_Allreduce(&failed, &first, 1, MPI_INT, MPI_MIN, comm);
    if (mine != FNQ_STATUS_OK || first == INT_MAX)
        return mine;
    return halo_fail(FNQ_STATUS_COMM, "%s failed on rank %d", what, first);
}

enum fnq_status fnq_halo_gpu_shared(MPI_Comm comm, int32_t device_id, int32_t *shared,
                                    int32_t *first, int32_t *second)
{
    int n = 0, rank = 0;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &rank);
    char mine[kGpuKey] = "";
    HALO_CHECK(agree(comm, gpu_key(device_id, mine), "identifying the GPU"));
    char *all = calloc((size_t)n, kGpuKey);
    if (!all)
        return halo_fail(FNQ_STATUS_OUT_OF_MEMORY, "out of host memory");
    MPI_Allgather(mine, kGpuKey, MPI_CHAR, all, kGpuKey, MPI_CHAR, comm);
    *shared = 0;
    for (int a = 0; a < n && !*shared; a++)
        for (int b = a + 1; b < n && !*shared; b++)
            if (strncmp(all + (size_t)a * kGpuKey, all + (size_t)b * kGpuKey, kGpuKey) == 0) {
                *shared = 1;
                if (first)
                    *first = a;
                if (second)
                    *second = b;
            }
    free(all);
    return FNQ_STATUS_OK;
}

/* ---- the halo ---- */

enum fnq_status fnq_halo_init(MPI_Comm comm, enum fnq_halo_transport transport,
                              int32_t device_id, struct fnq_halo **out)
{
    *out = NULL;
    if (transport != FNQ_HALO_STAGED && transport != FNQ_HALO_NCCL && transport != FNQ_HALO_IPC)
        return halo_fail(FNQ_STATUS_INVALID_ARG, "ghost exchange: unknown transport %d",
                         (int)transport);
    if (transport == FNQ_HALO_NCCL && !fnq_halo_has_nccl())
        return halo_fail(FNQ_STATUS_UNSUPPORTED,
                         "ghost exchange 'nccl': this build of libfusednequip_mpi has no NCCL "
                         "(configure found none); use 'staged'");
    if (transport == FNQ_HALO_NCCL) {
        int32_t shared = 0, a = -1, b = -1;
        HALO_CHECK(fnq_halo_gpu_shared(comm, device_id, &shared, &a, &b));
        if (shared) {
            char key[kGpuKey] = "";
            gpu_key(device_id, key);
            return halo_fail(FNQ_STATUS_UNSUPPORTED,
                             "ghost exchange 'nccl': NCCL cannot run two ranks on one GPU, and "
                             "ranks %d and %d share one (%s); use one rank per GPU, or 'staged' "
                             "for several ranks per GPU",
                             a, b, key);
        }
    }
    struct fnq_halo *h = calloc(1, sizeof(*h));
    if (!h)
        return halo_fail(FNQ_STATUS_OUT_OF_MEMORY, "out of host memory");
    h->comm = comm;
    MPI_Comm_rank(comm, &h->rank);
    MPI_Comm_size(comm, &h->n_ranks);
    h->device = device_id;
    h->transport = transport == FNQ_HALO_NCCL  ? &halo_transport_nccl
                   : transport == FNQ_HALO_IPC ? &halo_transport_ipc
                                               : &halo_transport_staged;
    h->version = 1;
    enum fnq_status st = cudaSetDevice(device_id) == cudaSuccess
                             ? FNQ_STATUS_OK
                             : halo_fail(FNQ_STATUS_DEVICE, "CUDA device %d cannot be used",
                                         device_id);
    if (st == FNQ_STATUS_OK && h->transport->init)
        st = h->transport->init(h);
    st = agree(comm, st, "setting up the ghost exchange");
    if (st != FNQ_STATUS_OK) {
        fnq_halo_free(h);
        return st;
    }
    *out = h;
    return FNQ_STATUS_OK;
}

void fnq_halo_free(struct fnq_halo *h)
{
    if (!h)
        return;
    if (h->transport->free)
        h->transport->free(h);
    halo_device_free(&h->dev);
    cudaFreeHost(h->host_fwd);
    cudaFreeHost(h->host_bwd);
    fnq_halo_plan_free(&h->plan);
    free(h);
}

enum fnq_halo_transport fnq_halo_transport_of(const struct fnq_halo *h)
{
    return h->transport == &halo_transport_nccl  ? FNQ_HALO_NCCL
           : h->transport == &halo_transport_ipc ? FNQ_HALO_IPC
                                                 : FNQ_HALO_STAGED;
}

/* each peer learns which of its rows this rank's ghosts image (the plan's requests) */
static enum fnq_status exchange_requests(struct fnq_halo *h)
{
    const int n = h->n_ranks;
    const struct fnq_halo_plan *p = &h->plan;
    int *count_to = calloc((size_t)n, sizeof(int)), *count_from = calloc((size_t)n, sizeof(int));
    int *at_to = calloc((size_t)n, sizeof(int)), *at_from = calloc((size_t)n, sizeof(int));
    int64_t *count64 = calloc((size_t)n, sizeof(int64_t)), *from = NULL;
    enum fnq_status st = FNQ_STATUS_OK;
    if (!count_to || !count_from || !at_to || !at_from || !count64) {
        st = halo_fail(FNQ_STATUS_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    for (int q = 0; q < n; q++) {
        count_to[q] = (int)(p->recv_start[q + 1] - p->recv_start[q]);
        at_to[q] = (int)p->recv_start[q];
    }
    MPI_Alltoall(count_to, 1, MPI_INT, count_from, 1, MPI_INT, h->comm);
    int64_t total = 0;
    for (int q = 0; q < n; q++) {
        at_from[q] = (int)total;
        count64[q] = count_from[q];
        total += count_from[q];
    }
    from = malloc(sizeof(int64_t) * (size_t)(total > 0 ? total : 1));
    if (!from) {
        st = halo_fail(FNQ_STATUS_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    MPI_Alltoallv(p->request_index, count_to, at_to, MPI_INT64_T, from, count_from, at_from,
                  MPI_INT64_T, h->comm);
    st = fnq_halo_plan_set_requests(&h->plan, count64, from);
done:
    free(count_to), free(count_from), free(at_to), free(at_from), free(count64), free(from);
    return st;
}

/* pinned host mirrors of the message buffers for the staged transport */
static enum fnq_status host_buffers(struct fnq_halo *h, size_t row_bytes)
{
    const size_t rows = (size_t)(fnq_halo_plan_n_send(&h->plan) > fnq_halo_plan_n_recv(&h->plan)
                                     ? fnq_halo_plan_n_send(&h->plan)
                                     : fnq_halo_plan_n_recv(&h->plan));
    const size_t bytes = rows * row_bytes;
    if (h->transport != &halo_transport_staged || (bytes <= h->host_cap && h->host_fwd))
        return FNQ_STATUS_OK;
    cudaFreeHost(h->host_fwd);
    cudaFreeHost(h->host_bwd);
    h->host_fwd = h->host_bwd = NULL;
    h->host_cap = 0;
    const size_t want = bytes + bytes / 8 + 256;
    if (cudaMallocHost(&h->host_fwd, want) != cudaSuccess ||
        cudaMallocHost(&h->host_bwd, want) != cudaSuccess) {
        cudaGetLastError();
        return halo_fail(FNQ_STATUS_OUT_OF_MEMORY,
                         "out of pinned host memory: 2 x %.3g MB for staged ghost rows",
                         want / 1e6);
    }
    h->host_cap = want;
    return FNQ_STATUS_OK;
}

enum fnq_status fnq_halo_set_routing(struct fnq_halo *h, int64_t n_local, int64_t n_all,
                                     const int32_t *ghost_rank, const int64_t *ghost_index,
                                     size_t row_bytes)
{
    enum fnq_status st = fnq_halo_plan_set_ghosts(&h->plan, h->n_ranks, h->rank, n_local, n_all,
                                                  ghost_rank, ghost_index);
    HALO_CHECK(agree(h->comm, st, "the ghost atoms' routing"));
    st = exchange_requests(h);
    HALO_CHECK(agree(h->comm, st, "the ghost atoms' routing"));
    st = halo_device_upload(h, row_bytes);
    if (st == FNQ_STATUS_OK)
        st = host_buffers(h, row_bytes);
    HALO_CHECK(agree(h->comm, st, "the ghost exchange's buffers"));
    if (h->transport->routed)
        HALO_CHECK(agree(h->comm, h->transport->routed(h), "the ghost exchange's peers"));
    /* what a recorded exchange enqueued (counts, peers, addresses) is stale now; NCCL wants
     * one eager exchange before it is recorded again */
    h->version++;
    h->warmed_up = 0;
    int peers = 0;
    for (int q = 0; q < h->n_ranks; q++)
        peers += q != h->rank && h->plan.send_start[q + 1] > h->plan.send_start[q];
    h->stats.peers = peers;
    return FNQ_STATUS_OK;
}

/* ---- the device comm ---- */

static void count_moved(struct fnq_halo *h, const int64_t *start, size_t row_bytes)
{
    const int64_t self = start[h->rank + 1] - start[h->rank];
    const int64_t rows = start[h->n_ranks] - self;
    h->stats.exchanges++;
    h->stats.rows_sent += rows;
    h->stats.bytes_sent += rows * (int64_t)row_bytes;
    h->stats.rows_local += self;
}

static size_t value_bytes(enum fnq_dtype dtype) { return dtype == FNQ_DTYPE_F64 ? 8 : 4; }

static int halo_forward(void *user, void *rows, int32_t width, enum fnq_dtype dtype, void *stream)
{
    struct fnq_halo *h = user;
    const int rc = halo_device_forward(h, rows, width, dtype, (cudaStream_t)stream);
    if (rc == 0) {
        count_moved(h, h->plan.send_start, width * value_bytes(dtype));
        h->warmed_up = 1;
    }
    return rc;
}

static int halo_reverse(void *user, void *rows, int32_t width, enum fnq_dtype dtype, void *stream)
{
    struct fnq_halo *h = user;
    const int rc = halo_device_reverse(h, rows, width, dtype, (cudaStream_t)stream);
    if (rc == 0)
        count_moved(h, h->plan.recv_start, width * value_bytes(dtype));
    return rc;
}

/* recordable once NCCL has run the current routing eagerly (0: not now) */
static uint64_t halo_version(void *user)
{
    const struct fnq_halo *h = user;
    return h->warmed_up ? h->version : 0;
}

struct fnq_device_comm fnq_halo_device_comm(struct fnq_halo *h)
{
    struct fnq_device_comm c = {h, halo_forward, halo_reverse,
                                h->transport->recordable ? halo_version : NULL};
    return c;
}

double halo_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void halo_lap(struct fnq_halo *h, cudaStream_t stream, double *phase)
{
    if (!h->timing)
        return;
    cudaStreamSynchronize(stream); /* errors surface at the exchange's own checks */
    const double t = halo_now();
    if (phase)
        *phase += t - h->lap_start;
    h->lap_start = t;
}

void fnq_halo_set_timing(struct fnq_halo *h, int on) { h->timing = on; }

void fnq_halo_take_stats(struct fnq_halo *h, struct fnq_halo_stats *out)
{
    *out = h->stats;
    const int32_t peers = h->stats.peers;
    memset(&h->stats, 0, sizeof(h->stats));
    h->stats.peers = peers;
}
