/*
 * fnq_mpi.h: libfusednequip_mpi, ghost-atom exchange between MPI ranks for contexts on the
 * GPU, so that feature rows never leave the GPU for LAMMPS' host buffers. Opt-in: the core
 * (fnq.h) knows nothing of MPI or NCCL; this library plugs into it through struct
 * fnq_device_comm.
 *
 *     struct fnq_halo *halo;
 *     fnq_halo_init(MPI_COMM_WORLD, FNQ_HALO_NCCL, device_id, &halo);     (collective)
 *     after every neighbour-list rebuild (collective):
 *         fnq_halo_set_routing(halo, n_local, n_all, ghost_rank, ghost_index, row_bytes);
 *     const struct fnq_device_comm dc = fnq_halo_device_comm(halo);
 *     fnq_ctx_set_device_comm(ctx, &dc);
 *     ... fnq_ctx_compute_graph(ctx, n_local, n_all, ...) every step ...
 *     fnq_ctx_free(ctx);        first: its recorded CUDA graph holds NCCL calls
 *     fnq_halo_free(halo);
 *
 * Routing: each ghost names the rank that owns the atom it images and that atom's index
 * there; the halo turns that into direct per-peer lists (mpi/halo_plan.h): one round of
 * concurrent messages per layer, only the rows a peer needs, in the compute dtype. Reverse
 * (gradients of ghost rows into their owners) uses the same lists backwards and sums in a
 * fixed order, so forces are bitwise reproducible run to run at a fixed rank count.
 *
 * Failures return an fnq_status with the message in fnq_last_error(), as the core's do.
 */
#pragma once

#include <mpi.h>
#include <stdint.h>

#include "fnq.h"
#include "halo_plan.h" /* FNQ_HALO_NO_ROW */

#ifdef __cplusplus
extern "C" {
#endif

/* Append-only. */
enum fnq_halo_transport {
    /* rows packed on the GPU, one copy to pinned host memory, MPI_Isend/Irecv with the peers,
     * one copy back, unpacked on the GPU: any MPI, also several ranks sharing one GPU */
    FNQ_HALO_STAGED = 0,
    /* ncclSend/ncclRecv between the GPUs on the context's stream, recorded in its CUDA graph:
     * one GPU per rank (NCCL refuses two ranks on one GPU) */
    FNQ_HALO_NCCL = 1,
    /* each rank copies its rows straight into its peers' GPU buffers (CUDA IPC): ranks of one
     * node, also several on one GPU; waits on the host twice per exchange */
    FNQ_HALO_IPC = 2
};

struct fnq_halo; /* opaque: one rank's routing, buffers and transport */


FNQ_API const char *fnq_halo_transport_name(enum fnq_halo_transport transport);
/* 1 when this build has the NCCL transport. */
FNQ_API int32_t fnq_halo_has_nccl(void);

/*
 * Whether some ranks of `comm` would share a GPU: 1 when two ranks run on the same node
 * (NCCL_HOSTID, else the host name) and the same CUDA device (PCI bus id); *first / *second
 * (may be NULL) then name two such ranks. Collective. For `auto` transport choices and for a
 * clear refusal of NCCL before NCCL itself would stop.
 */
FNQ_API enum fnq_status fnq_halo_gpu_shared(MPI_Comm comm, int32_t device_id, int32_t *shared,
                                            int32_t *first, int32_t *second);

/* A halo on `comm` for rows on CUDA device `device_id`. Collective. FNQ_HALO_NCCL without NCCL
 * in the build, or with ranks sharing a GPU, fails with FNQ_STATUS_UNSUPPORTED naming it. */
FNQ_API enum fnq_status fnq_halo_init(MPI_Comm comm, enum fnq_halo_transport transport,
                                      int32_t device_id, struct fnq_halo **out);
FNQ_API void fnq_halo_free(struct fnq_halo *halo); /* NULL-safe; after the contexts using it */
FNQ_API enum fnq_halo_transport fnq_halo_transport_of(const struct fnq_halo *halo);

/*
 * The routing of this rank's ghost rows, after each neighbour-list rebuild. Collective.
 *   atoms 0..n_local-1 are owned, n_local..n_all-1 ghosts; ghost n_local+k is an image of atom
 *   ghost_index[k] owned by rank ghost_rank[k] (this rank too, for periodic images), or
 *   needs no row: ghost_rank[k] == FNQ_HALO_NO_ROW (a periodic image of an own atom that the
 *   library folds onto its owner, fnq_ctx_compute_graph's ghost_owner);
 *   row_bytes: the widest row the exchanges will move (values per atom x bytes per value), so
 *   that buffers are sized here and never while a CUDA graph records.
 * A ghost naming a rank or an atom that does not exist fails with FNQ_STATUS_INVALID_ARG
 * naming the ghost (on the rank that finds it; the others get FNQ_STATUS_COMM).
 */
FNQ_API enum fnq_status fnq_halo_set_routing(struct fnq_halo *halo, int64_t n_local,
                                             int64_t n_all, const int32_t *ghost_rank,
                                             const int64_t *ghost_index, size_t row_bytes);

/* The exchange as a context's device comm (fnq_ctx_set_device_comm); valid while the halo is. */
FNQ_API struct fnq_device_comm fnq_halo_device_comm(struct fnq_halo *halo);

/* What the exchanges moved since the last call (then zeroed). */
struct fnq_halo_stats {
    int64_t exchanges;      /* forward + reverse calls */
    int64_t rows_sent;      /* to other ranks (periodic self-images not counted) */
    int64_t bytes_sent;
    int64_t rows_local;     /* periodic self-images copied on the GPU */
    int32_t peers;          /* ranks this one sends to (the last routing) */
    /* with fnq_halo_set_timing on, seconds summed over the exchanges: */
    double t_pack;          /* packing rows on the GPU */
    double t_move;          /* the transport: all of it (below: staged's parts) */
    double t_to_host, t_mpi; /* staged: packed rows to pinned memory; MPI_Waitall */
    double t_unpack;        /* unpacking (forward) or summing into owners (reverse) */
};
FNQ_API void fnq_halo_take_stats(struct fnq_halo *halo, struct fnq_halo_stats *out);
/* Time each exchange's phases (the stream drained at every phase boundary, so the exchange is
 * slower while it is timed: for finding where its time goes, not for the step time). */
FNQ_API void fnq_halo_set_timing(struct fnq_halo *halo, int on);

#ifdef __cplusplus
}
#endif
