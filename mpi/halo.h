/*
 * halo.h: inside libfusednequip_mpi: the halo object shared by the routing (halo.c), the
 * device rows and buffers (halo_device.cu) and the transports (transport_*.c).
 */
#pragma once

#include <cuda_runtime.h>

#include "fnq_mpi.h"
#include "halo_error.h"
#include "halo_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Moves packed rows between ranks: the rows of `src` for peer p (slots src_start[p] ..
 * src_start[p+1]) arrive in `dst` at slots dst_start[q] .. for q = the sender; peer == this
 * rank is a device copy. Device buffers, `row_bytes` per slot, work enqueued on `stream`. */
struct halo_transport_i {
    const char *name;
    int recordable; /* only stream work that a CUDA graph can record */
    enum fnq_status (*init)(struct fnq_halo *h);
    void (*free)(struct fnq_halo *h);
    /* (optional) after each routing, collective: the buffers and lists may have changed */
    enum fnq_status (*routed)(struct fnq_halo *h);
    enum fnq_status (*move)(struct fnq_halo *h, const void *src, const int64_t *src_start,
                            void *dst, const int64_t *dst_start, size_t row_bytes,
                            cudaStream_t stream);
};
extern const struct halo_transport_i halo_transport_staged;
extern const struct halo_transport_i halo_transport_nccl; /* NULL members without NCCL */
extern const struct halo_transport_i halo_transport_ipc;

/* The plan's lists on the device, and the message buffers (halo_device.cu). */
struct halo_device {
    int64_t *send_index, *recv_index, *sum_atom, *sum_start, *sum_slot;
    void *fwd_buf;          /* [n_send] slots: forward send, reverse receive */
    void *bwd_buf;          /* [n_recv] slots: forward receive, reverse send */
    size_t index_cap, fwd_cap, bwd_cap; /* bytes allocated */
    size_t row_bytes;       /* the widest row the buffers hold */
};

struct fnq_halo {
    MPI_Comm comm;
    int32_t rank, n_ranks, device;
    const struct halo_transport_i *transport;
    void *transport_state;
    struct fnq_halo_plan plan;
    struct halo_device dev;
    /* staged: pinned host mirrors of the two message buffers */
    void *host_fwd, *host_bwd;
    size_t host_cap;
    uint64_t version;     /* bumped by every routing and buffer change */
    int warmed_up;        /* one exchange ran eagerly since the last change (NCCL's rule) */
    struct fnq_halo_stats stats;
    int timing;           /* fnq_halo_set_timing */
    double lap_start;     /* timing: when the current phase began (seconds) */
};

/* timing: drain `stream`, add the time since the last lap to *phase (NULL: start a phase) */
void halo_lap(struct fnq_halo *h, cudaStream_t stream, double *phase);
double halo_now(void);

/* halo_device.cu */
enum fnq_status halo_device_upload(struct fnq_halo *h, size_t row_bytes);
void halo_device_free(struct halo_device *d);
int halo_device_forward(struct fnq_halo *h, void *rows, int32_t width, enum fnq_dtype dtype,
                        cudaStream_t stream);
int halo_device_reverse(struct fnq_halo *h, void *rows, int32_t width, enum fnq_dtype dtype,
                        cudaStream_t stream);

#ifdef __cplusplus
}
#endif
