/*
 * cuda_graph.cu: the graph of one evaluation on the GPU, and the backend entry points that
 * start an evaluation: the host's graph uploaded (compute_graph), the caller's pairs sorted and
 * indexed on the GPU (compute_edges, edge_list.cu; read in place when they are device arrays),
 * or our own neighbour list from a host cell grid and a device count and fill
 * (compute_periodic, neighbor.cu). The input checks and the model's limits on each atom's
 * neighbourhood run on the GPU (atom_limits.cu); only when one fails does the host builder
 * (graph.c, neighbor.c) run on the same input, to name the atoms in the message.
 */
#include <algorithm>
#include <string.h>
#include <vector>

#include "graph/atom_limits.cuh"
#include "runtime/cuda_state.cuh"
#include "graph/edge_list.cuh"
#include "graph/neighbor.cuh"

namespace fnqcu {

template <typename REAL>
enum fnq_status compute_graph(State<REAL> *s, const struct fnq_graph *g,
                                     const struct fnq_exchange *x, struct fnq_results *out)
{
    phase_start(s);
    FNQ_CUDA_CHECK(cudaSetDevice(s->device));
    const int64_t nl = g->n_local, na = g->n_all, ne = g->n_edges;
    FNQ_CHECK(reserve<REAL>(s, nl, na, ne, fnq__exchange_by_caller(x)));
    cudaStream_t st = s->stream;
    FNQ_CUDA_CHECK(cudaMemcpyAsync(s->species.p, g->species, sizeof(int) * na, cudaMemcpyHostToDevice, st));
    FNQ_CUDA_CHECK(cudaMemcpyAsync(s->recv_start.p, g->recv_start, sizeof(int64_t) * (nl + 1), cudaMemcpyHostToDevice, st));
    FNQ_CUDA_CHECK(cudaMemcpyAsync(s->edge_send.p, g->edge_send, sizeof(int64_t) * ne, cudaMemcpyHostToDevice, st));
    FNQ_CUDA_CHECK(cudaMemcpyAsync(s->edge_recv.p, g->edge_recv, sizeof(int64_t) * ne, cudaMemcpyHostToDevice, st));
    FNQ_CUDA_CHECK(cudaMemcpyAsync(s->edge_vec.p, g->edge_vec, sizeof(double) * 3 * ne, cudaMemcpyHostToDevice, st));
    FNQ_CUDA_CHECK(cudaMemcpyAsync(s->send_start.p, g->send_start, sizeof(int64_t) * (na + 1), cudaMemcpyHostToDevice, st));
    FNQ_CUDA_CHECK(cudaMemcpyAsync(s->send_edges.p, g->send_edges, sizeof(int64_t) * ne, cudaMemcpyHostToDevice, st));
    s->launches_nl = 0;
    return run_model<REAL>(s, nl, na, ne, x, out);
}

/* ---- limits of a graph built on the GPU ----
 * The device counts and checks (atom_limits.cu); when an atom breaks a limit the host builder
 * (graph.c, neighbor.c) runs on the same input to find the atoms and word the message. */

/* the host builder's status on input the GPU found bad */
static enum fnq_status host_wording(enum fnq_status host_status, struct fnq_graph_buf *tmp)
{
    fnq__graph_buf_free(tmp);
    return host_status != FNQ_STATUS_OK
               ? host_status
               : fnq__fail(FNQ_STATUS_INTERNAL, "GPU and host neighbour lists disagree");
}

/* The model's limits on every atom's neighbourhood and the receivers' first edges
 * (s->recv_start) from the counts of a neighbour search, on the GPU (atom_limits.cu); the host
 * waits for three numbers: *total edges kept, whether a limit is broken (*bad) and, for the
 * caller's pairs, the first pair with an index out of range (first_bad, or nullptr) */
template <typename REAL, typename CountT>
static enum fnq_status check_limits(State<REAL> *s, int64_t n, const CountT *count,
                                    const double *min_d2, const int32_t *from_owned,
                                    const int32_t *sent, const unsigned long long *first_bad,
                                    const struct fnq_limits *lim, int64_t *total, bool *bad)
{
    const char *what = "the neighbour list";
    int *ep = &s->epoch;
    cudaStream_t st = s->stream;
    FNQ_CHECK(ensure(s->recv_start, n + 1, what, ep));
    FNQ_CHECK(ensure(s->limit_counts, n + 1, what, ep));
    FNQ_CHECK(ensure(s->limit_bad, 1, what, ep));
    AtomLimitArgs<CountT> a;
    a.n = n, a.count = count, a.min_d2 = min_d2, a.from_owned = from_owned, a.sent = sent;
    a.max_neighbors = lim->max_neighbors;
    a.min_d2_allowed = lim->min_distance * lim->min_distance;
    a.counts64 = s->limit_counts.p, a.starts = s->recv_start.p, a.bad = s->limit_bad.p;
    size_t bytes = 0;
    FNQ_CUDA_CHECK(atom_limits_launch(a, nullptr, &bytes, st));
    FNQ_CHECK(ensure(s->cub_tmp, bytes + 16, what, ep));
    FNQ_CUDA_CHECK(atom_limits_launch(a, s->cub_tmp.p, &bytes, st));
    const cudaMemcpyKind d2h = cudaMemcpyDeviceToHost;
    FNQ_CUDA_CHECK(cudaMemcpyAsync(&s->readback.p->n_edges, s->recv_start.p + n, sizeof(int64_t), d2h, st));
    FNQ_CUDA_CHECK(cudaMemcpyAsync(&s->readback.p->bad, s->limit_bad.p, sizeof(unsigned int), d2h, st));
    s->readback.p->first_bad = ~0ull;
    if (first_bad)
        FNQ_CUDA_CHECK(cudaMemcpyAsync(&s->readback.p->first_bad, first_bad, sizeof(unsigned long long), d2h, st));
    FNQ_CUDA_CHECK(cudaStreamSynchronize(st));
    *total = s->readback.p->n_edges;
    *bad = s->readback.p->bad != 0 || s->readback.p->first_bad != ~0ull;
    return FNQ_STATUS_OK;
}

/* ---- the caller's arrays on the device (fnq_ctx_compute_graph_device) ---- */

/* `p` (the argument `what`) is memory the context's device can read as its own */
static enum fnq_status check_device_array(int device, const void *p, const char *what)
{
    cudaPointerAttributes at;
    cudaError_t e = cudaPointerGetAttributes(&at, p);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "device array %s: %s", what,
                         cudaGetErrorString(e));
    }
    const bool here = at.type == cudaMemoryTypeDevice && at.device == device;
    if (here || at.type == cudaMemoryTypeManaged)
        return FNQ_STATUS_OK;
    return fnq__fail(FNQ_STATUS_INVALID_ARG,
                     "%s is not memory of CUDA device %d (%s); a device array was expected",
                     what, device,
                     at.type == cudaMemoryTypeDevice ? "it is another device's" : "host memory");
}

template <typename REAL>
enum fnq_status to_host(State<REAL> *s, void *dst, const void *src, size_t bytes,
                               const char *what)
{
    FNQ_CUDA_CHECK(cudaSetDevice(s->device));
    FNQ_CHECK(check_device_array(s->device, src, what));
    /* cudaMemcpy runs on the legacy default stream: after the caller's work queued there */
    FNQ_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
    return FNQ_STATUS_OK;
}

/* The caller's device positions and species (NULL: positions only) checked where they are
 * (atom_limits.cu): only a flag comes back; on a failed check the context copies them to word
 * the message */
template <typename REAL>
enum fnq_status check_inputs(State<REAL> *s, int64_t n, const double *pos,
                                    const int32_t *species, int32_t n_species, int *ok)
{
    *ok = 1;
    if (n == 0)
        return FNQ_STATUS_OK;
    FNQ_CUDA_CHECK(cudaSetDevice(s->device));
    FNQ_CHECK(check_device_array(s->device, pos, "positions"));
    if (species)
        FNQ_CHECK(check_device_array(s->device, species, "species"));
    /* our stream does not wait for the legacy default stream, where the caller's work is */
    FNQ_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
    FNQ_CHECK(ensure(s->limit_bad, 1, "input checks", &s->epoch));
    FNQ_CUDA_CHECK(atom_inputs_launch(n, pos, species, n_species, s->limit_bad.p, s->stream));
    FNQ_CUDA_CHECK(cudaMemcpyAsync(&s->readback.p->bad, s->limit_bad.p, sizeof(unsigned int),
                                   cudaMemcpyDeviceToHost, s->stream));
    FNQ_CUDA_CHECK(cudaStreamSynchronize(s->stream));
    *ok = s->readback.p->bad == 0;
    return FNQ_STATUS_OK;
}

/* Host copies of device pairs, for the host builder's message on bad input (only then). */
struct HostPairs {
    std::vector<double> pos, shift;
    std::vector<int32_t> species;
    std::vector<int64_t> recv, send;
};

static enum fnq_status download_pairs(const struct fnq_edge_input *in, HostPairs *h,
                                      struct fnq_edge_input *out)
{
    const size_t na = (size_t)in->n_all, np = (size_t)in->n_edges;
    h->pos.resize(3 * na), h->species.resize(na), h->recv.resize(np), h->send.resize(np);
    h->shift.resize(in->shift ? 3 * np : 0);
    const cudaMemcpyKind d2h = cudaMemcpyDeviceToHost;
    FNQ_CUDA_CHECK(cudaMemcpy(h->pos.data(), in->pos, sizeof(double) * 3 * na, d2h));
    FNQ_CUDA_CHECK(cudaMemcpy(h->species.data(), in->species, sizeof(int32_t) * na, d2h));
    FNQ_CUDA_CHECK(cudaMemcpy(h->recv.data(), in->recv, sizeof(int64_t) * np, d2h));
    FNQ_CUDA_CHECK(cudaMemcpy(h->send.data(), in->send, sizeof(int64_t) * np, d2h));
    if (in->shift)
        FNQ_CUDA_CHECK(cudaMemcpy(h->shift.data(), in->shift, sizeof(double) * 3 * np, d2h));
    *out = *in;
    out->pos = h->pos.data(), out->species = h->species.data();
    out->recv = h->recv.data(), out->send = h->send.data();
    out->shift = in->shift ? h->shift.data() : nullptr;
    out->on_device = 0;
    return FNQ_STATUS_OK;
}

/* The caller's pairs are device memory, and the caller's work writing them is done: our
 * stream is non-blocking, it does not wait for the legacy default stream by itself. */
template <typename REAL>
static enum fnq_status check_device_pairs(State<REAL> *s, const struct fnq_edge_input *in)
{
    if (in->n_edges > 0) {
        FNQ_CHECK(check_device_array(s->device, in->recv, "edge_recv"));
        FNQ_CHECK(check_device_array(s->device, in->send, "edge_send"));
        if (in->shift)
            FNQ_CHECK(check_device_array(s->device, in->shift, "edge_shift"));
    }
    FNQ_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
    return FNQ_STATUS_OK;
}

/* The pairs kept on the device from an earlier call (in->reuse_pairs), for the host builder */
template <typename REAL>
static enum fnq_status download_kept_pairs(State<REAL> *s, const struct fnq_edge_input *in,
                                           HostPairs *h, struct fnq_edge_input *out)
{
    const size_t np = (size_t)in->n_edges;
    h->recv.resize(np), h->send.resize(np), h->shift.resize(s->pairs_shifted ? 3 * np : 0);
    const cudaMemcpyKind d2h = cudaMemcpyDeviceToHost;
    FNQ_CUDA_CHECK(cudaMemcpy(h->recv.data(), s->pair_recv.p, sizeof(int64_t) * np, d2h));
    FNQ_CUDA_CHECK(cudaMemcpy(h->send.data(), s->pair_send.p, sizeof(int64_t) * np, d2h));
    if (s->pairs_shifted)
        FNQ_CUDA_CHECK(cudaMemcpy(h->shift.data(), s->pair_shift.p, sizeof(double) * 3 * np, d2h));
    *out = *in;
    out->recv = h->recv.data(), out->send = h->send.data();
    out->shift = s->pairs_shifted ? h->shift.data() : nullptr;
    out->reuse_pairs = 0;
    return FNQ_STATUS_OK;
}

/* The host builder's message for input the GPU found bad (device inputs copied first). */
template <typename REAL>
static enum fnq_status edges_message(State<REAL> *s, const struct fnq_edge_input *in,
                                     const struct fnq_limits *lim, bool keep_ghost_rows)
{
    HostPairs h;
    struct fnq_edge_input host = *in;
    if (in->on_device)
        FNQ_CHECK(download_pairs(in, &h, &host));
    if (in->reuse_pairs)
        FNQ_CHECK(download_kept_pairs(s, in, &h, &host));
    if (in->pos_on_device) {
        h.pos.resize(3 * (size_t)in->n_all);
        FNQ_CUDA_CHECK(cudaMemcpy(h.pos.data(), in->pos, sizeof(double) * h.pos.size(),
                                  cudaMemcpyDeviceToHost));
        host.pos = h.pos.data(), host.pos_on_device = 0;
    }
    struct fnq_graph_buf tmp;
    memset(&tmp, 0, sizeof(tmp));
    return host_wording(fnq__graph_from_edges(&tmp, host.n_local, host.n_all, host.pos,
                                              host.species, host.n_edges, host.recv, host.send,
                                              host.shift, host.ghost_owner,
                                              keep_ghost_rows, lim),
                        &tmp);
}

/* The caller's pairs, sorted and indexed on the GPU (edge_list.cuh): the same graph as
 * fnq__graph_from_edges builds on the host. Device inputs (in->on_device) are read where they
 * are: no uploads but the species, which the recorded model graph reads from s->species. */
template <typename REAL>
enum fnq_status compute_edges(State<REAL> *s, const struct fnq_edge_input *in,
                                     const struct fnq_limits *lim, const struct fnq_exchange *x,
                                     struct fnq_results *out, int64_t *n_edges)
{
    phase_start(s);
    FNQ_CUDA_CHECK(cudaSetDevice(s->device));
    const int64_t nl = in->n_local, na = in->n_all, np = in->n_edges;
    /* the model's atoms: every ghost folded, or the ghost rows kept for a caller's exchange */
    const bool keep_rows = fnq__exchange_by_caller(x);
    const int64_t nm = fnq__graph_rows(nl, na, in->ghost_owner, keep_rows);
    const bool dev = in->on_device;
    if (out->forces_add_device)
        FNQ_CHECK(check_device_array(s->device, out->forces_add_device, "forces"));
    if (dev)
        FNQ_CHECK(check_device_pairs(s, in));
    else if (!in->pos_on_device) /* device positions: checked on the device by the context */
        FNQ_CHECK(fnq__check_positions(na, in->pos));
    int *ep = &s->epoch;
    cudaStream_t st = s->stream;
    const char *what = "the caller's neighbour list";
    /* pairs kept from the last call: only if that call left them (same count, host arrays) */
    const bool reuse = in->reuse_pairs != 0;
    if (reuse && !(s->pairs_kept && s->pairs_kept_count == np))
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "no pairs kept on the GPU to evaluate again "
                                                 "(the last evaluation did not leave %lld)",
                         (long long)np);
    s->pairs_kept = false; /* until this call has them all */
    if (!dev) {
        FNQ_CHECK(ensure(s->pos, 3 * na, "positions", ep));
        FNQ_CHECK(ensure(s->pair_recv, np, what, ep));
        FNQ_CHECK(ensure(s->pair_send, np, what, ep));
        if (in->shift)
            FNQ_CHECK(ensure(s->pair_shift, 3 * np, what, ep));
    }
    if (in->ghost_owner)
        FNQ_CHECK(ensure(s->pair_owner, na - nl, what, ep));
    FNQ_CHECK(ensure(s->pair_keys, np, what, ep));
    FNQ_CHECK(ensure(s->pair_ids, np, what, ep));
    FNQ_CHECK(ensure(s->pair_keys_sorted, np, what, ep));
    FNQ_CHECK(ensure(s->pair_ids_sorted, np, what, ep));
    FNQ_CHECK(ensure(s->pair_counts, 3 * nl, what, ep));
    FNQ_CHECK(ensure(s->pair_min_d2, nl + 1, what, ep));
    if (!dev)
        FNQ_CUDA_CHECK(cudaMemcpyAsync(s->pos.p, in->pos, sizeof(double) * 3 * na,
                                       in->pos_on_device ? cudaMemcpyDeviceToDevice
                                                         : cudaMemcpyHostToDevice, st));
    if (!dev && !reuse) {
        FNQ_CUDA_CHECK(cudaMemcpyAsync(s->pair_recv.p, in->recv, sizeof(int64_t) * np, cudaMemcpyHostToDevice, st));
        FNQ_CUDA_CHECK(cudaMemcpyAsync(s->pair_send.p, in->send, sizeof(int64_t) * np, cudaMemcpyHostToDevice, st));
        if (in->shift)
            FNQ_CUDA_CHECK(cudaMemcpyAsync(s->pair_shift.p, in->shift, sizeof(double) * 3 * np, cudaMemcpyHostToDevice, st));
        s->pairs_shifted = in->shift != nullptr;
    }
    if (in->ghost_owner)
        FNQ_CUDA_CHECK(cudaMemcpyAsync(s->pair_owner.p, in->ghost_owner, sizeof(int64_t) * (na - nl), cudaMemcpyHostToDevice, st));
    EdgeListArgs a;
    memset(&a, 0, sizeof(a));
    a.n_local = nl, a.n_all = na, a.n_in = np;
    if (dev) { /* read in place: the edge-list kernels only read them, before we return */
        a.pos = in->pos, a.recv = in->recv, a.send = in->send, a.shift = in->shift;
    } else {
        a.pos = s->pos.p, a.recv = s->pair_recv.p, a.send = s->pair_send.p;
        a.shift = s->pairs_shifted ? s->pair_shift.p : nullptr;
    }
    a.owner = in->ghost_owner ? s->pair_owner.p : nullptr;
    a.rc2 = lim->cutoff * lim->cutoff;
    a.keys = s->pair_keys.p, a.ids = s->pair_ids.p;
    a.keys_sorted = s->pair_keys_sorted.p, a.ids_sorted = s->pair_ids_sorted.p;
    a.degree = s->pair_counts.p, a.from_owned = a.degree + nl, a.sent = a.degree + 2 * nl;
    a.min_d2 = s->pair_min_d2.p, a.first_bad = a.min_d2 + nl;
    FNQ_CUDA_CHECK(edge_list_scan_launch(a, st));

    /* limits and a full list (min_d2 holds the bits of non-negative doubles), or the host
     * builder's message */
    int64_t total = 0;
    bool bad = false;
    FNQ_CHECK((check_limits<REAL, int32_t>(s, nl, a.degree, (const double *)a.min_d2,
                                           a.from_owned, a.sent, a.first_bad, lim, &total, &bad)));
    if (bad)
        return edges_message(s, in, lim, keep_rows);

    FNQ_CHECK(reserve<REAL>(s, nl, nm, total, keep_rows));
    FNQ_CHECK(ensure(s->keys, total, what, ep));
    FNQ_CHECK(ensure(s->ids, total, what, ep));
    size_t sort_bytes = 0, index_bytes = 0;
    FNQ_CUDA_CHECK(edge_list_sort_launch(a, nullptr, &sort_bytes, st));
    FNQ_CUDA_CHECK(sender_index_launch(s->edge_send.p, total, nm, s->keys.p, s->ids.p,
                                       s->send_edges.p, s->send_start.p, nullptr, &index_bytes, st));
    size_t tmp_bytes = std::max(sort_bytes, index_bytes);
    FNQ_CHECK(ensure(s->cub_tmp, tmp_bytes + 16, what, ep));
    FNQ_CUDA_CHECK(cudaMemcpyAsync(s->species.p, in->species, sizeof(int) * nm,
                                   dev ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice, st));
    a.edge_recv = s->edge_recv.p, a.edge_send = s->edge_send.p, a.edge_vec = s->edge_vec.p;
    FNQ_CUDA_CHECK(edge_list_sort_launch(a, s->cub_tmp.p, &tmp_bytes, st));
    FNQ_CUDA_CHECK(edge_list_fill_launch(a, total, st));
    tmp_bytes = std::max(sort_bytes, index_bytes);
    FNQ_CUDA_CHECK(sender_index_launch(s->edge_send.p, total, nm, s->keys.p, s->ids.p,
                                       s->send_edges.p, s->send_start.p, s->cub_tmp.p, &tmp_bytes, st));
    /* zero + scan, limits + scan, sort, fill, iota + sort + starts (a CUB sort or scan counts
     * as one) */
    s->launches_nl = 4 + (np > 0 ? 1 : 0) + (total > 0 ? 4 : 1);
    *n_edges = total;
    s->pairs_kept = !dev; /* the next call may reuse them (fnq_ctx_compute_graph_repeat) */
    s->pairs_kept_count = np;
    return run_model<REAL>(s, nl, nm, total, x, out);
}

template <typename REAL>
enum fnq_status compute_periodic(State<REAL> *s, int64_t n, const double *pos,
                                        const int32_t *species, const double *cell,
                                        const int32_t *pbc, const struct fnq_limits *lim,
                                        struct fnq_results *out, int64_t *n_edges)
{
    phase_start(s);
    FNQ_CUDA_CHECK(cudaSetDevice(s->device));
    FNQ_CHECK(fnq__check_positions(n, pos));
    struct fnq_cell_grid grid;
    FNQ_CHECK(fnq__cell_grid_build(n, pos, cell, pbc, lim->cutoff, &grid));
    cudaStream_t st = s->stream;
    int *ep = &s->epoch;
    enum fnq_status status = FNQ_STATUS_OK;
#define STEP(expr)                                                                              \
    do {                                                                                        \
        status = (expr);                                                                        \
        if (status != FNQ_STATUS_OK)                                                            \
            goto done;                                                                          \
    } while (0)
    {
        const int64_t nbins = grid.nbins;
        STEP(ensure(s->pos, 3 * n, "positions", ep));
        STEP(ensure(s->species, n, "species", ep));
        STEP(ensure(s->wrap, 3 * n, "the neighbour list", ep));
        STEP(ensure(s->bin_start, nbins + 1, "the neighbour list", ep));
        STEP(ensure(s->bin_atoms, n, "the neighbour list", ep));
        STEP(ensure(s->atom_bin, n, "the neighbour list", ep));
        STEP(ensure(s->counts, n, "the neighbour list", ep));
        STEP(ensure(s->min_d2, n, "the neighbour list", ep));
        STEP(ensure(s->recv_start, n + 1, "the neighbour list", ep));
        cudaError_t e = cudaSuccess;
        e = e ? e : cudaMemcpyAsync(s->pos.p, pos, sizeof(double) * 3 * n, cudaMemcpyHostToDevice, st);
        e = e ? e : cudaMemcpyAsync(s->species.p, species, sizeof(int) * n, cudaMemcpyHostToDevice, st);
        e = e ? e : cudaMemcpyAsync(s->wrap.p, grid.wrap, sizeof(double) * 3 * n, cudaMemcpyHostToDevice, st);
        e = e ? e : cudaMemcpyAsync(s->bin_start.p, grid.bin_start, sizeof(int64_t) * (nbins + 1), cudaMemcpyHostToDevice, st);
        e = e ? e : cudaMemcpyAsync(s->bin_atoms.p, grid.bin_atoms, sizeof(int64_t) * n, cudaMemcpyHostToDevice, st);
        e = e ? e : cudaMemcpyAsync(s->atom_bin.p, grid.atom_bin, sizeof(int64_t) * n, cudaMemcpyHostToDevice, st);
        NeighborArgs na;
        memset(&na, 0, sizeof(na));
        na.view = grid.view;
        na.view.wrap = s->wrap.p;
        na.view.bin_start = s->bin_start.p;
        na.view.bin_atoms = s->bin_atoms.p;
        na.view.atom_bin = s->atom_bin.p;
        na.pos = s->pos.p;
        na.n = n;
        na.rc2 = lim->cutoff * lim->cutoff;
        na.counts = s->counts.p;
        na.min_d2 = s->min_d2.p;
        e = e ? e : neighbor_count_launch(na, st);
        if (e != cudaSuccess) {
            status = fnq__fail(FNQ_STATUS_DEVICE, "neighbour list on the GPU: CUDA error %s",
                               cudaGetErrorString(e));
            goto done;
        }
        int64_t total = 0;
        bool bad = false;
        STEP((check_limits<REAL, int64_t>(s, n, s->counts.p, s->min_d2.p, nullptr, nullptr,
                                          nullptr, lim, &total, &bad)));
        if (bad) {
            struct fnq_graph_buf tmp;
            memset(&tmp, 0, sizeof(tmp));
            status = host_wording(fnq__graph_from_cell(&tmp, n, pos, species, cell, pbc, lim), &tmp);
            goto done;
        }
        /* the receivers' starts are in s->recv_start: fill */
        STEP(reserve<REAL>(s, n, n, total, false));
        STEP(ensure(s->keys, total, "the neighbour list", ep));
        STEP(ensure(s->ids, total, "the neighbour list", ep));
        size_t tmp_bytes = 0;
        e = sender_index_launch(s->edge_send.p, total, n, s->keys.p, s->ids.p, s->send_edges.p,
                                s->send_start.p, nullptr, &tmp_bytes, st);
        if (e == cudaSuccess)
            STEP(ensure(s->cub_tmp, tmp_bytes + 16, "the neighbour list", ep));
        na.recv_start = s->recv_start.p;
        na.edge_send = s->edge_send.p;
        na.edge_recv = s->edge_recv.p;
        na.edge_vec = s->edge_vec.p;
        e = e ? e : neighbor_fill_launch(na, st);
        e = e ? e : sender_index_launch(s->edge_send.p, total, n, s->keys.p, s->ids.p,
                                        s->send_edges.p, s->send_start.p, s->cub_tmp.p,
                                        &tmp_bytes, st);
        if (e != cudaSuccess) {
            status = fnq__fail(FNQ_STATUS_DEVICE, "neighbour list on the GPU: CUDA error %s",
                               cudaGetErrorString(e));
            goto done;
        }
        /* count, limits + scan, fill, iota + sort + starts */
        s->launches_nl = 4 + (total > 0 ? 3 : 1);
        *n_edges = total;
        const struct fnq_exchange x = {nullptr, nullptr, n, n};
        status = run_model<REAL>(s, n, n, total, &x, out);
    }
done:
#undef STEP
    fnq__cell_grid_free(&grid);
    return status;
}

#define FNQ_INSTANTIATE(REAL)                                                                   \
    template enum fnq_status compute_graph<REAL>(State<REAL> *, const struct fnq_graph *,       \
                                                 const struct fnq_exchange *,                   \
                                                 struct fnq_results *);                         \
    template enum fnq_status compute_edges<REAL>(                                               \
        State<REAL> *, const struct fnq_edge_input *, const struct fnq_limits *,                \
        const struct fnq_exchange *, struct fnq_results *, int64_t *);                          \
    template enum fnq_status compute_periodic<REAL>(                                            \
        State<REAL> *, int64_t, const double *, const int32_t *, const double *,               \
        const int32_t *, const struct fnq_limits *, struct fnq_results *, int64_t *);           \
    template enum fnq_status to_host<REAL>(State<REAL> *, void *, const void *, size_t,         \
                                           const char *);                                       \
    template enum fnq_status check_inputs<REAL>(State<REAL> *, int64_t, const double *,         \
                                                const int32_t *, int32_t, int *);
FNQ_INSTANTIATE(float)
FNQ_INSTANTIATE(double)
#undef FNQ_INSTANTIATE

} // namespace fnqcu
