/*
 * cuda_run.cu: the model evaluation on a graph in the context's buffers: per-edge geometry
 * (Y, radial basis) -> per layer one fused forward kernel -> per layer one fused backward
 * kernel -> edge gradients dE/dr from the layers' dE/dY and dE/d(basis) -> force/virial
 * assembly and deterministic totals: 2 launches per layer plus 4. With the node GEMMs (where
 * the model suits them and the atoms fill the GPU: uses_node_gemm, node_gemm.cuh) the layer
 * kernels do the edges only and each layer's node work follows as three launches in each
 * direction. Ghost rows are exchanged
 * between layers (cuda_exchange.cu); then the node backward runs after the reverse exchange
 * has summed every rank's contributions into the owned rows. The whole sequence is recorded as
 * a CUDA graph and replayed while atom and edge counts, buffers and the exchange stay the same.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <vector>

#include "graph/assemble.cuh"
#include "runtime/cuda_state.cuh"
#include "nequip/edge_geometry.cuh"
#include "nequip/layer_backward.cuh"
#include "nequip/layer_forward.cuh"
#include "nequip/node_gemm.cuh"
#include "nequip/species_order.cuh"

namespace fnqcu {

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

/* Owned atoms per block of the table-mode layer kernels. kNB (4, two warps an atom) while that
 * gives every multiprocessor two blocks; fewer atoms take 2 or 1 (4 or 8 warps an atom, each
 * running every 4th or 8th unit of the atom's work): at 512 atoms on an H100 the kernels
 * otherwise run one block of 8 warps per multiprocessor, each warp a long serial walk
 * (bench/NOTES.md, issue 47). A function of the atom count and the GPU, so a step's sums run
 * in the same order every time. */
template <typename REAL> static int atoms_per_block(const State<REAL> *s, int64_t nl)
{
    if (!s->few_ok || sizeof(REAL) != 4)
        return kNB;
    if (s->opt.atoms_per_block)
        return s->opt.atoms_per_block;
    /* the fewest atoms a block whose blocks still run at once (two a multiprocessor): 216
     * atoms one, 512 two, 1,728 four on an H100 (132 multiprocessors), each the fastest there
     * of the three (bench/NOTES.md) */
    const int64_t at_once = 2 * (int64_t)s->n_sm;
    return nl <= at_once ? 1 : nl <= 2 * at_once ? 2 : kNB;
}

/* The node work as GEMMs over all atoms (node_gemm.cuh) or in the layer kernels' epilogues:
 * the GEMMs where the layer kernels run kNB atoms a block; with fewer atoms (1 or 2 a block)
 * the epilogues are faster (216 and 512 atoms on an H100: 12-15 %; bench/NOTES.md, issue 47).
 * FNQ_NODE_GEMM=0 / 1: never / always. A function of the atom count, like nbk. */
template <typename REAL> static bool uses_node_gemm(const State<REAL> *s, int nbk)
{
    if (!s->node_gemm_ok)
        return false;
    if (!s->cfg[0].fits || s->opt.node_gemm == 1)
        return true;
    return nbk == kNB;
}

template <typename REAL>
static enum fnq_status enqueue_model(State<REAL> *s, int64_t nl, int64_t na, int64_t n_launch,
                                     const struct fnq_exchange *x)
{
    DeviceModel<REAL> &dm = s->dm;
    const int L = dm.n_layers;
    /* A caller's comm is collective: every layer exchanges, also on a rank without ghosts,
     * whose owned rows may still receive gradients from other ranks' ghosts. */
    const bool ghosts = fnq__exchange_needed(x);
    s->launches_model = 0;
    /* Row nl of the message-gradient buffers is the zero row that edges without a reverse
     * edge read (tp_column.cuh). Zeroed in every evaluation: a call with fewer owned atoms
     * than an earlier one (atoms that left a LAMMPS rank) would find an atom's old gradients
     * there, and the forces of every edge from a ghost would be wrong. */
    const bool lean = s->lean;
    for (int k = 0; k < (lean ? 1 : 2); k++)
        FNQ_CUDA_CHECK(cudaMemsetAsync(s->ga[k].p + nl * dm.max_mid_tiled, 0,
                                       sizeof(REAL) * dm.max_mid_tiled, s->stream));
    /* the edge count is read on the device: the receivers' last start (edge_geometry.cuh) */
    const int64_t *ne = s->recv_start.p + nl;
    if (n_launch > 0) {
        FNQ_CUDA_CHECK(edge_features_launch<REAL>(dm.geo, s->edge_vec.p, ne, n_launch,
                                                  s->edge_feat.p, s->stream));
        s->launches_model++;
    }
    const int nbk = atoms_per_block(s, nl);
    const bool gemm = uses_node_gemm(s, nbk);
    const KernelConfig &kc = s->cfg[gemm];
    /* the node GEMMs of per-species linears take the atoms in species order */
    const int *order = gemm && s->node_species ? s->species_order.p : nullptr;
    if (order && nl > 0) {
        SpeciesOrderArgs o = {nl, dm.n_species, s->species.p, s->order_keys.p, s->order_ids.p,
                              s->species_order.p};
        size_t bytes = s->order_tmp.cap;
        FNQ_CUDA_CHECK(species_order_launch(o, s->order_tmp.p, &bytes, s->stream));
        s->launches_model += 2; /* the ids, and CUB's sort (a few kernels of its own) */
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
        a.nbk = nbk;
        a.recv_start = s->recv_start.p;
        a.edge_send = s->edge_send.p;
        a.edge_recv = s->edge_recv.p;
        /* the messages, in ga[1]: the forward pass writes dE/dA to ga[0] only (last layer),
         * and the backward pass first writes ga[1] after the forward is done. Lean layout:
         * in ga[0], but the last layer's, whose epilogue writes dE/dA there (cuda_state.cuh) */
        a.A = !lean ? s->ga[1].p : a.last ? s->msg_last.p : s->ga[0].p;
        a.a_stride = lean && a.last ? dm.layers[l].mid.dim : dm.max_mid;
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
        a.EC = kc.EC_fwd;
        a.tf32 = s->opt.tf32;
        a.skip = s->opt.skip;
        a.node_split = gemm;
        FNQ_CUDA_CHECK(layer_forward_launch<REAL>(a, kc.smem_fwd, s->stream));
        s->launches_model++;
        if (a.node_split)
            FNQ_CUDA_CHECK(node_forward_launch<REAL>(a, order, s->stream, &s->launches_model));
        if (!a.last && ghosts)
            FNQ_CHECK(exchange_rows<REAL>(s, x, s->h1[l + 1].p, dm.layers[l + 1].in.tile_dim, true));
        if (s->opt.debug_layers) {
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
        b.fused_epilogue = !ghosts && !lean && !gemm;
        b.dxpart = s->dxpart.p;
        b.dx_stride = std::max(1, dm.layers[l].dx_dim);
        b.dx_busy = s->dx_busy.p;
        b.dx_slots = s->dx_slots;
        b.dx_slots_ghost = s->dx_slots_ghost;
        b.recv_start = s->recv_start.p;
        b.edge_send = s->edge_send.p;
        b.species = s->species.p;
        b.edge_feat = s->edge_feat.p;
        b.send_start = s->send_start.p;
        b.send_edges = s->send_edges.p;
        b.edge_recv = s->edge_recv.p;
        b.h1 = s->h1[l].p;
        b.h1_table = dm.h1_table;
        /* lean: the epilogue (its own kernel, below) writes the layer below's dE/dA over
         * this layer's, which the edges are done with by then */
        b.ga = s->ga[lean ? 0 : gc].p;
        b.ga_stride = dm.max_mid_tiled;
        b.edge_ggeo = s->edge_ggeo.p;
        b.first_ggeo = l == L - 1;
        b.dh1 = s->dh1.p;
        b.gpart_in = s->gp[gc].p;
        b.y_prev = l > 0 ? s->y[l - 1].p : nullptr;
        b.rho_prev = l > 0 ? s->rho[l - 1].p : nullptr;
        b.ga_out = s->ga[lean ? 0 : gc ^ 1].p;
        b.gpart_out = s->gp[gc ^ 1].p;
        b.W = dm.max_width;
        b.epi_len = s->epi_len;
        b.tf32 = s->opt.tf32;
        b.skip = s->opt.skip;
        if (s->opt.debug_layers)
            debug_layer_sums(s, l, nl, "message gradient dE/dA", b.ga, dm.max_mid_tiled,
                             dm.layers[l].mid.tile_dim);
        /* few atoms a block: their own chunks and shared memory (cuda_state.cuh); the ghost
         * pass and the epilogue kernel below keep kNB */
        b.nbk = nbk;
        b.EC = nbk == kNB ? kc.EC_bwd : kc.EC_bwd_few[nbk / 2];
        FNQ_CUDA_CHECK(layer_backward_launch<REAL>(
            b, nbk == kNB ? kc.smem_bwd : kc.smem_bwd_few[nbk / 2], s->stream));
        s->launches_model++;
        b.nbk = kNB;
        b.EC = kc.EC_bwd;
        if (l > 0 && ghosts) {
            FNQ_CUDA_CHECK(ghost_sender_launch<REAL>(b, kc.smem_bwd, s->stream));
            s->launches_model++;
            FNQ_CHECK(exchange_rows<REAL>(s, x, s->dh1.p, dm.layers[l].in.dim, false));
        }
        if (l > 0 && gemm) {
            FNQ_CUDA_CHECK(node_backward_launch<REAL>(b, order, s->stream, &s->launches_model));
        } else if (l > 0 && !b.fused_epilogue) {
            FNQ_CUDA_CHECK(backward_epilogue_launch<REAL>(b, kc.smem_bwd, s->stream));
            s->launches_model++;
        }
        gc ^= 1;
    }
    const PairEdges pair = {dm.pair, s->edge_recv.p, s->edge_send.p, s->species.p};
    if (n_launch > 0) {
        FNQ_CUDA_CHECK(edge_grad_launch(dm.geo, s->edge_vec.p, ne, n_launch, s->edge_ggeo.p,
                                        pair, s->edge_grad.p, s->stream));
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
    as.pair = pair;
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
    if (!s->opt.timing)
        return;
    cudaStreamSynchronize(s->stream);
    const auto now = std::chrono::steady_clock::now();
    *acc += std::chrono::duration<double>(now - s->t_mark).count();
    s->t_mark = now;
}

template <typename REAL> void phase_start(State<REAL> *s)
{
    if (s->opt.timing)
        s->t_mark = std::chrono::steady_clock::now();
}

/* Run the model (through a recorded graph when possible) and fetch the results. */
template <typename REAL>
enum fnq_status run_model(State<REAL> *s, int64_t nl, int64_t na, int64_t ne,
                                 const struct fnq_exchange *x, struct fnq_results *out)
{
    phase_end(s, &s->t_graph);
    /* host callbacks between kernels (a caller's host exchange, debug sums) are not
     * recordable; a device exchange is when it says so (its version keys the graph) */
    uint64_t version = 0;
    const bool can_record =
        exchange_recordable(x, &version) && !s->opt.debug_layers && !s->opt.no_cuda_graph;
    /* The edge kernels cover n_launch edges and read the count on the device, so the graph is
     * kept while the edges fit and fill at least 3/4 of them: in MD the count changes nearly
     * every step, and capturing and instantiating the graph again cost ~0.3 ms of a 1.8 ms
     * step at 512 atoms (H100, bench/NOTES.md, issue 47) */
    int64_t n_launch = s->edge_launch;
    if (ne > n_launch || ne < n_launch - n_launch / 4)
        n_launch = ne == 0 ? 0 : ne + ne / 32 + 128;
    s->edge_launch = n_launch;
    if (can_record) {
        const int64_t key[5] = {nl, na, n_launch, s->epoch, (int64_t)version};
        if (!s->graph || memcmp(key, s->graph_key, sizeof(key)) != 0) {
            cudaGraph_t g;
            FNQ_CUDA_CHECK(cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
            enum fnq_status st = enqueue_model<REAL>(s, nl, na, n_launch, x);
            cudaError_t end = cudaStreamEndCapture(s->stream, &g);
            FNQ_CHECK(st);
            FNQ_CUDA_CHECK(end);
            /* (in MD the edge count changes nearly every step, so this runs nearly every
             * step: updating the instantiated graph in place instead measured no faster,
             * 107.0 against 107.1 ms at 64,000 Si on an H100) */
            if (s->graph)
                cudaGraphExecDestroy(s->graph);
            s->graph = nullptr;
            const cudaError_t inst = cudaGraphInstantiate(&s->graph, g, 0);
            cudaGraphDestroy(g);
            FNQ_CUDA_CHECK(inst);
            s->graphs_instantiated++;
            memcpy(s->graph_key, key, sizeof(key));
        }
        FNQ_CUDA_CHECK(cudaGraphLaunch(s->graph, s->stream));
    } else {
        FNQ_CHECK(enqueue_model<REAL>(s, nl, na, n_launch, x));
    }
    phase_end(s, &s->t_model);
    double totals[7];
    FNQ_CUDA_CHECK(cudaMemcpyAsync(totals, s->totals.p, sizeof(totals), cudaMemcpyDeviceToHost,
                                   s->stream));
    if (out->forces)
        FNQ_CUDA_CHECK(cudaMemcpyAsync(out->forces, s->forces.p, sizeof(double) * 3 * na,
                                       cudaMemcpyDeviceToHost, s->stream));
    if (out->forces_add_device)
        FNQ_CUDA_CHECK(add_rows_launch(out->forces_add_device, s->forces.p, 3 * na, s->stream));
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

#define FNQ_INSTANTIATE(REAL)                                                                   \
    template enum fnq_status run_model<REAL>(State<REAL> *, int64_t, int64_t, int64_t,          \
                                             const struct fnq_exchange *,                       \
                                             struct fnq_results *);                             \
    template void phase_start<REAL>(State<REAL> *);
FNQ_INSTANTIATE(float)
FNQ_INSTANTIATE(double)
#undef FNQ_INSTANTIATE

} // namespace fnqcu
