/*
 * allegro_engine.cu: Allegro on the GPU (allegro_engine.cuh). Allegro is strictly local: an
 * edge's features depend only on its centre's environment, so a run of whole centre atoms with
 * their edges (a chunk) is evaluated forward and backward on its own, keeping every MLP's
 * pre-activations for the backward pass instead of computing them again, in memory bounded by
 * the chunk's size whatever the structure's. The steps are docs/allegro.md's, in the CPU
 * engine's order (core/src/allegro/allegro_eval.inc): the MLPs are GEMMs (allegro_mlp.cuh), the
 * rest per-edge and per-centre kernels (allegro_kernels.cuh). The host uploads the graph and
 * its active edges (within their edge type's cutoff; core/src/allegro/allegro_edges.c); the pair term,
 * forces, virials and energies are assembled on the GPU (allegro_graph.cuh, assemble.cuh) and
 * come back.
 */
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "allegro/allegro_engine.cuh"
#include "allegro/allegro_graph.cuh"
#include "allegro/allegro_kernels.cuh"
#include "allegro/allegro_mlp.cuh"
#include "gemm/gemm_3xtf32.cuh"
#include "graph/assemble.cuh"
#include "runtime/device_buffer.cuh"

namespace fnqcu {
namespace {

using allegro::Chunk;
using allegro::Cols;
using allegro::Mlp;
using allegro::Params;
using allegro::TpLayer;
using allegro::TpTerm;

/* device memory for a chunk's per-edge or per-centre arrays is at most this (or half the free
 * memory, if less) */
constexpr double kChunkBytes = 8.0 * (1 << 30);

/* one chunk's per-edge and per-centre arrays (carve_arena) */
template <typename REAL> struct ChunkArrays {
    REAL *Y, *basis, *dbasis, *z0, *z, *two_pre, *w, *te_pre, *fp_pre, *X, *scal, *ro_pre, *eps,
        *work, *gX, *gS, *gz, *gz0, *gw, *gbasis, *gY, *geps, *gG, *none, *split,
        *work_lo;
    REAL *omega[FNQ_ALLEGRO_MAX_LAYERS], *V[FNQ_ALLEGRO_MAX_LAYERS + 1],
        *lat_pre[FNQ_ALLEGRO_MAX_LAYERS], *G[FNQ_ALLEGRO_MAX_LAYERS], *gV[2];
};

template <typename REAL> struct Engine {
    const struct fnq_model *m = nullptr;
    const struct fnq_allegro *al = nullptr;
    int device = 0;
    int chunk_option = 0; /* FNQ_ALLEGRO_CHUNK: edges per chunk, or 0 */
    int tf32 = 0;         /* FNQ_TF32=1 in float32: the MLPs' GEMMs 3xTF32 (allegro_mlp.cuh) */
    int tensor_cores = 0; /* float32 on Hopper: the MLPs' GEMMs gemm_3xtf32 (unless
                             FNQ_ALLEGRO_GEMM=cublas) */
    int timing = 0;       /* FNQ_TIMING=1: seconds per phase, printed when the context ends */
    double t_collect = 0, t_gpu = 0;
    int64_t calls = 0;
    allegro::Gemm<REAL> gemm = {};
    cudaStream_t stream = nullptr;
    cublasHandle_t blas = nullptr;
    int S = 0, U = 0, L = 0, N = 0, D = 0, nl = 0, nsh = 0, SX = 0, width = 1, max_dv = 1;
    /* X's and gX's row length: X_0 .. X_L (SX), then room for what run_chunk puts after
     * X_k in turn (the last layer's scalars, U; omega_0's gradient, U nl) */
    int XW = 0;
    int max_dim = 1; /* the widest layer of any MLP, inputs and outputs included */
    int dim_v[FNQ_ALLEGRO_MAX_LAYERS + 1] = {};
    Params<REAL> p = {};
    Mlp<REAL> basis_linear, two_body, tensor_embed, first_proj, readout,
        latent[FNQ_ALLEGRO_MAX_LAYERS];
    TpLayer<REAL> tp[FNQ_ALLEGRO_MAX_LAYERS] = {};
    std::vector<void *> model_arrays; /* device copies of the model's tables */

    /* the structure: its graph (as the context built it) and its active edges (per centre,
     * each centre's from start[i]: index[a] is active edge a's graph edge), on the host and the
     * device; the results assembled on the device */
    std::vector<int64_t> h_start, h_index;
    DevBuf<int32_t> species, ti, tj, centre;
    DevBuf<int64_t> recv_start, send_start, edge_send, edge_recv, send_edges, start, index;
    DevBuf<double> edge_vec, edge_grad, vec, grad, energy;
    DevBuf<double> forces, atom_virial, atom_energy, totals;
    int epoch = 0; /* ensure()'s count of moved allocations: no CUDA graph here to invalidate */
    PairTerm pair = {};
    const double *ones = nullptr, *zeros = nullptr; /* [T]: assemble.cu's scale and shift */

    /* one chunk's arrays, carved out of `arena` */
    int64_t chunk_edges = 0, chunk_centres = 0; /* the arena's capacity */
    int64_t run_edges = 0, run_centres = 0;     /* this structure's chunks */
    REAL *arena = nullptr;
    ChunkArrays<REAL> a;
};

static enum fnq_status upload(std::vector<void *> &owned, const void *src, size_t bytes,
                              const void **dst)
{
    void *d = nullptr;
    FNQ_CUDA_CHECK(cudaMalloc(&d, bytes ? bytes : 1));
    owned.push_back(d);
    FNQ_CUDA_CHECK(cudaMemcpy(d, src, bytes, cudaMemcpyHostToDevice));
    *dst = d;
    return FNQ_STATUS_OK;
}

/* n doubles as T on the device at *dst */
template <typename REAL, typename T>
enum fnq_status upload_as(Engine<REAL> *s, const double *src, int64_t n, const T **dst)
{
    std::vector<T> host((size_t)n);
    for (int64_t q = 0; q < n; q++)
        host[q] = (T)src[q];
    return upload(s->model_arrays, host.data(), sizeof(T) * (size_t)n,
                  reinterpret_cast<const void **>(dst));
}

/* the widest hidden layer of an MLP (the work arrays) and widest layer (the TF32 split) */
template <typename REAL> void note_width(Engine<REAL> *s, const Mlp<REAL> &m)
{
    for (int k = 0; k <= m.K; k++) {
        if (k > 0 && k < m.K && m.dim[k] > s->width)
            s->width = m.dim[k];
        if (m.dim[k] > s->max_dim)
            s->max_dim = m.dim[k];
    }
}

/* irreps of one block per degree from 0 up (block l at offset l^2): the layout the
 * generated tensor-product code assumes */
static bool in_degree_order(const struct fnq_irreps &ir)
{
    for (int32_t b = 0; b < ir.n_blocks; b++)
        if (ir.block[b].l != b || ir.block[b].offset != (int64_t)b * b)
            return false;
    return true;
}

template <typename REAL> enum fnq_status upload_tp(Engine<REAL> *s, int k)
{
    const struct fnq_allegro_layer *Lk = &s->al->layer[k];
    std::vector<TpTerm> terms;
    for (int32_t q = 0; q < Lk->n_paths; q++) {
        const struct fnq_allegro_path *P = &Lk->paths[q];
        for (int32_t t = 0; t < P->n_terms; t++)
            terms.push_back({(int16_t)P->i1[t], (int16_t)P->i2[t], (int16_t)P->i3[t],
                             (int16_t)q, P->coef[t]});
    }
    TpLayer<REAL> &tp = s->tp[k];
    tp.n_terms = (int)terms.size();
    tp.n_paths = Lk->n_paths;
    tp.din = (int)Lk->in.dim;
    tp.dout = (int)Lk->out.dim;
    tp.coupled = Lk->coupled;
    FNQ_CHECK(upload(s->model_arrays, terms.data(), sizeof(TpTerm) * terms.size(),
                     reinterpret_cast<const void **>(&tp.terms)));
    tp.code = nullptr;
    if (in_degree_order(Lk->in) && in_degree_order(Lk->out)) {
        std::vector<int> code;
        for (int32_t q = 0; q < Lk->n_paths; q++) {
            const struct fnq_allegro_path *P = &Lk->paths[q];
            code.push_back(FNQ_TP_CODE(P->l1, P->l2, P->l3));
        }
        FNQ_CHECK(upload(s->model_arrays, code.data(), sizeof(int) * code.size(),
                         reinterpret_cast<const void **>(&tp.code)));
    }
    return upload_as(s, Lk->path_weights, (int64_t)(Lk->coupled ? s->U : 1) * Lk->n_paths,
                     &tp.w);
}

/* the model's pair term (pair_term.cuh; per-edge-type cutoffs as the host's), and the unit
 * scale and zero shift under which assemble.cu passes the network's energies through */
template <typename REAL> enum fnq_status upload_pair_term(Engine<REAL> *s)
{
    const struct fnq_model *m = s->m;
    const std::vector<double> ones((size_t)m->n_species, 1.0), zeros((size_t)m->n_species, 0.0);
    FNQ_CHECK(upload_as(s, ones.data(), m->n_species, &s->ones));
    FNQ_CHECK(upload_as(s, zeros.data(), m->n_species, &s->zeros));
    if (m->pair.kind == FNQ_PAIR_NONE)
        return FNQ_STATUS_OK;
    std::vector<double> screen, charges;
    pair_term_tables(m, &screen, &charges);
    PairTerm &p = s->pair;
    p.on = 1, p.n_species = m->n_species, p.cutoff = m->pair.cutoff, p.poly_p = m->pair.poly_p;
    FNQ_CHECK(upload_as(s, screen.data(), (int64_t)screen.size(), &p.screen));
    FNQ_CHECK(upload_as(s, charges.data(), (int64_t)charges.size(), &p.charges));
    if (m->pair.cutoff_by_type)
        FNQ_CHECK(upload_as(s, m->pair.cutoff_by_type, (int64_t)screen.size(),
                            &p.cutoff_by_type));
    return FNQ_STATUS_OK;
}

template <typename REAL> void engine_free(Engine<REAL> *s)
{
    if (!s)
        return;
    if (s->timing && s->calls)
        fprintf(stderr, "fusednequip: Allegro on the GPU, ms per call over %lld calls: active "
                        "edges and upload %.2f, GPU (chunks, forces, download) %.2f\n",
                (long long)s->calls, 1e3 * s->t_collect / s->calls,
                1e3 * s->t_gpu / s->calls);
    cudaSetDevice(s->device);
    for (void *d : s->model_arrays)
        cudaFree(d);
    Mlp<REAL> *mlps[] = {&s->basis_linear, &s->two_body, &s->tensor_embed, &s->first_proj,
                         &s->readout};
    for (Mlp<REAL> *m : mlps)
        allegro::mlp_release(m);
    for (int k = 0; k < FNQ_ALLEGRO_MAX_LAYERS; k++)
        allegro::mlp_release(&s->latent[k]);
    cudaFree(s->arena);
    if (s->blas)
        cublasDestroy(s->blas);
    if (s->stream)
        cudaStreamDestroy(s->stream);
    delete s;
}

template <typename REAL> enum fnq_status engine_setup(Engine<REAL> *s)
{
    const struct fnq_model *m = s->m;
    const struct fnq_allegro *al = s->al;
    if (m->lmax_sh > allegro::kMaxLmax)
        return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                         "model %s: the CUDA Allegro engine supports l_max up to %d; this model "
                         "has l_max %d (run it on device 'cpu')",
                         m->source, allegro::kMaxLmax, (int)m->lmax_sh);
    FNQ_CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
    if (cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS)
        return fnq__fail(FNQ_STATUS_DEVICE, "cuBLAS could not be initialised on device %d",
                         s->device);
    cublasSetStream(s->blas, s->stream);
    s->gemm = {s->blas, s->stream, s->tf32, nullptr, s->tensor_cores, nullptr};
    /* cuBLAS' choice of algorithm is deterministic; pedantic: float32 GEMMs stay float32
     * whatever NVIDIA_TF32_OVERRIDE says (the 3xTF32 GEMMs name their compute type) */
    cublasSetMathMode(s->blas, s->tf32 ? CUBLAS_DEFAULT_MATH : CUBLAS_PEDANTIC_MATH);
    s->S = al->n_scalar, s->U = al->n_tensor, s->L = al->n_layers, s->N = al->n_basis;
    s->D = 2 * al->half_embed, s->nl = m->lmax_sh + 1, s->nsh = s->nl * s->nl;
    s->SX = s->S * (s->L + 1);
    s->XW = s->S * s->L + std::max(s->S, std::max(s->U, s->U * s->nl));
    s->dim_v[0] = s->nsh;
    for (int k = 0; k < s->L; k++) {
        s->dim_v[k + 1] = (int)al->layer[k].out.dim;
        if ((int)al->layer[k].in.dim > allegro::kMaxDim ||
            (int)al->layer[k].out.dim > allegro::kMaxDim)
            return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                             "model %s: layer %d's tensor features have %d values per channel; "
                             "the CUDA Allegro engine takes up to %d",
                             m->source, k, (int)al->layer[k].out.dim, allegro::kMaxDim);
    }
    for (int k = 0; k <= s->L; k++)
        if (s->dim_v[k] > s->max_dv)
            s->max_dv = s->dim_v[k];

    Params<REAL> &p = s->p;
    p.T = m->n_species, p.S = s->S, p.U = s->U, p.N = s->N, p.H = al->half_embed;
    p.nl = s->nl, p.nsh = s->nsh, p.lmax = m->lmax_sh;
    p.r_max = m->cutoff, p.poly_p = al->poly_p;
    std::vector<double> edge_scale(p.T);
    for (int t = 0; t < p.T; t++)
        edge_scale[t] = m->energy_scale[t] * al->edge_norm[t] * FNQ_SQRT1_2;
    if (al->cut_by_type)
        FNQ_CHECK(upload_as(s, al->cut_by_type, (int64_t)p.T * p.T, &p.cut));
    FNQ_CHECK(upload_as(s, al->bessel_w, s->N, &p.bessel_w));
    FNQ_CHECK(upload_as(s, al->center_embed, (int64_t)p.T * p.H, &p.cemb));
    FNQ_CHECK(upload_as(s, al->neighbor_embed, (int64_t)p.T * p.H, &p.nemb));
    FNQ_CHECK(upload_as(s, al->env_norm, p.T, &p.env_norm));
    FNQ_CHECK(upload_as(s, edge_scale.data(), p.T, &p.edge_scale));
    FNQ_CHECK(upload_as(s, m->energy_shift, p.T, &p.shift));
    FNQ_CHECK(upload_pair_term(s));

    FNQ_CHECK(allegro::mlp_upload(&al->basis_linear, s->tf32, s->tensor_cores, &s->basis_linear));
    FNQ_CHECK(allegro::mlp_upload(&al->two_body, s->tf32, s->tensor_cores, &s->two_body));
    FNQ_CHECK(allegro::mlp_upload(&al->tensor_embed, s->tf32, s->tensor_cores, &s->tensor_embed));
    FNQ_CHECK(allegro::mlp_upload(&al->first_projection, s->tf32, s->tensor_cores, &s->first_proj));
    FNQ_CHECK(allegro::mlp_upload(&al->readout, s->tf32, s->tensor_cores, &s->readout));
    const Mlp<REAL> *fixed[] = {&s->basis_linear, &s->two_body, &s->tensor_embed, &s->first_proj,
                                &s->readout};
    for (const Mlp<REAL> *mlp : fixed)
        note_width(s, *mlp);
    for (int k = 0; k < s->L; k++) {
        FNQ_CHECK(allegro::mlp_upload(&al->layer[k].latent, s->tf32, s->tensor_cores,
                                      &s->latent[k]));
        note_width(s, s->latent[k]);
        FNQ_CHECK(upload_tp(s, k));
    }
    return FNQ_STATUS_OK;
}

/* A chunk's arrays for E edges and C centres at their offsets from `base` (null pointers
 * where base is null: only the size is wanted); returns the values they take. Each array starts
 * 256-byte aligned. */
template <typename REAL>
int64_t carve_arena(const Engine<REAL> *s, REAL *base, int64_t E, int64_t C, ChunkArrays<REAL> *c)
{
    int64_t at = 0;
    auto take = [&](int64_t rows, int64_t width) {
        REAL *p = base ? base + at : nullptr;
        at += (rows * width + 63) / 64 * 64;
        return p;
    };
    c->Y = take(E, s->nsh), c->gY = take(E, s->nsh);
    c->basis = take(E, s->N), c->dbasis = take(E, s->N), c->gbasis = take(E, s->N);
    c->z0 = take(E, s->D), c->gz0 = take(E, s->D);
    c->z = take(E, s->S), c->gz = take(E, s->S);
    c->two_pre = take(E, s->two_body.n_pre);
    c->w = take(E, s->U * s->nl), c->gw = take(E, s->U * s->nl);
    c->te_pre = take(E, s->tensor_embed.n_pre), c->fp_pre = take(E, s->first_proj.n_pre);
    c->X = take(E, s->XW), c->gX = take(E, s->XW);
    c->scal = take(E, s->U), c->gS = take(E, s->U);
    c->ro_pre = take(E, s->readout.n_pre);
    c->eps = take(E, 1), c->geps = take(E, 1);
    c->work = take(E, 2 * s->width);
    c->gV[0] = take(E, s->U * s->max_dv), c->gV[1] = take(E, s->U * s->max_dv);
    for (int k = 0; k < s->L; k++)
        c->omega[k] = take(E, s->U * s->nl), c->lat_pre[k] = take(E, s->latent[k].n_pre);
    for (int k = 0; k <= s->L; k++)
        c->V[k] = take(E, s->U * s->dim_v[k]);
    for (int k = 0; k < s->L; k++)
        c->G[k] = take(C, s->U * s->nsh);
    c->gG = take(C, s->U * s->nsh);
    c->none = c->work; /* pre-activations of a one-layer MLP: none are written */
    c->split = s->tf32 ? take(E, 3 * s->max_dim) : nullptr;
    c->work_lo = s->tensor_cores ? take(E, 2 * s->width) : nullptr; /* the work arrays' lo */
    return at;
}

/* values a chunk takes per edge (centre = false) or per centre: carve_arena's count for 2^20 of
 * them, where every array's alignment is already met */
template <typename REAL> int64_t values_per(const Engine<REAL> *s, bool centre)
{
    const int64_t n = 1 << 20;
    ChunkArrays<REAL> none;
    return carve_arena(s, (REAL *)nullptr, centre ? 0 : n, centre ? n : 0, &none) / n;
}

/* the chunk capacity for a structure of E active edges and n centres, most edges on one centre
 * max_degree; the arena grown to it */
template <typename REAL>
enum fnq_status size_chunks(Engine<REAL> *s, int64_t E, int64_t n, int64_t max_degree)
{
    const double per_edge = sizeof(REAL) * (double)values_per(s, false);
    const double per_centre = sizeof(REAL) * (double)values_per(s, true);
    size_t free_b = 0, total_b = 0;
    FNQ_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    const double budget = fmin(kChunkBytes, 0.5 * ((double)free_b + (double)s->chunk_edges *
                                                   per_edge + (double)s->chunk_centres *
                                                   per_centre));
    int64_t e_cap = s->chunk_option > 0 ? s->chunk_option
                                        : (int64_t)(budget / (per_edge + per_centre));
    if (e_cap < max_degree)
        e_cap = max_degree;
    if (e_cap > E)
        e_cap = E;
    if (e_cap < 1)
        e_cap = 1;
    /* centres per chunk: those with edges fit in e_cap; isolated ones come 1,024 at a time */
    int64_t c_cap = e_cap > 1024 ? e_cap : 1024;
    c_cap = c_cap < n ? c_cap : (n > 0 ? n : 1);
    /* the chunks follow from the structure (and the free memory), not from what the arena
     * holds after a larger structure: the same call, the same chunks, the same bits */
    s->run_edges = e_cap, s->run_centres = c_cap;
    if (e_cap <= s->chunk_edges && c_cap <= s->chunk_centres)
        return FNQ_STATUS_OK;
    e_cap = e_cap > s->chunk_edges ? e_cap : s->chunk_edges;
    c_cap = c_cap > s->chunk_centres ? c_cap : s->chunk_centres;
    cudaFree(s->arena);
    s->arena = nullptr, s->chunk_edges = s->chunk_centres = 0;
    const int64_t values = carve_arena(s, (REAL *)nullptr, e_cap, c_cap, &s->a);
    if (cudaMalloc(&s->arena, sizeof(REAL) * (size_t)values) != cudaSuccess) {
        cudaGetLastError();
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY,
                         "out of GPU memory: %.2f GB for a chunk of %lld edges of the Allegro "
                         "model %s (%.1f GB free on device %d)",
                         sizeof(REAL) * (double)values / 1e9, (long long)e_cap, s->m->source,
                         (double)free_b / 1e9, s->device);
    }
    s->chunk_edges = e_cap, s->chunk_centres = c_cap;
    carve_arena(s, s->arena, e_cap, c_cap, &s->a);
    s->gemm.split = s->a.split, s->gemm.lo = s->a.work_lo;
    return FNQ_STATUS_OK;
}

/* the graph's active edges, per centre in edge order (allegro_edges.c) */
template <typename REAL> void collect_edges(Engine<REAL> *s, const struct fnq_graph *g)
{
    s->h_start.resize((size_t)g->n_local + 1);
    s->h_index.resize((size_t)fnq__allegro_count_active(s->m, g, s->h_start.data()));
    fnq__allegro_fill_active(s->m, g, s->h_start.data(), s->h_index.data());
}

/* n values of host array src into b (grown to hold them), on the engine's stream */
template <typename T>
static enum fnq_status put(cudaStream_t st, int *epoch, DevBuf<T> &b, const T *src, int64_t n,
                           const char *what)
{
    FNQ_CHECK(ensure(b, (size_t)n, what, epoch));
    FNQ_CUDA_CHECK(cudaMemcpyAsync(b.p, src, sizeof(T) * (size_t)n, cudaMemcpyHostToDevice, st));
    return FNQ_STATUS_OK;
}

/* the graph and its active edges to the device; the active edges' vectors, types and centres
 * gathered there; the per-centre and per-atom result arrays sized */
template <typename REAL>
enum fnq_status upload_structure(Engine<REAL> *s, const struct fnq_graph *g)
{
    const int64_t E = (int64_t)s->h_index.size(), n = g->n_local, na = g->n_all,
                  ne = g->n_edges;
    const cudaStream_t st = s->stream;
    int *ep = &s->epoch;
    FNQ_CHECK(put(st, ep, s->species, g->species, na, "atom species"));
    FNQ_CHECK(put(st, ep, s->recv_start, g->recv_start, n + 1, "the graph's receivers"));
    FNQ_CHECK(put(st, ep, s->send_start, g->send_start, na + 1, "the graph's senders"));
    FNQ_CHECK(put(st, ep, s->edge_send, g->edge_send, ne, "edge senders"));
    FNQ_CHECK(put(st, ep, s->edge_recv, g->edge_recv, ne, "edge receivers"));
    FNQ_CHECK(put(st, ep, s->send_edges, g->send_edges, ne, "edges by sender"));
    FNQ_CHECK(put(st, ep, s->edge_vec, g->edge_vec, 3 * ne, "edge vectors"));
    FNQ_CHECK(put(st, ep, s->start, s->h_start.data(), n + 1, "active edges per centre"));
    FNQ_CHECK(put(st, ep, s->index, s->h_index.data(), E, "active edges"));
    FNQ_CHECK(ensure(s->vec, (size_t)(3 * E), "active edge vectors", ep));
    FNQ_CHECK(ensure(s->grad, (size_t)(3 * E), "active edge gradients", ep));
    FNQ_CHECK(ensure(s->ti, (size_t)E, "active edge types", ep));
    FNQ_CHECK(ensure(s->tj, (size_t)E, "active edge types", ep));
    FNQ_CHECK(ensure(s->centre, (size_t)E, "active edge centres", ep));
    FNQ_CHECK(ensure(s->edge_grad, (size_t)(3 * ne), "edge gradients", ep));
    FNQ_CHECK(ensure(s->energy, (size_t)n, "network energies", ep));
    FNQ_CHECK(ensure(s->atom_energy, (size_t)n, "atom energies", ep));
    FNQ_CHECK(ensure(s->forces, (size_t)(3 * na), "forces", ep));
    FNQ_CHECK(ensure(s->atom_virial, (size_t)(6 * na), "per-atom virials", ep));
    FNQ_CHECK(ensure(s->totals, 7, "energy and virial", ep));
    FNQ_CUDA_CHECK(allegro::gather_active(E, s->index.p, s->edge_vec.p, s->edge_recv.p,
                                          s->edge_send.p, s->species.p, s->vec.p, s->ti.p,
                                          s->tj.p, s->centre.p, st));
    return FNQ_STATUS_OK;
}

/* docs/allegro.md steps 1-10 forward, then back to dE/dr_e, for one chunk */
template <typename REAL> enum fnq_status run_chunk(Engine<REAL> *s, const Chunk &c)
{
    const ChunkArrays<REAL> &a = s->a;
    const Params<REAL> &p = s->p;
    const cudaStream_t st = s->stream;
    const allegro::Gemm<REAL> &g = s->gemm;
    const int rows = (int)c.n, S = s->S, U = s->U, nl = s->nl, SX = s->SX, XW = s->XW;
    const int L = s->L;
    const int Unl = U * nl, N = s->N, D = s->D;

    /* ---- forward ---- */
    FNQ_CUDA_CHECK(allegro::geometry(p, c, a.Y, a.basis, a.dbasis, st));
    const Cols<REAL> basis = {a.basis, N, N}, z0 = {a.z0, D, D}, z = {a.z, S, S},
                     w = {a.w, Unl, Unl};
    FNQ_CHECK(allegro::mlp_forward(g, s->basis_linear, rows, &basis, 1, &z0, 1, a.none,
                                   a.work));
    FNQ_CUDA_CHECK(allegro::embed_scale(p, c, a.z0, st));
    FNQ_CHECK(allegro::mlp_forward(g, s->two_body, rows, &z0, 1, &z, 1, a.two_pre, a.work));
    FNQ_CHECK(allegro::mlp_forward(g, s->tensor_embed, rows, &z, 1, &w, 1, a.te_pre,
                                   a.work));
    FNQ_CUDA_CHECK(allegro::tensor_embed(p, c, a.w, a.Y, a.V[0], st));
    const Cols<REAL> first_out[2] = {{a.X, XW, S}, {a.omega[0], Unl, Unl}};
    FNQ_CHECK(allegro::mlp_forward(g, s->first_proj, rows, &z, 1, first_out, 2, a.fp_pre,
                                   a.work));
    for (int k = 0; k < L; k++) {
        const int last = k == L - 1;
        FNQ_CUDA_CHECK(allegro::env_sum(p, c, a.omega[k], a.Y, a.G[k], st));
        /* the latent MLP's input is [X_0 .. X_k, the scalars]: the scalars go where X_k+1,
         * its output, will go, so the input is one range of X and its first product one GEMM
         * (two, the second over only U values of k, where the MLP is one layer: that GEMM
         * writes X_k+1 while it reads the scalars) */
        const bool scal_in_x = s->latent[k].K > 1;
        REAL *scal = scal_in_x ? a.X + S * (k + 1) : a.scal;
        FNQ_CUDA_CHECK(allegro::tp_forward(p, c, s->tp[k], a.V[k], a.G[k], a.V[k + 1], scal,
                                           scal_in_x ? XW : U, st));
        const Cols<REAL> in[2] = {{a.X, XW, S * (k + 1) + (scal_in_x ? U : 0)}, {a.scal, U, U}};
        const Cols<REAL> out[2] = {{a.X + S * (k + 1), XW, S},
                                   {last ? nullptr : a.omega[k + 1], Unl, Unl}};
        FNQ_CHECK(allegro::mlp_forward(g, s->latent[k], rows, in, scal_in_x ? 1 : 2, out,
                                       last ? 1 : 2, a.lat_pre[k], a.work));
    }
    const Cols<REAL> X = {a.X, XW, SX}, eps = {a.eps, 1, 1};
    FNQ_CHECK(allegro::mlp_forward(g, s->readout, rows, &X, 1, &eps, 1, a.ro_pre, a.work));
    /* energies at d_energy + first centre (centre_energy indexes from the chunk's first) */
    FNQ_CUDA_CHECK(allegro::centre_energy(p, c, a.eps, s->energy.p + c.centre0, st));

    /* ---- backward ---- */
    const int W = s->width;
    FNQ_CUDA_CHECK(allegro::readout_seed(p, c, a.geps, st));
    const Cols<REAL> geps = {a.geps, 1, 1}, gX = {a.gX, XW, SX};
    FNQ_CHECK(allegro::mlp_backward(g, s->readout, rows, &geps, 1, &gX, nullptr, 1, a.ro_pre,
                                    a.work, W));
    for (int k = L - 1; k >= 0; k--) {
        const int last = k == L - 1;
        /* the gradient of the latent MLP's output [X_k+1, omega_k+1] is one range of gX:
         * omega_k+1's, from the previous step's env_backward, lies after gX_k+1 (below) */
        const Cols<REAL> gout = {a.gX + S * (k + 1), XW, S + (last ? 0 : Unl)};
        const Cols<REAL> gin[2] = {{a.gX, XW, S * (k + 1)}, {a.gS, U, U}};
        const int add[2] = {1, 0};
        FNQ_CHECK(allegro::mlp_backward(g, s->latent[k], rows, &gout, 1, gin, add, 2,
                                        a.lat_pre[k], a.work, W));
        FNQ_CUDA_CHECK(allegro::tp_backward(p, c, s->tp[k], a.V[k], a.G[k],
                                            last ? nullptr : a.gV[(k + 1) & 1], a.gS,
                                            a.gV[k & 1], a.gG, st));
        /* omega_k's gradient where gX_k+1 was (its last reader was the GEMM above) */
        FNQ_CUDA_CHECK(allegro::env_backward(p, c, a.gG, a.omega[k], a.Y, a.gX + S * (k + 1), XW,
                                             a.gY, !last, st));
    }
    const Cols<REAL> gfirst = {a.gX, XW, S + Unl}; /* [gX_0, omega_0's gradient] */
    const Cols<REAL> gz = {a.gz, S, S}, gw = {a.gw, Unl, Unl}, gz0 = {a.gz0, D, D},
                     gbasis = {a.gbasis, N, N};
    const int add_one = 1;
    FNQ_CHECK(allegro::mlp_backward(g, s->first_proj, rows, &gfirst, 1, &gz, nullptr, 1,
                                    a.fp_pre, a.work, W));
    FNQ_CUDA_CHECK(allegro::tensor_embed_backward(p, c, a.gV[0], a.Y, a.w, a.gw, a.gY, st));
    FNQ_CHECK(allegro::mlp_backward(g, s->tensor_embed, rows, &gw, 1, &gz, &add_one, 1,
                                    a.te_pre, a.work, W));
    FNQ_CHECK(allegro::mlp_backward(g, s->two_body, rows, &gz, 1, &gz0, nullptr, 1,
                                    a.two_pre, a.work, W));
    FNQ_CUDA_CHECK(allegro::embed_scale(p, c, a.gz0, st));
    FNQ_CHECK(allegro::mlp_backward(g, s->basis_linear, rows, &gz0, 1, &gbasis, nullptr, 1,
                                    a.none, a.work, W));
    FNQ_CUDA_CHECK(allegro::edge_gradient(p, c, a.gbasis, a.dbasis, a.gY,
                                          s->grad.p + 3 * c.edge0, st));
    return FNQ_STATUS_OK;
}

template <typename REAL>
enum fnq_status engine_compute(Engine<REAL> *s, const struct fnq_graph *g,
                               struct fnq_results *out)
{
    using clock = std::chrono::steady_clock;
    const clock::time_point t0 = clock::now();
    FNQ_CUDA_CHECK(cudaSetDevice(s->device));
    collect_edges(s, g);
    const int64_t E = (int64_t)s->h_index.size(), n = g->n_local;
    int64_t max_degree = 1;
    for (int64_t i = 0; i < n; i++)
        if (s->h_start[i + 1] - s->h_start[i] > max_degree)
            max_degree = s->h_start[i + 1] - s->h_start[i];
    FNQ_CHECK(upload_structure(s, g));
    FNQ_CHECK(size_chunks(s, E, n, max_degree));
    const clock::time_point t1 = clock::now();
    for (int64_t c0 = 0; c0 < n;) {
        int64_t c1 = c0;
        while (c1 < n && c1 - c0 < s->run_centres &&
               s->h_start[c1 + 1] - s->h_start[c0] <= s->run_edges)
            c1++;
        Chunk c;
        c.edge0 = s->h_start[c0], c.n = s->h_start[c1] - c.edge0;
        c.centre0 = (int32_t)c0, c.nc = (int32_t)(c1 - c0);
        c.vec = s->vec.p + 3 * c.edge0;
        c.ti = s->ti.p + c.edge0, c.tj = s->tj.p + c.edge0, c.centre = s->centre.p + c.edge0;
        c.start = s->start.p + c0, c.ctype = s->species.p + c0;
        FNQ_CHECK(run_chunk(s, c));
        c0 = c1;
    }
    /* every graph edge's gradient (the pair term's, plus the network's on active edges),
     * then forces, virials and energies as for a NequIP model (assemble.cu) */
    const cudaStream_t st = s->stream;
    const int64_t na = g->n_all;
    const PairEdges pe = {s->pair, s->edge_recv.p, s->edge_send.p, s->species.p};
    FNQ_CUDA_CHECK(allegro::graph_edge_gradients(pe, g->n_edges, s->edge_vec.p, E, s->index.p,
                                                 s->grad.p, s->edge_grad.p, st));
    AssembleArgs as = {};
    as.n_local = n, as.n_all = na;
    as.recv_start = s->recv_start.p, as.send_start = s->send_start.p;
    as.send_edges = s->send_edges.p;
    as.edge_grad = s->edge_grad.p, as.edge_vec = s->edge_vec.p;
    as.e_atom = s->energy.p, as.species = s->species.p;
    as.energy_scale = s->ones, as.energy_shift = s->zeros; /* centre_energy applied both */
    as.pair = pe;
    as.forces = s->forces.p, as.atom_virial = s->atom_virial.p;
    as.atom_energy = s->atom_energy.p, as.totals = s->totals.p;
    FNQ_CUDA_CHECK(assemble_launch(as, st));
    double totals[7];
    FNQ_CUDA_CHECK(cudaMemcpyAsync(totals, s->totals.p, sizeof(totals), cudaMemcpyDeviceToHost,
                                   st));
    if (out->forces)
        FNQ_CUDA_CHECK(cudaMemcpyAsync(out->forces, s->forces.p, sizeof(double) * 3 * na,
                                       cudaMemcpyDeviceToHost, st));
    if (out->atom_virial)
        FNQ_CUDA_CHECK(cudaMemcpyAsync(out->atom_virial, s->atom_virial.p,
                                       sizeof(double) * 6 * na, cudaMemcpyDeviceToHost, st));
    if (out->atom_energies)
        FNQ_CUDA_CHECK(cudaMemcpyAsync(out->atom_energies, s->atom_energy.p,
                                       sizeof(double) * n, cudaMemcpyDeviceToHost, st));
    FNQ_CUDA_CHECK(cudaStreamSynchronize(st));
    s->t_gpu += std::chrono::duration<double>(clock::now() - t1).count();
    out->energy = totals[0];
    memcpy(out->virial, totals + 1, sizeof(out->virial));
    s->t_collect += std::chrono::duration<double>(t1 - t0).count();
    s->calls++;
    return FNQ_STATUS_OK;
}

/* The function table of one precision */
template <typename REAL> struct AllegroTable {
    static enum fnq_status init(const struct fnq_model *m, enum fnq_dtype dtype,
                                int32_t device_id, const struct fnq_options *opt, void **out)
    {
        (void)dtype;
        int n_dev = 0;
        if (cudaGetDeviceCount(&n_dev) != cudaSuccess || n_dev == 0) {
            cudaGetLastError();
            return fnq__fail(FNQ_STATUS_DEVICE, "no usable GPU for the Allegro model %s; run it "
                                                "on device 'cpu' (or auto)", m->source);
        }
        if (device_id < 0 || device_id >= n_dev)
            return fnq__fail(FNQ_STATUS_INVALID_ARG, "CUDA device %d requested, %d present (0..%d)",
                             device_id, n_dev, n_dev - 1);
        FNQ_CUDA_CHECK(cudaSetDevice(device_id));
        Engine<REAL> *s = new Engine<REAL>();
        s->m = m, s->al = m->allegro, s->device = device_id;
        s->chunk_option = opt->allegro_chunk;
        s->tf32 = opt->tf32 && sizeof(REAL) == sizeof(float);
        s->tensor_cores = !s->tf32 && sizeof(REAL) == sizeof(float) && !opt->allegro_cublas &&
                          gemm_3xtf32_available();
        s->timing = opt->timing;
        const enum fnq_status st = engine_setup(s);
        if (st != FNQ_STATUS_OK) {
            engine_free(s);
            return st;
        }
        *out = s;
        return FNQ_STATUS_OK;
    }
    static void release(void *p) { engine_free(static_cast<Engine<REAL> *>(p)); }
    static enum fnq_status compute(void *p, const struct fnq_graph *g,
                                   const struct fnq_exchange *x, struct fnq_results *out)
    {
        (void)x; /* strictly local: ghosts need positions only, no exchange */
        return engine_compute(static_cast<Engine<REAL> *>(p), g, out);
    }
};

} // namespace

const struct fnq_backend_i allegro_table_f32 = {
    "cuda", AllegroTable<float>::init, AllegroTable<float>::release, AllegroTable<float>::compute,
    nullptr, nullptr, nullptr, nullptr, nullptr};
const struct fnq_backend_i allegro_table_f64 = {
    "cuda", AllegroTable<double>::init, AllegroTable<double>::release,
    AllegroTable<double>::compute, nullptr, nullptr, nullptr, nullptr, nullptr};

} // namespace fnqcu
