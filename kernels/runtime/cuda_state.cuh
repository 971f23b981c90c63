/*
 * cuda_state.cuh: one CUDA context's state and the backend's internal entry points, by concern:
 *   cuda_state.cu     creation (model upload, kernel configuration), buffers per system size
 *   cuda_graph.cu     the graph of one evaluation: the host's graph uploaded, the caller's pairs
 *                     or our own neighbour list built on the GPU, with the input and limit checks
 *   cuda_run.cu       the model evaluation: kernels per layer, recorded as a CUDA graph, results
 *   cuda_exchange.cu  ghost rows between layers: the caller's host callbacks or device exchange
 *   backend_cuda.cu   the backend's function table (one per dtype)
 */
#pragma once

#include <chrono>
#include <vector>

#include "runtime/common.cuh"
#include "runtime/device_buffer.cuh"
#include "nequip/model_dev.cuh"

extern "C" {
#include "graph/graph.h"
#include "api/options.h"
}

namespace fnqcu {

/* Edges per super-chunk of the layer kernels and their shared memory, for one way of doing the
 * node work. Few atoms (atoms_per_block, cuda_run.cu): the backward layer kernels with 1 or 2
 * atoms a block keep a dE/dY row per edge and warp of an atom, so their chunks and shared
 * memory differ ([0]: one atom, [1]: two). */
struct KernelConfig {
    bool fits = false; /* within the GPU's shared memory per block */
    int EC_fwd = 32, EC_bwd = 32;
    size_t smem_fwd = 0, smem_bwd = 0;
    bool few_fit = false;
    int EC_bwd_few[2] = {32, 32};
    size_t smem_bwd_few[2] = {0, 0};
};

template <typename REAL> struct State {
    int device = 0;
    cudaStream_t stream = nullptr;
    struct fnq_options opt; /* the context's switches (options.h) */
    DeviceModel<REAL> dm;
    bool model_uploaded = false;
    int epi_len = 1;
    /* the layer kernels' chunks and shared memory for each way of doing the node work:
     * [0] in the layer kernels' epilogues, [1] as node GEMMs (node_gemm.cuh) unless
     * FNQ_NODE_GEMM=0 (node_gemm_ok); which one an evaluation takes: uses_node_gemm
     * (cuda_run.cu) */
    KernelConfig cfg[2];
    bool node_gemm_ok = false;
    /* some node linear has weights per species: the node GEMMs take the owned atoms in
     * species order (species_order.cuh), sorted in each evaluation */
    bool node_species = false;
    DevBuf<int> species_order, order_keys, order_ids;
    DevBuf<unsigned char> order_tmp;
    /* 1 or 2 atoms a block may run (atoms_per_block, cuda_run.cu): every layer has its radial
     * table, and the few-atom kernels fit in every configuration */
    bool few_ok = false;
    int epoch = 0; /* bumped when a buffer moves (device_buffer.cuh) */
    int64_t max_atoms = 0; /* the largest system's atoms (ghosts included), for FNQ_VERBOSE */

    /* graph */
    DevBuf<int> species;
    DevBuf<double> pos, edge_vec, edge_grad;
    DevBuf<REAL> edge_feat; /* [n_edges][nsh + n_rfeat]: Y and radial features (edge_geometry.cu) */
    /* [n_edges][nsh + n_rfeat]: their gradients, summed over the backward layers */
    DevBuf<double> edge_ggeo;
    DevBuf<int64_t> recv_start, edge_send, edge_recv, send_start, send_edges;
    /* activations */
    std::vector<DevBuf<REAL>> h1, y, rho;
    /* ga[1] holds the forward pass's messages (cuda_run.cu); dxpart: dx_slots slots of the
     * backward kernels' scratch, dx_busy their flags (layer_backward.cuh) */
    DevBuf<REAL> h[2], ga[2], gp[2], dh1, dxpart;
    /* The lean layout, for systems too large for the fast one (or FNQ_LEAN_MEMORY=1): one
     * message-gradient buffer instead of two (ga[1] unused; 22 kB per atom for nequix-mp-1),
     * each backward layer's node epilogue as a kernel of its own, the last layer's messages
     * in msg_last. Once taken, kept by the context. */
    bool lean = false;
    DevBuf<REAL> msg_last;
    DevBuf<int> dx_busy;
    int dx_slots = 1, dx_slots_ghost = 1; /* slots of dxpart (layer_backward.cuh) */
    int n_sm = 1; /* the GPU's multiprocessors */
    DevBuf<double> e_atom, forces, atom_virial, atom_energy, totals;
    /* neighbour list scratch */
    DevBuf<double> wrap, min_d2;
    DevBuf<int64_t> bin_start, bin_atoms, atom_bin, counts, keys, ids;
    DevBuf<unsigned char> cub_tmp;
    /* the caller's pairs (edge_list.cu) */
    DevBuf<int64_t> pair_recv, pair_send, pair_owner;
    DevBuf<double> pair_shift;
    bool pairs_shifted = false; /* pair_shift holds the pairs' shifts */
    bool pairs_kept = false;    /* the last compute_edges left its host pairs here, whole */
    int64_t pairs_kept_count = 0;
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
    };
    PinnedBuf<LimitReadback> readback;
    /* ghost rows through the caller's host callbacks (cuda_exchange.cu) */
    std::vector<REAL> host_rows;

    /* recorded model evaluation */
    cudaGraphExec_t graph = nullptr;
    int64_t graph_key[5] = {-1, -1, -1, -1, -1};
    int64_t edge_launch = 0; /* edges the edge kernels' launches cover (cuda_run.cu) */
    int launches_model = 0, launches_nl = 0;
    /* FNQ_TIMING=1: wall-clock per phase, summed over calls and printed when the context is
     * freed (graph: uploads and the neighbour list; model: the kernels; results: downloads) */
    int64_t timed_calls = 0;
    int64_t graphs_instantiated = 0; /* CUDA graphs recorded, for FNQ_TIMING */
    double t_graph = 0, t_model = 0, t_results = 0;
    std::chrono::steady_clock::time_point t_mark;
};

/* cuda_state.cu */
template <typename REAL>
enum fnq_status state_init(const struct fnq_model *m, int32_t device_id,
                           const struct fnq_options *opt, State<REAL> **out);
template <typename REAL> void state_free(State<REAL> *s);
/* device buffers for n_local owned atoms, n_all with ghosts, n_edges edges; `exchange`: the
 * caller exchanges ghost rows (every rank keeps the dE/dh1 rows, also one without ghosts) */
template <typename REAL>
enum fnq_status reserve(State<REAL> *s, int64_t n_local, int64_t n_all, int64_t n_edges,
                        bool exchange);

/* cuda_graph.cu: the backend entry points that start an evaluation */
template <typename REAL>
enum fnq_status compute_graph(State<REAL> *s, const struct fnq_graph *g,
                              const struct fnq_exchange *x, struct fnq_results *out);
template <typename REAL>
enum fnq_status compute_edges(State<REAL> *s, const struct fnq_edge_input *in,
                              const struct fnq_limits *lim, const struct fnq_exchange *x,
                              struct fnq_results *out, int64_t *n_edges);
template <typename REAL>
enum fnq_status compute_periodic(State<REAL> *s, int64_t n, const double *pos,
                                 const int32_t *species, const double *cell, const int32_t *pbc,
                                 const struct fnq_limits *lim, struct fnq_results *out,
                                 int64_t *n_edges);
template <typename REAL>
enum fnq_status to_host(State<REAL> *s, void *dst, const void *src, size_t bytes,
                        const char *what);
template <typename REAL>
enum fnq_status check_inputs(State<REAL> *s, int64_t n, const double *pos, const int32_t *species,
                             int32_t n_species, int *ok);

/* cuda_run.cu: the model on a graph in the state's buffers, then the results to the host */
template <typename REAL>
enum fnq_status run_model(State<REAL> *s, int64_t n_local, int64_t n_all, int64_t n_edges,
                          const struct fnq_exchange *x, struct fnq_results *out);
/* FNQ_TIMING: a phase starts (at the call's entry) */
template <typename REAL> void phase_start(State<REAL> *s);

/* cuda_exchange.cu: one layer's ghost rows (forward: owners -> ghosts; reverse: ghosts added
 * into owners), `width` values per row */
template <typename REAL>
enum fnq_status exchange_rows(State<REAL> *s, const struct fnq_exchange *x, REAL *rows,
                              int width, bool forward);
/* whether the exchange can be recorded in a CUDA graph, and its version for the graph's key */
bool exchange_recordable(const struct fnq_exchange *x, uint64_t *version);

} // namespace fnqcu
