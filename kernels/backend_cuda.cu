/*
 * backend_cuda.cu: the CUDA backend behind core/src/backend.h. Per context: the model's device
 * tables (model_upload.cu) in float32 or float64, device buffers grown on demand and reused,
 * one stream, and a CUDA graph of the model evaluation replayed while atom and edge counts
 * stay the same.
 *
 * One evaluation: (graph: our neighbour list from a host cell grid and device count/fill, or
 * the caller's pairs sorted on the device (edge_list.cu; read in place when they are device
 * arrays), then the sender index) -> per-edge geometry (Y, radial basis) -> per layer one
 * fused forward kernel -> per layer one fused backward kernel -> edge gradients dE/dr from
 * the layers' dE/dY and dE/d(basis) ->
 * force/virial assembly and deterministic totals: 2 launches per layer plus 4. With ghost
 * atoms exchanged by the caller's MPI callbacks (LAMMPS on several ranks), host round trips
 * move ghost rows between launches and the backward epilogue runs as its own kernel; ghosts
 * given by an owner map are folded onto their owners in the graph instead.
 */
#include <algorithm>
#include <chrono>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "assemble.cuh"
#include "atom_limits.cuh"
#include "common.cuh"
#include "edge_geometry.cuh"
#include "edge_list.cuh"
#include "layer_backward.cuh"
#include "layer_forward.cuh"
#include "model_upload.cuh"
#include "neighbor.cuh"

extern "C" {
#include "graph.h"
}

namespace fnqcu {

/* ---- device buffers grown on demand ---- */

struct Buffers {
    int epoch = 0; /* bumped whenever an allocation moves: recorded graphs become stale */
};

template <typename T> struct DevBuf {
    T *p = nullptr;
    size_t cap = 0;
};

template <typename T>
static enum fnq_status ensure(DevBuf<T> &b, size_t n, const char *what, int *epoch)
{
    if (n <= b.cap && b.p)
        return FNQ_STATUS_OK;
    /* headroom: MD with changing atom or edge counts does not reallocate (and re-record the
     * graph) every step; 1/8 rather than more leaves room for the largest systems */
    size_t want = std::max<size_t>(n + n / 8, 16);
    if (b.p)
        cudaFree(b.p);
    b.p = nullptr;
    b.cap = 0;
    (*epoch)++;
    cudaError_t err = cudaMalloc(&b.p, want * sizeof(T));
    if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        int dev = -1;
        cudaGetDevice(&dev);
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY,
                         "GPU out of memory: %.3g MB needed for %s, device %d has %.3g MB free of "
                         "%.3g MB (a smaller system, float32, or more GPUs would fit)",
                         want * sizeof(T) / 1e6, what, dev, free_b / 1e6, total_b / 1e6);
    }
    FNQ_CUDA_CHECK(err);
    /* zeros: the padding of tiled rows (model_dev.cuh) is read but never written. The memset
     * runs on the legacy stream, which the context's non-blocking stream does not wait for:
     * finished here (allocations are rare) */
    FNQ_CUDA_CHECK(cudaMemset(b.p, 0, want * sizeof(T)));
    FNQ_CUDA_CHECK(cudaDeviceSynchronize());
    b.cap = want;
    return FNQ_STATUS_OK;
}

template <typename T> static void release(DevBuf<T> &b)
{
    if (b.p)
        cudaFree(b.p);
    b.p = nullptr;
    b.cap = 0;
}

/* ---- per-context state ---- */

template <typename REAL> struct State {
    int device = 0;
    cudaStream_t stream = nullptr;
    DeviceModel<REAL> dm;
    int EC_fwd = 32, EC_bwd = 32, epi_len = 1;
    size_t smem_fwd = 0, smem_bwd = 0;
    int epoch = 0;

    /* graph */
    DevBuf<int> species;
    DevBuf<double> pos, edge_vec, edge_grad;
    DevBuf<REAL> edge_feat; /* [n_edges][nsh + n_rfeat]: Y and radial features (edge_geometry.cu) */
    /* [n_edges][nsh + n_rfeat]: their gradients, summed over the backward layers. They live in
     * the message buffer, which the backward pass does not use, when it is large enough (it
     * is for nequix-mp-1: 2,208 of its 5,472 floats per atom), else in edge_ggeo_own */
    double *edge_ggeo = nullptr;
    DevBuf<double> edge_ggeo_own;
    DevBuf<int64_t> recv_start, edge_send, edge_recv, send_start, send_edges;
    /* activations */
    std::vector<DevBuf<REAL>> h1, y, rho;
    DevBuf<REAL> h[2], ga[2], gp[2], dh1, msg, dxpart;
    DevBuf<double> e_atom, forces, atom_virial, atom_energy, totals;
    /* neighbour list scratch */
    DevBuf<double> wrap, min_d2;
    DevBuf<int64_t> bin_start, bin_atoms, atom_bin, counts, keys, ids;
    DevBuf<unsigned char> cub_tmp;
    /* the caller's pairs (edge_list.cu) */
    DevBuf<int64_t> pair_recv, pair_send, pair_owner;
    DevBuf<double> pair_shift;
    DevBuf<uint32_t> pair_keys, pair_ids, pair_keys_sorted, pair_ids_sorted;
    DevBuf<int32_t> pair_counts; /* degree, from owned, sent: [3][n_local] */
    DevBuf<unsigned long long> pair_min_d2; /* [n_local + 1]: the last is the first bad pair */
    /* the limits per atom (atom_limits.cu) and what the host reads back of them */
    DevBuf<int64_t> limit_counts;
    DevBuf<unsigned int> limit_bad;
    struct LimitReadback {
        int64_t n_edges;
        unsigned long long first_bad;
        unsigned int bad;
    } *readback = nullptr; /* pinned */
    /* ghost exchange */
    std::vector<REAL> host_rows;

    /* recorded model evaluation */
    cudaGraphExec_t graph = nullptr;
    int64_t graph_key[4] = {-1, -1, -1, -1};
    int launches_model = 0, launches_nl = 0;
    bool debug_layers = false;
    /* FNQ_TIMING=1: wall-clock per phase, summed over calls and printed when the context is
     * freed (graph: uploads and the neighbour list; model: the kernels; results: downloads) */
    bool timing = false;
    int64_t timed_calls = 0;
    double t_graph = 0, t_model = 0, t_results = 0;
    std::chrono::steady_clock::time_point t_mark;
    int tf32 = 0; /* FNQ_TF32=1: tensor cores (3xTF32) for the radial-MLP GEMMs */
    int skip = 0; /* FNQ_SKIP: stages left out, for timing only (kSkip* in model_dev.cuh) */
};

template <typename REAL> static void state_free(State<REAL> *s)
{
    if (!s)
        return;
    cudaSetDevice(s->device);
    if (s->timing && s->timed_calls > 0)
        fprintf(stderr, "fusednequip cuda timing: %lld calls, mean ms per call: graph %.3f, model "
                        "%.3f, results %.3f\n",
                (long long)s->timed_calls, 1e3 * s->t_graph / s->timed_calls,
                1e3 * s->t_model / s->timed_calls, 1e3 * s->t_results / s->timed_calls);
    if (s->graph)
        cudaGraphExecDestroy(s->graph);
    release(s->species), release(s->pos), release(s->edge_vec), release(s->edge_grad);
    release(s->edge_feat), release(s->edge_ggeo_own);
    release(s->recv_start), release(s->edge_send), release(s->edge_recv);
    release(s->send_start), release(s->send_edges);
    for (auto &b : s->h1) release(b);
    for (auto &b : s->y) release(b);
    for (auto &b : s->rho) release(b);
    for (int k = 0; k < 2; k++)
        release(s->h[k]), release(s->ga[k]), release(s->gp[k]);
    release(s->dh1), release(s->msg), release(s->dxpart);
    release(s->e_atom), release(s->forces), release(s->atom_virial);
    release(s->atom_energy), release(s->totals);
    release(s->wrap), release(s->min_d2), release(s->bin_start), release(s->bin_atoms);
    release(s->atom_bin), release(s->counts), release(s->keys), release(s->ids);
    release(s->cub_tmp);
    release(s->pair_recv), release(s->pair_send), release(s->pair_owner), release(s->pair_shift);
    release(s->pair_keys), release(s->pair_ids), release(s->pair_keys_sorted);
    release(s->pair_ids_sorted), release(s->pair_counts), release(s->pair_min_d2);
    release(s->limit_counts), release(s->limit_bad);
    if (s->readback)
        cudaFreeHost(s->readback);
    model_release(&s->dm);
    if (s->stream)
        cudaStreamDestroy(s->stream);
    delete s;
}

template <typename REAL>
static enum fnq_status configure_kernels(State<REAL> *s, int smem_limit, int smem_per_sm,
                                        int smem_reserved)
{
    const DeviceModel<REAL> &dm = s->dm;
    if (dm.geo.n_basis > kMaxBasis)
        return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                         "%d radial basis functions; the CUDA kernels support up to %d",
                         dm.geo.n_basis, kMaxBasis);
    for (int l = 0; l < dm.n_layers; l++)
        for (int k = 0; k < dm.layers[l].n_mlp; k++)
            if (dm.layers[l].pad[k] + 8 > kRoundSpan + 8)
                return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                                 "layer %d: radial MLP width %d; the CUDA kernels support up to %d",
                                 l, dm.layers[l].size[k], kRoundSpan);
    s->epi_len = std::max({dm.max_in, dm.max_conv, dm.max_out, 1});
    for (int r = 0; r <= dm.n_readout; r++)
        s->epi_len = std::max(s->epi_len, dm.readout_irreps[r].dim);
    /* the largest super-chunks (multiples of 16 edges) that leave room for two blocks per
     * multiprocessor, or at least fit */
    auto fwd_bytes = [&](int ec) {
        size_t w = 0;
        for (int l = 0; l < dm.n_layers; l++)
            w = std::max(w, forward_smem_bytes<REAL>(dm.layers[l], dm.geo.lmax, ec, s->epi_len));
        return w;
    };
    auto bwd_bytes = [&](int ec) {
        size_t w = 0;
        for (int l = 0; l < dm.n_layers; l++)
            w = std::max(w, backward_smem_bytes<REAL>(dm.layers[l], dm.layers[l > 0 ? l - 1 : 0],
                                                      dm.geo.lmax, ec, s->epi_len));
        return w;
    };
    /* two blocks share a multiprocessor's shared memory, each with what the system reserves
     * per block (sm_90: 2 x (115,232 + 1,024) of 233,472 bytes lets 64-edge forward chunks run
     * two blocks per SM: 7.7 -> 7.2 ms per large forward layer at 8000 Si, bench/NOTES.md) */
    const size_t two =
        std::min((size_t)smem_limit, (size_t)(smem_per_sm / 2 - smem_reserved));
    s->EC_fwd = 16;
    for (int ec = 256; ec >= 16; ec -= 16) /* > 64 fits in table mode only */
        if (fwd_bytes(ec) <= two) {
            s->EC_fwd = ec;
            break;
        }
    s->EC_bwd = 16;
    for (int ec = 256; ec >= 16; ec -= 16)
        if (bwd_bytes(ec) <= two) {
            s->EC_bwd = ec;
            break;
        }
    /* measurement overrides (bench/NOTES.md): FNQ_EC_FWD / FNQ_EC_BWD = edges per super-chunk */
    for (auto [name, ec] : {std::pair<const char *, int *>{"FNQ_EC_FWD", &s->EC_fwd},
                            std::pair<const char *, int *>{"FNQ_EC_BWD", &s->EC_bwd}})
        if (const char *v = getenv(name)) {
            const int want = atoi(v);
            if (want >= 16 && want <= 256 && want % 16 == 0)
                *ec = want;
        }
    s->smem_fwd = fwd_bytes(s->EC_fwd);
    s->smem_bwd = bwd_bytes(s->EC_bwd);
    if (getenv("FNQ_VERBOSE"))
        fprintf(stderr, "fusednequip cuda: %d/%d edges per forward/backward super-chunk, %zu/%zu "
                        "bytes of shared memory per block\n",
                s->EC_fwd, s->EC_bwd, s->smem_fwd, s->smem_bwd);
    if (s->smem_fwd > (size_t)smem_limit || s->smem_bwd > (size_t)smem_limit)
        return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                         "the model needs %zu bytes of shared memory per block, more than the %d "
                         "this GPU offers",
                         std::max(s->smem_fwd, s->smem_bwd), smem_limit);
    FNQ_CUDA_CHECK(forward_configure<REAL>(s->smem_fwd));
    FNQ_CUDA_CHECK(backward_configure<REAL>(s->smem_bwd));
    return FNQ_STATUS_OK;
}

template <typename REAL>
static enum fnq_status state_init(const struct fnq_model *m, int32_t device_id, void **out)
{
    int n_dev = 0;
    cudaError_t err = cudaGetDeviceCount(&n_dev);
    if (err != cudaSuccess || n_dev == 0) {
        cudaGetLastError();
        return fnq__fail(FNQ_STATUS_DEVICE, "no CUDA device available (%s)",
                         err == cudaSuccess ? "none found" : cudaGetErrorString(err));
    }
    if (device_id < 0 || device_id >= n_dev)
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "CUDA device %d requested, %d present (0..%d)",
                         device_id, n_dev, n_dev - 1);
    FNQ_CUDA_CHECK(cudaSetDevice(device_id));
    State<REAL> *s = new State<REAL>();
    s->device = device_id;
    s->debug_layers = getenv("FNQ_DEBUG_LAYERS") != nullptr;
    s->timing = getenv("FNQ_TIMING") && strcmp(getenv("FNQ_TIMING"), "1") == 0;
    if (const char *v = getenv("FNQ_SKIP")) {
        s->skip = atoi(v);
        if (s->skip)
            fprintf(stderr, "fusednequip: FNQ_SKIP=%d is set: the CUDA kernels leave stages out "
                            "and every result is WRONG (for timing the rest only)\n", s->skip);
    }
    s->tf32 = sizeof(REAL) == 4 && getenv("FNQ_TF32") && strcmp(getenv("FNQ_TF32"), "1") == 0;
    /* float32: the radial weights from tables (radial_table.h) unless FNQ_RADIAL=exact; a
     * model whose tables would miss the error bound runs the MLP itself */
    int table_intervals = 0;
    const char *radial = getenv("FNQ_RADIAL");
    if (sizeof(REAL) == 4 && !(radial && strcmp(radial, "exact") == 0)) {
        table_intervals = 2048;
        if (const char *v = getenv("FNQ_RADIAL_INTERVALS"))
            table_intervals = std::max(16, atoi(v));
    }
    enum fnq_status st = model_upload<REAL>(m, table_intervals, &s->dm);
    if (st != FNQ_STATUS_OK && s->dm.table_rejected) {
        fprintf(stderr, "fusednequip cuda: %s; using the exact radial MLP\n", fnq_last_error());
        model_release<REAL>(&s->dm);
        st = model_upload<REAL>(m, 0, &s->dm);
    }
    if (st == FNQ_STATUS_OK) {
        int smem_limit = 0;
        int smem_per_sm = 0, smem_reserved = 0;
        cudaDeviceGetAttribute(&smem_limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_id);
        cudaDeviceGetAttribute(&smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor,
                               device_id);
        cudaDeviceGetAttribute(&smem_reserved, cudaDevAttrReservedSharedMemoryPerBlock, device_id);
        st = configure_kernels<REAL>(s, smem_limit, smem_per_sm, smem_reserved);
    }
    if (st == FNQ_STATUS_OK) {
        cudaError_t e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking);
        if (e != cudaSuccess)
            st = fnq__fail(FNQ_STATUS_DEVICE, "cudaStreamCreate: %s", cudaGetErrorString(e));
    }
    if (st == FNQ_STATUS_OK) {
        s->h1.resize(s->dm.n_layers);
        s->y.resize(s->dm.n_layers);
        s->rho.resize(s->dm.n_layers);
        st = ensure(s->totals, 8, "totals", &s->epoch);
    }
    if (st != FNQ_STATUS_OK) {
        state_free(s);
        return st;
    }
    *out = s;
    return FNQ_STATUS_OK;
}

/* Device buffers for n_local owned atoms, n_all with ghosts, n_edges edges. */
template <typename REAL>
static enum fnq_status reserve(State<REAL> *s, int64_t nl, int64_t na, int64_t ne,
                               bool exchange)
{
    const DeviceModel<REAL> &dm = s->dm;
    int *ep = &s->epoch;
    FNQ_CHECK(ensure(s->species, na, "species", ep));
    FNQ_CHECK(ensure(s->pos, 3 * na, "positions", ep));
    FNQ_CHECK(ensure(s->edge_vec, 3 * ne, "edge vectors", ep));
    FNQ_CHECK(ensure(s->edge_grad, 3 * ne, "edge gradients", ep));
    const size_t nf = (size_t)dm.geo.nsh + dm.geo.n_rfeat;
    FNQ_CHECK(ensure(s->edge_feat, nf * ne, "edge geometry", ep));
    FNQ_CHECK(ensure(s->recv_start, nl + 1, "the neighbour list", ep));
    FNQ_CHECK(ensure(s->edge_send, ne, "the neighbour list", ep));
    FNQ_CHECK(ensure(s->edge_recv, ne, "the neighbour list", ep));
    FNQ_CHECK(ensure(s->send_start, na + 1, "the neighbour list", ep));
    FNQ_CHECK(ensure(s->send_edges, ne, "the neighbour list", ep));
    for (int l = 0; l < dm.n_layers; l++) {
        FNQ_CHECK(ensure(s->h1[l], (size_t)na * dm.layers[l].in.tile_dim, "sender features", ep));
        FNQ_CHECK(ensure(s->y[l], (size_t)nl * dm.layers[l].conv.dim, "gate inputs", ep));
        FNQ_CHECK(ensure(s->rho[l], nl, "norm factors", ep));
    }
    for (int k = 0; k < 2; k++) {
        FNQ_CHECK(ensure(s->h[k], (size_t)nl * dm.max_width, "node features", ep));
        /* one more row, of zeros: what edges without a reverse edge read (tp_column.cuh) */
        FNQ_CHECK(ensure(s->ga[k], (size_t)(nl + 1) * dm.max_mid_tiled, "message gradients", ep));
        FNQ_CHECK(ensure(s->gp[k], (size_t)nl * dm.max_width, "feature gradients", ep));
    }
    int dx_dim = 1;
    for (int l = 0; l < dm.n_layers; l++)
        dx_dim = std::max(dx_dim, dm.layers[l].dx_dim);
    FNQ_CHECK(ensure(s->msg, (size_t)nl * dm.max_mid, "messages", ep));
    if (sizeof(double) * nf * ne <= sizeof(REAL) * s->msg.cap) {
        s->edge_ggeo = reinterpret_cast<double *>(s->msg.p);
    } else {
        FNQ_CHECK(ensure(s->edge_ggeo_own, nf * ne, "edge geometry gradients", ep));
        s->edge_ggeo = s->edge_ggeo_own.p;
    }
    FNQ_CHECK(ensure(s->dxpart, (size_t)na * dx_dim, "sender-feature gradients", ep));
    /* dE/dh1 rows between the edge pass and the epilogue: with ghosts, and on every rank of a
     * caller's exchange (collective, also on a rank without ghosts) */
    if (na > nl || exchange)
        FNQ_CHECK(ensure(s->dh1, (size_t)na * dm.max_in, "sender-feature gradients", ep));
    /* the column passes index sender features and message gradients with 32-bit element
     * offsets (tp_column.cuh); checked after the allocations, so that a system too large for
     * the GPU's memory is reported as that */
    int64_t widest = dm.max_mid_tiled;
    for (int l = 0; l < dm.n_layers; l++)
        widest = std::max<int64_t>(widest, dm.layers[l].in.tile_dim);
    if ((na + 1) * widest > (int64_t)UINT32_MAX)
        return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                         "%lld atoms x %lld values per row exceed the CUDA kernels' 32-bit "
                         "feature indices (at most %lld atoms per GPU for this model; use more "
                         "GPUs or ranks)",
                         (long long)na, (long long)widest, (long long)(UINT32_MAX / widest));
    FNQ_CHECK(ensure(s->e_atom, nl, "atomic energies", ep));
    FNQ_CHECK(ensure(s->atom_energy, nl, "atomic energies", ep));
    FNQ_CHECK(ensure(s->forces, 3 * na, "forces", ep));
    FNQ_CHECK(ensure(s->atom_virial, 6 * na, "per-atom virials", ep));
    return FNQ_STATUS_OK;
}

/* ---- ghost exchange through the caller's callbacks (host rows) ---- */

template <typename REAL>
static enum fnq_status exchange(State<REAL> *s, const struct fnq_exchange *x, REAL *rows, int width,
                                bool forward)
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
    const int64_t first = forward ? nl : 0, count = forward ? na - nl : nl;
    FNQ_CUDA_CHECK(cudaMemcpyAsync(rows + first * width, s->host_rows.data() + (size_t)first * width,
                                   sizeof(REAL) * count * width, cudaMemcpyHostToDevice,
                                   s->stream));
    return FNQ_STATUS_OK;
}

/* ---- the model evaluation ---- */

/* FNQ_DEBUG_LAYERS: the same per-layer sums the CPU backend prints (rows x width, stride; a
 * tiled row's zero padding adds nothing to the sum, only to the count) */
template <typename REAL>
static void debug_layer_sums(State<REAL> *s, int layer, int64_t rows, const char *what,
                             const REAL *dev, int64_t stride, int64_t width)
{
    std::vector<REAL> h(rows * stride);
    cudaStreamSynchronize(s->stream);
    cudaMemcpy(h.data(), dev, sizeof(REAL) * rows * stride, cudaMemcpyDeviceToHost);
    double sum = 0.0;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t k = 0; k < width; k++)
            sum += fabs((double)h[i * stride + k]);
    fprintf(stderr, "fusednequip debug (cuda): layer %d %s sum|.| = %.12e (%lld values)\n", layer,
            what, sum, (long long)(rows * width));
}

template <typename REAL>
static enum fnq_status enqueue_model(State<REAL> *s, int64_t nl, int64_t na, int64_t ne,
                                     const struct fnq_exchange *x)
{
    DeviceModel<REAL> &dm = s->dm;
    const int L = dm.n_layers;
    /* A caller's comm is collective: every layer exchanges, also on a rank without ghosts,
     * whose owned rows may still receive gradients from other ranks' ghosts. */
    const bool ghosts = fnq__exchange_needed(x);
    s->launches_model = 0;
    if (ne > 0) {
        FNQ_CUDA_CHECK(edge_features_launch<REAL>(dm.geo, s->edge_vec.p, ne, s->edge_feat.p,
                                                  s->stream));
        s->launches_model++;
    }
    int hc = 0, gc = 0;
    for (int l = 0; l < L; l++) {
        ForwardArgs<REAL> a;
        memset(&a, 0, sizeof(a));
        a.L = dm.layers[l];
        a.last = l == L - 1;
        if (!a.last)
            a.next = dm.layers[l + 1];
        a.geo = dm.geo;
        a.layer = l;
        a.n_local = (int)nl;
        a.recv_start = s->recv_start.p;
        a.edge_send = s->edge_send.p;
        a.edge_recv = s->edge_recv.p;
        a.A = s->msg.p;
        a.a_stride = dm.max_mid;
        a.species = s->species.p;
        a.edge_feat = s->edge_feat.p;
        a.h1 = s->h1[l].p;
        a.h1_table = dm.h1_table;
        a.hin = s->h[hc].p;
        a.embed = dm.embed;
        a.W = dm.max_width;
        a.epi_len = s->epi_len;
        a.hout = s->h[hc ^ 1].p;
        a.h1_next = a.last ? nullptr : s->h1[l + 1].p;
        a.y_save = s->y[l].p;
        a.rho_save = s->rho[l].p;
        a.n_readout = dm.n_readout;
        for (int r = 0; r < dm.n_readout; r++)
            a.readout[r] = dm.readout[r];
        for (int r = 0; r <= dm.n_readout; r++)
            a.readout_irreps[r] = dm.readout_irreps[r];
        a.e_atom = s->e_atom.p;
        a.grad_top = dm.grad_top;
        a.ga_out = s->ga[gc].p;
        a.ga_stride = dm.max_mid_tiled;
        a.gpart_out = s->gp[gc].p;
        a.EC = s->EC_fwd;
        a.tf32 = s->tf32;
        a.skip = s->skip;
        FNQ_CUDA_CHECK(layer_forward_launch<REAL>(a, s->smem_fwd, s->stream));
        s->launches_model++;
        if (!a.last && ghosts)
            FNQ_CHECK(exchange<REAL>(s, x, s->h1[l + 1].p, dm.layers[l + 1].in.tile_dim, true));
        if (s->debug_layers) {
            debug_layer_sums(s, l, nl, "gate input y", s->y[l].p, dm.layers[l].conv.dim,
                             dm.layers[l].conv.dim);
            if (!a.last)
                debug_layer_sums(s, l + 1, nl, "sender features h1", s->h1[l + 1].p,
                                 dm.layers[l + 1].in.tile_dim, dm.layers[l + 1].in.tile_dim);
        }
        hc ^= 1;
    }
    for (int l = L - 1; l >= 0; l--) {
        BackwardArgs<REAL> b;
        memset(&b, 0, sizeof(b));
        b.L = dm.layers[l];
        if (l > 0)
            b.prev = dm.layers[l - 1];
        b.geo = dm.geo;
        b.layer = l;
        b.n_local = (int)nl;
        b.n_all = (int)na;
        b.fused_epilogue = !ghosts;
        b.dxpart = s->dxpart.p;
        b.dx_stride = std::max(1, dm.layers[l].dx_dim);
        b.recv_start = s->recv_start.p;
        b.edge_send = s->edge_send.p;
        b.species = s->species.p;
        b.edge_feat = s->edge_feat.p;
        b.send_start = s->send_start.p;
        b.send_edges = s->send_edges.p;
        b.edge_recv = s->edge_recv.p;
        b.h1 = s->h1[l].p;
        b.h1_table = dm.h1_table;
        b.ga = s->ga[gc].p;
        b.ga_stride = dm.max_mid_tiled;
        b.edge_ggeo = s->edge_ggeo;
        b.first_ggeo = l == L - 1;
        b.dh1 = s->dh1.p;
        b.gpart_in = s->gp[gc].p;
        b.y_prev = l > 0 ? s->y[l - 1].p : nullptr;
        b.rho_prev = l > 0 ? s->rho[l - 1].p : nullptr;
        b.ga_out = s->ga[gc ^ 1].p;
        b.gpart_out = s->gp[gc ^ 1].p;
        b.W = dm.max_width;
        b.epi_len = s->epi_len;
        b.EC = s->EC_bwd;
        b.tf32 = s->tf32;
        b.skip = s->skip;
        if (s->debug_layers)
            debug_layer_sums(s, l, nl, "message gradient dE/dA", s->ga[gc].p, dm.max_mid_tiled,
                             dm.layers[l].mid.tile_dim);
        FNQ_CUDA_CHECK(layer_backward_launch<REAL>(b, s->smem_bwd, s->stream));
        s->launches_model++;
        if (l > 0 && ghosts) {
            FNQ_CUDA_CHECK(ghost_sender_launch<REAL>(b, s->smem_bwd, s->stream));
            s->launches_model++;
            FNQ_CHECK(exchange<REAL>(s, x, s->dh1.p, dm.layers[l].in.dim, false));
            FNQ_CUDA_CHECK(backward_epilogue_launch<REAL>(b, s->smem_bwd, s->stream));
            s->launches_model++;
        }
        gc ^= 1;
    }
    if (ne > 0) {
        FNQ_CUDA_CHECK(edge_grad_launch(dm.geo, s->edge_vec.p, ne, s->edge_ggeo,
                                        s->edge_grad.p, s->stream));
        s->launches_model++;
    }
    AssembleArgs as;
    as.n_local = nl;
    as.n_all = na;
    as.recv_start = s->recv_start.p;
    as.send_start = s->send_start.p;
    as.send_edges = s->send_edges.p;
    as.edge_grad = s->edge_grad.p;
    as.edge_vec = s->edge_vec.p;
    as.e_atom = s->e_atom.p;
    as.species = s->species.p;
    as.energy_scale = dm.energy_scale;
    as.energy_shift = dm.energy_shift;
    as.forces = s->forces.p;
    as.atom_virial = s->atom_virial.p;
    as.atom_energy = s->atom_energy.p;
    as.totals = s->totals.p;
    FNQ_CUDA_CHECK(assemble_launch(as, s->stream));
    s->launches_model += (na > 0) ? 2 : 1;
    return FNQ_STATUS_OK;
}

/* FNQ_TIMING: close the phase that began at the last mark (after the stream drains) */
template <typename REAL> static void phase_end(State<REAL> *s, double *acc)
{
    if (!s->timing)
        return;
    cudaStreamSynchronize(s->stream);
    const auto now = std::chrono::steady_clock::now();
    *acc += std::chrono::duration<double>(now - s->t_mark).count();
    s->t_mark = now;
}

template <typename REAL> static void phase_start(State<REAL> *s)
{
    if (s->timing)
        s->t_mark = std::chrono::steady_clock::now();
}

/* Run the model (through a recorded graph when possible) and fetch the results. */
template <typename REAL>
static enum fnq_status run_model(State<REAL> *s, int64_t nl, int64_t na, int64_t ne,
                                 const struct fnq_exchange *x, struct fnq_results *out)
{
    phase_end(s, &s->t_graph);
    /* the caller's exchange callbacks work on the host between kernels: not recordable */
    const bool can_record =
        !x->comm && !s->debug_layers && getenv("FNQ_NO_CUDA_GRAPH") == nullptr;
    if (can_record) {
        const int64_t key[4] = {nl, na, ne, s->epoch};
        if (!s->graph || memcmp(key, s->graph_key, sizeof(key)) != 0) {
            if (s->graph) {
                cudaGraphExecDestroy(s->graph);
                s->graph = nullptr;
            }
            cudaGraph_t g;
            FNQ_CUDA_CHECK(cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
            enum fnq_status st = enqueue_model<REAL>(s, nl, na, ne, x);
            cudaError_t end = cudaStreamEndCapture(s->stream, &g);
            FNQ_CHECK(st);
            FNQ_CUDA_CHECK(end);
            cudaError_t inst = cudaGraphInstantiate(&s->graph, g, 0);
            cudaGraphDestroy(g);
            FNQ_CUDA_CHECK(inst);
            memcpy(s->graph_key, key, sizeof(key));
        }
        FNQ_CUDA_CHECK(cudaGraphLaunch(s->graph, s->stream));
    } else {
        FNQ_CHECK(enqueue_model<REAL>(s, nl, na, ne, x));
    }
    phase_end(s, &s->t_model);
    double totals[7];
    FNQ_CUDA_CHECK(cudaMemcpyAsync(totals, s->totals.p, sizeof(totals), cudaMemcpyDeviceToHost,
                                   s->stream));
    if (out->forces)
        FNQ_CUDA_CHECK(cudaMemcpyAsync(out->forces, s->forces.p, sizeof(double) * 3 * na,
                                       cudaMemcpyDeviceToHost, s->stream));
    if (out->atom_energies)
        FNQ_CUDA_CHECK(cudaMemcpyAsync(out->atom_energies, s->atom_energy.p, sizeof(double) * nl,
                                       cudaMemcpyDeviceToHost, s->stream));
    if (out->atom_virial)
        FNQ_CUDA_CHECK(cudaMemcpyAsync(out->atom_virial, s->atom_virial.p, sizeof(double) * 6 * na,
                                       cudaMemcpyDeviceToHost, s->stream));
    FNQ_CUDA_CHECK(cudaStreamSynchronize(s->stream));
    phase_end(s, &s->t_results);
    s->timed_calls++;
    out->energy = totals[0];
    memcpy(out->virial, totals + 1, sizeof(out->virial));
    return FNQ_STATUS_OK;
}

/* ---- backend entry points ---- */

template <typename REAL>
static enum fnq_status compute_graph(State<REAL> *s, const struct fnq_graph *g,
                                     const struct fnq_exchange *x, struct fnq_results *out)
{
    phase_start(s);
    FNQ_CUDA_CHECK(cudaSetDevice(s->device));
    const int64_t nl = g->n_local, na = g->n_all, ne = g->n_edges;
    FNQ_CHECK(reserve<REAL>(s, nl, na, ne, x->comm != nullptr));
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
    if (!s->readback)
        FNQ_CUDA_CHECK(cudaMallocHost(&s->readback, sizeof(*s->readback)));
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
    FNQ_CUDA_CHECK(cudaMemcpyAsync(&s->readback->n_edges, s->recv_start.p + n, sizeof(int64_t), d2h, st));
    FNQ_CUDA_CHECK(cudaMemcpyAsync(&s->readback->bad, s->limit_bad.p, sizeof(unsigned int), d2h, st));
    s->readback->first_bad = ~0ull;
    if (first_bad)
        FNQ_CUDA_CHECK(cudaMemcpyAsync(&s->readback->first_bad, first_bad, sizeof(unsigned long long), d2h, st));
    FNQ_CUDA_CHECK(cudaStreamSynchronize(st));
    *total = s->readback->n_edges;
    *bad = s->readback->bad != 0 || s->readback->first_bad != ~0ull;
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
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "fnq_ctx_compute_graph_device: %s: %s", what,
                         cudaGetErrorString(e));
    }
    const bool here = at.type == cudaMemoryTypeDevice && at.device == device;
    if (here || at.type == cudaMemoryTypeManaged)
        return FNQ_STATUS_OK;
    return fnq__fail(FNQ_STATUS_INVALID_ARG,
                     "fnq_ctx_compute_graph_device: %s is not memory of CUDA device %d (%s)", what,
                     device,
                     at.type == cudaMemoryTypeDevice ? "it is another device's" : "host memory");
}

template <typename REAL>
static enum fnq_status to_host(State<REAL> *s, void *dst, const void *src, size_t bytes,
                               const char *what)
{
    FNQ_CUDA_CHECK(cudaSetDevice(s->device));
    FNQ_CHECK(check_device_array(s->device, src, what));
    /* cudaMemcpy runs on the legacy default stream: after the caller's work queued there */
    FNQ_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
    return FNQ_STATUS_OK;
}

/* The caller's device positions and species checked where they are (atom_limits.cu): only a
 * flag comes back; on a failed check the context copies them to word the message */
template <typename REAL>
static enum fnq_status check_inputs(State<REAL> *s, int64_t n, const double *pos,
                                    const int32_t *species, int32_t n_species, int *ok)
{
    *ok = 1;
    if (n == 0)
        return FNQ_STATUS_OK;
    FNQ_CUDA_CHECK(cudaSetDevice(s->device));
    FNQ_CHECK(check_device_array(s->device, pos, "positions"));
    FNQ_CHECK(check_device_array(s->device, species, "species"));
    /* our stream does not wait for the legacy default stream, where the caller's work is */
    FNQ_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
    FNQ_CHECK(ensure(s->limit_bad, 1, "input checks", &s->epoch));
    if (!s->readback)
        FNQ_CUDA_CHECK(cudaMallocHost(&s->readback, sizeof(*s->readback)));
    FNQ_CUDA_CHECK(atom_inputs_launch(n, pos, species, n_species, s->limit_bad.p, s->stream));
    FNQ_CUDA_CHECK(cudaMemcpyAsync(&s->readback->bad, s->limit_bad.p, sizeof(unsigned int),
                                   cudaMemcpyDeviceToHost, s->stream));
    FNQ_CUDA_CHECK(cudaStreamSynchronize(s->stream));
    *ok = s->readback->bad == 0;
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

/* The host builder's message for input the GPU found bad (device inputs copied first). */
static enum fnq_status edges_message(const struct fnq_edge_input *in, const struct fnq_limits *lim)
{
    HostPairs h;
    struct fnq_edge_input host = *in;
    if (in->on_device)
        FNQ_CHECK(download_pairs(in, &h, &host));
    struct fnq_graph_buf tmp;
    memset(&tmp, 0, sizeof(tmp));
    return host_wording(fnq__graph_from_edges(&tmp, host.n_local, host.n_all, host.pos,
                                              host.species, host.n_edges, host.recv, host.send,
                                              host.shift, host.ghost_owner, lim),
                        &tmp);
}

/* The caller's pairs, sorted and indexed on the GPU (edge_list.cuh): the same graph as
 * fnq__graph_from_edges builds on the host. Device inputs (in->on_device) are read where they
 * are: no uploads but the species, which the recorded model graph reads from s->species. */
template <typename REAL>
static enum fnq_status compute_edges(State<REAL> *s, const struct fnq_edge_input *in,
                                     const struct fnq_limits *lim, const struct fnq_exchange *x,
                                     struct fnq_results *out, int64_t *n_edges)
{
    phase_start(s);
    FNQ_CUDA_CHECK(cudaSetDevice(s->device));
    const int64_t nl = in->n_local, na = in->n_all, np = in->n_edges;
    const int64_t nm = in->ghost_owner ? nl : na; /* the model's atoms: ghosts folded or not */
    const bool dev = in->on_device;
    if (dev)
        FNQ_CHECK(check_device_pairs(s, in));
    else
        FNQ_CHECK(fnq__check_positions(na, in->pos));
    int *ep = &s->epoch;
    cudaStream_t st = s->stream;
    const char *what = "the caller's neighbour list";
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
    if (!dev) {
        FNQ_CUDA_CHECK(cudaMemcpyAsync(s->pos.p, in->pos, sizeof(double) * 3 * na, cudaMemcpyHostToDevice, st));
        FNQ_CUDA_CHECK(cudaMemcpyAsync(s->pair_recv.p, in->recv, sizeof(int64_t) * np, cudaMemcpyHostToDevice, st));
        FNQ_CUDA_CHECK(cudaMemcpyAsync(s->pair_send.p, in->send, sizeof(int64_t) * np, cudaMemcpyHostToDevice, st));
        if (in->shift)
            FNQ_CUDA_CHECK(cudaMemcpyAsync(s->pair_shift.p, in->shift, sizeof(double) * 3 * np, cudaMemcpyHostToDevice, st));
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
        a.shift = in->shift ? s->pair_shift.p : nullptr;
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
        return edges_message(in, lim);

    FNQ_CHECK(reserve<REAL>(s, nl, nm, total, x->comm != nullptr));
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
    return run_model<REAL>(s, nl, nm, total, x, out);
}

template <typename REAL>
static enum fnq_status compute_periodic(State<REAL> *s, int64_t n, const double *pos,
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
        struct fnq_exchange x = {nullptr, n, n};
        status = run_model<REAL>(s, n, n, total, &x, out);
    }
done:
#undef STEP
    fnq__cell_grid_free(&grid);
    return status;
}

} // namespace fnqcu

/* ---- the vtable ---- */

using namespace fnqcu;

struct CudaBackend {
    enum fnq_dtype dtype;
    void *impl;
};

static enum fnq_status cuda_init(const struct fnq_model *m, enum fnq_dtype dtype, int32_t device_id,
                                 void **out)
{
    CudaBackend *b = new CudaBackend{dtype, nullptr};
    enum fnq_status st = dtype == FNQ_DTYPE_F64 ? state_init<double>(m, device_id, &b->impl)
                                                : state_init<float>(m, device_id, &b->impl);
    if (st != FNQ_STATUS_OK) {
        delete b;
        return st;
    }
    *out = b;
    return FNQ_STATUS_OK;
}

static void cuda_free(void *p)
{
    CudaBackend *b = static_cast<CudaBackend *>(p);
    if (!b)
        return;
    if (b->dtype == FNQ_DTYPE_F64)
        state_free(static_cast<State<double> *>(b->impl));
    else
        state_free(static_cast<State<float> *>(b->impl));
    delete b;
}

static enum fnq_status cuda_compute(void *p, const struct fnq_graph *g, const struct fnq_exchange *x,
                                    struct fnq_results *out)
{
    CudaBackend *b = static_cast<CudaBackend *>(p);
    return b->dtype == FNQ_DTYPE_F64 ? compute_graph(static_cast<State<double> *>(b->impl), g, x, out)
                                     : compute_graph(static_cast<State<float> *>(b->impl), g, x, out);
}

static enum fnq_status cuda_compute_periodic(void *p, int64_t n, const double *pos,
                                             const int32_t *species, const double *cell,
                                             const int32_t *pbc, const struct fnq_limits *lim,
                                             struct fnq_results *out, int64_t *n_edges)
{
    CudaBackend *b = static_cast<CudaBackend *>(p);
    return b->dtype == FNQ_DTYPE_F64
               ? compute_periodic(static_cast<State<double> *>(b->impl), n, pos, species, cell, pbc,
                                  lim, out, n_edges)
               : compute_periodic(static_cast<State<float> *>(b->impl), n, pos, species, cell, pbc,
                                  lim, out, n_edges);
}

static enum fnq_status cuda_compute_edges(void *p, const struct fnq_edge_input *in,
                                          const struct fnq_limits *lim, const struct fnq_exchange *x,
                                          struct fnq_results *out, int64_t *n_edges)
{
    CudaBackend *b = static_cast<CudaBackend *>(p);
    return b->dtype == FNQ_DTYPE_F64
               ? compute_edges(static_cast<State<double> *>(b->impl), in, lim, x, out, n_edges)
               : compute_edges(static_cast<State<float> *>(b->impl), in, lim, x, out, n_edges);
}

static enum fnq_status cuda_to_host(void *p, void *dst, const void *src, size_t bytes,
                                    const char *what)
{
    CudaBackend *b = static_cast<CudaBackend *>(p);
    return b->dtype == FNQ_DTYPE_F64
               ? to_host(static_cast<State<double> *>(b->impl), dst, src, bytes, what)
               : to_host(static_cast<State<float> *>(b->impl), dst, src, bytes, what);
}

static enum fnq_status cuda_check_inputs(void *p, int64_t n, const double *pos,
                                         const int32_t *species, int32_t n_species, int *ok)
{
    CudaBackend *b = static_cast<CudaBackend *>(p);
    return b->dtype == FNQ_DTYPE_F64
               ? check_inputs(static_cast<State<double> *>(b->impl), n, pos, species, n_species, ok)
               : check_inputs(static_cast<State<float> *>(b->impl), n, pos, species, n_species, ok);
}

static void cuda_launch_counts(void *p, int32_t *model, int32_t *nl)
{
    CudaBackend *b = static_cast<CudaBackend *>(p);
    if (b->dtype == FNQ_DTYPE_F64) {
        *model = static_cast<State<double> *>(b->impl)->launches_model;
        *nl = static_cast<State<double> *>(b->impl)->launches_nl;
    } else {
        *model = static_cast<State<float> *>(b->impl)->launches_model;
        *nl = static_cast<State<float> *>(b->impl)->launches_nl;
    }
}

static const struct fnq_backend_i backend_cuda = {"cuda",        cuda_init,
                                                  cuda_free,     cuda_compute,
                                                  cuda_compute_periodic, cuda_compute_edges,
                                                  cuda_launch_counts, cuda_to_host,
                                                  cuda_check_inputs};

static int32_t cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

/* registered by core/src/backend_registry.c in builds with the CUDA backend */
#include "backend_cuda.h"

extern "C" const struct fnq_backend_reg *fnq__backend_cuda_reg(void)
{
    static const struct fnq_backend_reg reg = {FNQ_DEVICE_CUDA, &backend_cuda, cuda_device_count};
    return &reg;
}
