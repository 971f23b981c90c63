/*
 * cuda_state.cu: a CUDA context's life: the model uploaded in float32 or float64
 * (model_upload.cu), the layer kernels configured for this GPU's shared memory, one stream;
 * device buffers sized per system and grown on demand (device_buffer.cuh).
 */
#include <algorithm>
#include <stdio.h>

#include "runtime/cuda_state.cuh"
#include "nequip/layer_backward.cuh"
#include "nequip/layer_forward.cuh"
#include "nequip/node_gemm.cuh"
#include "nequip/species_order.cuh"
#include "nequip/model_upload.cuh"

namespace fnqcu {

enum fnq_status out_of_memory(size_t bytes, const char *what)
{
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    int dev = -1;
    cudaGetDevice(&dev);
    return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY,
                     "GPU out of memory: %.3g MB needed for %s, device %d has %.3g MB free of "
                     "%.3g MB (a smaller system, float32, or more GPUs would fit)",
                     bytes / 1e6, what, dev, free_b / 1e6, total_b / 1e6);
}

/* FNQ_VERBOSE: the GPU memory of the context's buffers, by what they hold, as allocated (growth
 * slack included) and per atom of the largest system so far (the performance issue's budget) */
template <typename REAL> static void report_memory(const State<REAL> *s)
{
    struct Row {
        const char *what;
        size_t bytes;
    } rows[] = {
        {"sender features (per layer)", 0},
        {"gate inputs and norm factors (per layer)", 0},
        {"message gradients and messages", s->ga[0].bytes() + s->ga[1].bytes() +
                                               s->msg_last.bytes()},
        {"sender-gradient scratch", s->dxpart.bytes() + s->dx_busy.bytes()},
        {"node features (2 buffers)", s->h[0].bytes() + s->h[1].bytes()},
        {"feature gradients (2 buffers)", s->gp[0].bytes() + s->gp[1].bytes()},
        {"dE/dh1 rows (ghosts, lean layout, node GEMMs)", s->dh1.bytes()},
        {"edge geometry (Y, radial)", s->edge_feat.bytes() + s->edge_ggeo.bytes()},
        {"edge vectors and gradients", s->edge_vec.bytes() + s->edge_grad.bytes()},
        {"edge lists", s->recv_start.bytes() + s->edge_send.bytes() + s->edge_recv.bytes() +
                           s->send_start.bytes() + s->send_edges.bytes()},
        {"neighbour search scratch",
         s->wrap.bytes() + s->min_d2.bytes() + s->bin_start.bytes() + s->bin_atoms.bytes() +
             s->atom_bin.bytes() + s->counts.bytes() + s->keys.bytes() + s->ids.bytes() +
             s->cub_tmp.bytes() + s->limit_counts.bytes()},
        {"caller's pairs", s->pair_recv.bytes() + s->pair_send.bytes() + s->pair_owner.bytes() +
                               s->pair_shift.bytes() + s->pair_keys.bytes() + s->pair_ids.bytes() +
                               s->pair_keys_sorted.bytes() + s->pair_ids_sorted.bytes() +
                               s->pair_counts.bytes() + s->pair_min_d2.bytes()},
        {"atoms (positions, species, results)",
         s->pos.bytes() + s->species.bytes() + s->e_atom.bytes() + s->atom_energy.bytes() +
             s->forces.bytes() + s->atom_virial.bytes()},
    };
    for (size_t l = 0; l < s->h1.size(); l++) {
        rows[0].bytes += s->h1[l].bytes();
        rows[1].bytes += s->y[l].bytes() + s->rho[l].bytes();
    }
    size_t all = 0;
    for (const Row &r : rows)
        all += r.bytes;
    const double per = s->max_atoms > 0 ? 1.0 / (double)s->max_atoms : 0.0;
    fprintf(stderr, "fusednequip cuda memory: %.1f MB of buffers for up to %lld atoms (%.0f bytes "
                    "per atom, %s layout):\n", all / 1e6, (long long)s->max_atoms, all * per,
            s->lean ? "lean" : "fast");
    for (const Row &r : rows)
        if (r.bytes)
            fprintf(stderr, "  %-36s %10.1f MB %8.0f bytes/atom\n", r.what, r.bytes / 1e6,
                    r.bytes * per);
}

template <typename REAL> void state_free(State<REAL> *s)
{
    if (!s)
        return;
    cudaSetDevice(s->device);
    if (s->opt.verbose)
        report_memory(s);
    if (s->opt.timing && s->timed_calls > 0)
        fprintf(stderr, "fusednequip cuda timing: %lld calls, mean ms per call: graph %.3f, model "
                        "%.3f, results %.3f; CUDA graphs instantiated %lld\n",
                (long long)s->timed_calls, 1e3 * s->t_graph / s->timed_calls,
                1e3 * s->t_model / s->timed_calls, 1e3 * s->t_results / s->timed_calls,
                (long long)s->graphs_instantiated);
    if (s->graph)
        cudaGraphExecDestroy(s->graph);
    if (s->model_uploaded)
        model_release(&s->dm);
    if (s->stream)
        cudaStreamDestroy(s->stream);
    delete s; /* the buffers free themselves */
}

/* Edges per super-chunk of the layer kernels and their shared memory: the largest chunks
 * (multiples of 16 edges) that leave room for the blocks per multiprocessor the kernels are
 * built for, or at least fit, for each way of doing the node work the model allows
 * (s->node_gemm_ok is decided before). (A float32 model with tables on
 * some layers only sizes for two forward blocks; its table layers' kernels then have three
 * blocks' registers and two blocks' room: correct, a little slower.) */
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
    bool all_tables = true;
    for (int l = 0; l < dm.n_layers; l++)
        all_tables &= dm.layers[l].rtab != nullptr;
    /* the blocks the kernels are built for share a multiprocessor's shared memory, each with
     * what the system reserves per block (bench/NOTES.md: two blocks per SM pay off for 64-edge
     * forward chunks; v18: three for the forward's table mode without the epilogue) */
    auto largest_fitting = [&](auto bytes, int blocks) {
        auto share_of = [&](int b) {
            return std::min((size_t)smem_limit, (size_t)(smem_per_sm / b - smem_reserved));
        };
        /* a block whose epilogue alone is over the share runs one a multiprocessor anyway:
         * its edges may then have the whole multiprocessor, not 16 a chunk (the XL-like
         * NequIP's 160 KB epilogue left its layers 11 chunks of 16 edges for 4 atoms, each
         * chunk reading and writing the atoms' message rows again; bench/NOTES.md) */
        const size_t share = bytes(16) > share_of(blocks) ? share_of(1) : share_of(blocks);
        for (int ec = 256; ec >= 16; ec -= 16) /* > 64 fits in table mode only */
            if (bytes(ec) <= share)
                return ec;
        return 16;
    };
    /* gemm: the node GEMMs do the node work, and the layer kernels the edges only (no epilogue
     * scratch) */
    auto configure = [&](bool gemm) {
        KernelConfig k;
        auto fwd_bytes = [&](int ec) {
            size_t w = 0;
            for (int l = 0; l < dm.n_layers; l++)
                w = std::max(w, forward_smem_bytes<REAL>(dm.layers[l], dm.geo.lmax, ec,
                                                         s->epi_len, !gemm));
            return w;
        };
        auto bwd_bytes = [&](int nbk) {
            return [&, nbk](int ec) {
                size_t w = 0;
                for (int l = 0; l < dm.n_layers; l++)
                    w = std::max(w, backward_smem_bytes<REAL>(dm.layers[l],
                                                              dm.layers[l > 0 ? l - 1 : 0],
                                                              dm.geo.lmax, ec, s->epi_len,
                                                              !gemm, nbk));
                return w;
            };
        };
        const int fwd_blocks = forward_blocks_per_sm<REAL>(all_tables, gemm);
        k.EC_fwd = s->opt.ec_fwd ? s->opt.ec_fwd : largest_fitting(fwd_bytes, fwd_blocks);
        k.EC_bwd = s->opt.ec_bwd ? s->opt.ec_bwd : largest_fitting(bwd_bytes(kNB), 2);
        k.smem_fwd = fwd_bytes(k.EC_fwd);
        k.smem_bwd = bwd_bytes(kNB)(k.EC_bwd);
        k.fits = std::max(k.smem_fwd, k.smem_bwd) <= (size_t)smem_limit;
        k.few_fit = true;
        for (int f = 0; f < 2; f++) {
            k.EC_bwd_few[f] = s->opt.ec_bwd ? s->opt.ec_bwd : largest_fitting(bwd_bytes(1 << f), 2);
            k.smem_bwd_few[f] = bwd_bytes(1 << f)(k.EC_bwd_few[f]);
            k.few_fit &= k.smem_bwd_few[f] <= (size_t)smem_limit;
        }
        if (s->opt.verbose)
            fprintf(stderr, "fusednequip cuda: node work %s: %d/%d edges per forward/backward "
                            "super-chunk, %zu/%zu bytes of shared memory per block; 1/2 atoms a "
                            "block: %d/%d edges per backward super-chunk, %zu/%zu bytes\n",
                    gemm ? "as GEMMs" : "in the epilogues", k.EC_fwd, k.EC_bwd, k.smem_fwd,
                    k.smem_bwd, k.EC_bwd_few[0], k.EC_bwd_few[1], k.smem_bwd_few[0],
                    k.smem_bwd_few[1]);
        return k;
    };
    s->cfg[0] = configure(false);
    if (s->node_gemm_ok)
        s->cfg[1] = configure(true);
    /* a model whose epilogue would not fit still runs with the node GEMMs */
    if (!s->cfg[0].fits && !(s->node_gemm_ok && s->cfg[1].fits)) {
        const KernelConfig &k = s->cfg[s->node_gemm_ok ? 1 : 0];
        return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                         "the model needs %zu bytes of shared memory per block, more than the %d "
                         "this GPU offers",
                         std::max(k.smem_fwd, k.smem_bwd), smem_limit);
    }
    s->few_ok = all_tables;
    size_t smem_fwd_max = 0, smem_bwd_max = 0;
    for (int g = 0; g < (s->node_gemm_ok ? 2 : 1); g++) {
        const KernelConfig &k = s->cfg[g];
        if (!k.fits)
            continue;
        s->few_ok &= k.few_fit;
        smem_fwd_max = std::max(smem_fwd_max, k.smem_fwd);
        smem_bwd_max = std::max(smem_bwd_max, k.smem_bwd);
    }
    for (int g = 0; s->few_ok && g < (s->node_gemm_ok ? 2 : 1); g++)
        if (s->cfg[g].fits)
            smem_bwd_max = std::max({smem_bwd_max, s->cfg[g].smem_bwd_few[0],
                                     s->cfg[g].smem_bwd_few[1]});
    FNQ_CUDA_CHECK(forward_configure<REAL>(smem_fwd_max));
    FNQ_CUDA_CHECK(backward_configure<REAL>(smem_bwd_max));
    return FNQ_STATUS_OK;
}

/* The model on the GPU: float32 takes the radial weights from tables (radial_table.h) unless
 * FNQ_RADIAL=exact; a model whose tables would miss the error bound runs the MLP itself */
template <typename REAL>
static enum fnq_status upload_model(State<REAL> *s, const struct fnq_model *m)
{
    const struct fnq_options &o = s->opt;
    UploadChoices c;
    c.table_intervals = sizeof(REAL) == 4 && !o.radial_exact ? o.radial_intervals : 0;
    c.quads = !o.no_quads;
    c.groups = !o.no_groups;
    c.verbose = o.verbose;
    c.sh_generic = o.sh_generic;
    enum fnq_status st = model_upload<REAL>(m, c, &s->dm);
    if (st != FNQ_STATUS_OK && s->dm.table_rejected) {
        fprintf(stderr, "fusednequip cuda: %s; using the exact radial MLP\n", fnq_last_error());
        model_release<REAL>(&s->dm);
        c.table_intervals = 0;
        st = model_upload<REAL>(m, c, &s->dm);
    }
    s->model_uploaded = true; /* released in state_free, also after a failed upload */
    return st;
}

/* cudaGetDeviceCount's failure in words a user can act on: the runtime's own text for a
 * machine without a driver is "CUDA driver version is insufficient for CUDA runtime version" */
static const char *why_no_gpu(cudaError_t err)
{
    switch (err) {
    case cudaSuccess:
    case cudaErrorNoDevice:
        return "the NVIDIA driver reports no GPU on this machine";
    case cudaErrorInsufficientDriver:
        return "this machine has no NVIDIA driver, or one older than the CUDA runtime this "
               "library was built with needs";
    default:
        return cudaGetErrorString(err);
    }
}

template <typename REAL>
enum fnq_status state_init(const struct fnq_model *m, int32_t device_id,
                           const struct fnq_options *opt, State<REAL> **out)
{
    int n_dev = 0;
    cudaError_t err = cudaGetDeviceCount(&n_dev);
    if (err != cudaSuccess || n_dev == 0) {
        cudaGetLastError();
        return fnq__fail(FNQ_STATUS_DEVICE,
                         "no usable GPU: %s; run on the CPU instead (device cpu, or auto, which "
                         "falls back to the CPU)",
                         why_no_gpu(err));
    }
    if (device_id < 0 || device_id >= n_dev)
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "CUDA device %d requested, %d present (0..%d)",
                         device_id, n_dev, n_dev - 1);
    FNQ_CUDA_CHECK(cudaSetDevice(device_id));
    State<REAL> *s = new State<REAL>();
    s->device = device_id;
    cudaDeviceGetAttribute(&s->n_sm, cudaDevAttrMultiProcessorCount, device_id);
    s->opt = *opt;
    if (s->opt.skip)
        fprintf(stderr, "fusednequip: FNQ_SKIP=%d is set: the CUDA kernels leave stages out "
                        "and every result is WRONG (for timing the rest only)\n", s->opt.skip);
    if (sizeof(REAL) != 4)
        s->opt.tf32 = 0;
    enum fnq_status st = upload_model<REAL>(s, m);
    if (st == FNQ_STATUS_OK) {
        int smem_limit = 0, smem_per_sm = 0, smem_reserved = 0;
        cudaDeviceGetAttribute(&smem_limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_id);
        cudaDeviceGetAttribute(&smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor,
                               device_id);
        cudaDeviceGetAttribute(&smem_reserved, cudaDevAttrReservedSharedMemoryPerBlock, device_id);
        s->node_gemm_ok = s->opt.node_gemm != 0;
        s->node_species = node_linears_per_species(s->dm);
        st = configure_kernels<REAL>(s, smem_limit, smem_per_sm, smem_reserved);
        if (st == FNQ_STATUS_OK && s->node_gemm_ok) {
            const cudaError_t e = node_gemm_configure<REAL>(s->epi_len);
            if (e != cudaSuccess)
                st = fnq__fail(FNQ_STATUS_DEVICE, "configuring the node kernels: %s",
                               cudaGetErrorString(e));
        }
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
    if (st == FNQ_STATUS_OK)
        st = ensure(s->readback, 1, "the limits' read-back");
    if (st != FNQ_STATUS_OK) {
        state_free(s);
        return st;
    }
    *out = s;
    return FNQ_STATUS_OK;
}

/* The buffers of one system (nl owned atoms, na atoms, ne edges), each
 * through v(buffer, elements, what): counted, or grown. */
template <typename REAL, typename V>
static enum fnq_status system_buffers(State<REAL> *s, int64_t nl, int64_t na, int64_t ne,
                                      bool exchange, V &&v)
{
    const DeviceModel<REAL> &dm = s->dm;
    FNQ_CHECK(v(s->species, na, "species"));
    FNQ_CHECK(v(s->pos, 3 * na, "positions"));
    FNQ_CHECK(v(s->edge_vec, 3 * ne, "edge vectors"));
    FNQ_CHECK(v(s->edge_grad, 3 * ne, "edge gradients"));
    const size_t nf = (size_t)dm.geo.nsh + dm.geo.n_rfeat;
    FNQ_CHECK(v(s->edge_feat, nf * ne, "edge geometry"));
    FNQ_CHECK(v(s->recv_start, nl + 1, "the neighbour list"));
    FNQ_CHECK(v(s->edge_send, ne, "the neighbour list"));
    FNQ_CHECK(v(s->edge_recv, ne, "the neighbour list"));
    FNQ_CHECK(v(s->send_start, na + 1, "the neighbour list"));
    FNQ_CHECK(v(s->send_edges, ne, "the neighbour list"));
    for (int l = 0; l < dm.n_layers; l++) {
        FNQ_CHECK(v(s->h1[l], (size_t)na * dm.layers[l].in.tile_dim, "sender features"));
        /* the last layer's also holds gy for the node GEMMs (node_gemm.cu) */
        const size_t rows = l == dm.n_layers - 1 && s->node_gemm_ok ? 2 * nl : nl;
        FNQ_CHECK(v(s->y[l], rows * dm.layers[l].conv.dim, "gate inputs"));
        FNQ_CHECK(v(s->rho[l], nl, "norm factors"));
    }
    for (int k = 0; k < 2; k++) {
        FNQ_CHECK(v(s->h[k], (size_t)nl * dm.max_width, "node features"));
        FNQ_CHECK(v(s->gp[k], (size_t)nl * dm.max_width, "feature gradients"));
    }
    /* Message gradients, with one more row, of zeros: what edges without a reverse edge read
     * (tp_column.cuh). Two buffers: a backward layer reads one while its fused epilogue writes
     * the layer below's into the other; the forward pass's messages live in the second. The
     * lean layout (State::lean) has one, and the last layer's messages a buffer of their own
     * (cuda_run.cu). */
    for (int k = 0; k < (s->lean ? 1 : 2); k++)
        FNQ_CHECK(v(s->ga[k], (size_t)(nl + 1) * dm.max_mid_tiled, "message gradients"));
    if (s->lean)
        FNQ_CHECK(v(s->msg_last, (size_t)nl * dm.layers[dm.n_layers - 1].mid.dim, "messages"));
    int dx_dim = 1;
    for (int l = 0; l < dm.n_layers; l++)
        dx_dim = std::max(dx_dim, dm.layers[l].dx_dim);
    FNQ_CHECK(v(s->edge_ggeo, nf * ne, "edge geometry gradients"));
    /* the backward kernels' per-block scratch (layer_backward.cuh): twice the blocks that fit
     * on the GPU at once (two per multiprocessor), at most one per block; the ghost-sender
     * pass's blocks and slots are kGhostNB atoms */
    auto slots = [&](int64_t blocks) {
        return (int)std::max<int64_t>(1, std::min<int64_t>(4 * (int64_t)s->n_sm, blocks));
    };
    s->dx_slots = slots(nl); /* up to one atom a block (atoms_per_block, cuda_run.cu) */
    s->dx_slots_ghost = slots((na - nl + kGhostNB - 1) / kGhostNB);
    const size_t dx_rows =
        std::max((size_t)s->dx_slots * kNB, (size_t)s->dx_slots_ghost * kGhostNB);
    FNQ_CHECK(v(s->dxpart, dx_rows * dx_dim, "sender-feature gradients"));
    FNQ_CHECK(v(s->dx_busy, (size_t)std::max(s->dx_slots, s->dx_slots_ghost),
                "sender-feature gradients"));
    /* dE/dh1 rows between the edge pass and the epilogue: with ghosts, on every rank of a
     * caller's exchange (collective, also on a rank without ghosts), in the lean layout, and
     * for the node GEMMs */
    if (na > nl || exchange || s->lean || s->node_gemm_ok)
        FNQ_CHECK(v(s->dh1, (size_t)na * dm.max_in, "sender-feature gradients"));
    if (s->node_gemm_ok && s->node_species) {
        FNQ_CHECK(v(s->species_order, nl, "the atoms' species order"));
        FNQ_CHECK(v(s->order_keys, nl, "the atoms' species order"));
        FNQ_CHECK(v(s->order_ids, nl, "the atoms' species order"));
        SpeciesOrderArgs o = {nl, s->dm.n_species, nullptr, nullptr, nullptr, nullptr};
        size_t bytes = 0;
        FNQ_CUDA_CHECK(species_order_launch(o, nullptr, &bytes, s->stream));
        FNQ_CHECK(v(s->order_tmp, bytes + 16, "the atoms' species order"));
    }
    FNQ_CHECK(v(s->e_atom, nl, "atomic energies"));
    FNQ_CHECK(v(s->atom_energy, nl, "atomic energies"));
    FNQ_CHECK(v(s->forces, 3 * na, "forces"));
    FNQ_CHECK(v(s->atom_virial, 6 * na, "per-atom virials"));
    return FNQ_STATUS_OK;
}

template <typename REAL>
enum fnq_status reserve(State<REAL> *s, int64_t nl, int64_t na, int64_t ne, bool exchange)
{
    const DeviceModel<REAL> &dm = s->dm;
    int *ep = &s->epoch;
    s->max_atoms = std::max(s->max_atoms, na);
    auto grow = [&](auto &b, size_t n, const char *what) { return ensure(b, n, what, ep); };
    if (s->opt.lean_memory)
        s->lean = true;
    enum fnq_status st = system_buffers(s, nl, na, ne, exchange, grow);
    if (st == FNQ_STATUS_OUT_OF_MEMORY && !s->lean) {
        /* too large for two message-gradient buffers: the lean layout, from now on */
        fprintf(stderr, "fusednequip cuda: %lld atoms, %lld edges: the fast memory layout does not "
                        "fit (%s); using the lean one (one message-gradient buffer, each "
                        "layer's node backward as a kernel of its own)\n",
                (long long)na, (long long)ne, fnq_last_error());
        s->lean = true;
        s->ga[1].release();
        (*ep)++;
        st = system_buffers(s, nl, na, ne, exchange, grow);
    }
    if (st == FNQ_STATUS_OUT_OF_MEMORY) {
        /* one buffer's size says little of the system's: add up all of them, as allocated */
        size_t all = 0;
        system_buffers(s, nl, na, ne, exchange, [&](auto &b, size_t n, const char *) {
            all += sizeof(*b.p) * grown_size(n, b.p != nullptr);
            return FNQ_STATUS_OK;
        });
        char first[768];
        snprintf(first, sizeof(first), "%s", fnq_last_error());
        return fnq__fail(st, "%s; in all, this system's %lld atoms and %lld edges need %.3g MB of "
                             "GPU buffers",
                         first, (long long)na, (long long)ne, all / 1e6);
    }
    FNQ_CHECK(st);
    return FNQ_STATUS_OK;
}

#define FNQ_INSTANTIATE(REAL)                                                                   \
    template enum fnq_status state_init<REAL>(const struct fnq_model *, int32_t,                \
                                              const struct fnq_options *, State<REAL> **);      \
    template void state_free<REAL>(State<REAL> *);                                              \
    template enum fnq_status reserve<REAL>(State<REAL> *, int64_t, int64_t, int64_t, bool);
FNQ_INSTANTIATE(float)
FNQ_INSTANTIATE(double)
#undef FNQ_INSTANTIATE

} // namespace fnqcu
