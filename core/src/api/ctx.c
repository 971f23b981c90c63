/*
 * ctx.c: evaluation contexts: backend choice, input checks, graph preparation and the public
 * compute entry points. All heavy work is in the backend; this file only validates
 * and routes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "api/ctx.h"
#include "graph/graph.h"
#include "graph/pair_cache.h"
#include "api/status.h"
#include "model/modality.h"

enum fnq_status fnq_ctx_init(const struct fnq_model *model, enum fnq_device device,
                             int32_t device_id, enum fnq_dtype dtype, struct fnq_ctx **out)
{
    fnq__clear_error();
    if (!model || !out)
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "fnq_ctx_init: NULL model or output pointer");
    *out = NULL;
    if (device != FNQ_DEVICE_CPU && device != FNQ_DEVICE_CUDA && device != FNQ_DEVICE_AUTO)
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "fnq_ctx_init: unknown device %d", (int)device);
    if (dtype != FNQ_DTYPE_F32 && dtype != FNQ_DTYPE_F64 && dtype != FNQ_DTYPE_DEFAULT)
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "fnq_ctx_init: unknown dtype %d", (int)dtype);
    FNQ_CHECK(fnq__model_check_modality(model));

    /* the backends this build has: backend_registry.c */
    const struct fnq_backend_reg *cuda = fnq__backend_reg_by_device(FNQ_DEVICE_CUDA);
    const struct fnq_backend_reg *cpu = fnq__backend_reg_by_device(FNQ_DEVICE_CPU);
    const int automatic = device == FNQ_DEVICE_AUTO, default_dtype = dtype == FNQ_DTYPE_DEFAULT;
    if (automatic)
        device = (cuda && cuda->device_count() > 0) ? FNQ_DEVICE_CUDA : FNQ_DEVICE_CPU;
    if (device == FNQ_DEVICE_CUDA && !cuda)
        return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                         "device 'cuda' requested but this build of libfusednequip has no CUDA "
                         "backend (rebuild with -DFNQ_ENABLE_CUDA=ON), or use device 'cpu'");
    if (dtype == FNQ_DTYPE_DEFAULT)
        dtype = device == FNQ_DEVICE_CUDA ? FNQ_DTYPE_F32 : FNQ_DTYPE_F64;

    struct fnq_ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of host memory");
    c->model = model;
    c->device = device;
    c->dtype = dtype;
    c->backend = fnq__backend_reg_table(device == FNQ_DEVICE_CUDA ? cuda : cpu, model, dtype);
    c->limits.cutoff = model->cutoff;
    c->limits.min_distance = 0.1;
    c->limits.max_neighbors = 1024;
    fnq__options_read(&c->options);
    enum fnq_status st = c->backend->init(model, dtype, device_id, &c->options, &c->state);
    if (st == FNQ_STATUS_UNSUPPORTED && automatic && device == FNQ_DEVICE_CUDA) {
        /* device "auto" means "the best device that can run this model": a model the CUDA
         * kernels do not cover (e.g. l > 3) runs on the CPU, and says so once */
        fnq__log(FNQ_LOG_WARN, "device auto: the CUDA backend cannot run model %s (%s); using "
                               "the CPU",
                 model->source, fnq_last_error());
        fnq__clear_error();
        c->device = FNQ_DEVICE_CPU;
        c->dtype = default_dtype ? FNQ_DTYPE_F64 : dtype;
        c->backend = fnq__backend_reg_table(cpu, model, c->dtype);
        st = c->backend->init(model, c->dtype, device_id, &c->options, &c->state);
    }
    if (st != FNQ_STATUS_OK) {
        free(c);
        return st;
    }
    *out = c;
    return FNQ_STATUS_OK;
}

void fnq_ctx_free(struct fnq_ctx *ctx)
{
    if (!ctx)
        return;
    ctx->backend->free(ctx->state);
    fnq__graph_buf_free(&ctx->graph);
    fnq__batch_parts_free(&ctx->batch_parts);
    free(ctx->batch_out);
    fnq__pair_cache_free(&ctx->last_call);
    free(ctx->mirror);
    free(ctx);
}

enum fnq_device fnq_ctx_device(const struct fnq_ctx *ctx) { return ctx->device; }
enum fnq_dtype fnq_ctx_dtype(const struct fnq_ctx *ctx) { return ctx->dtype; }
int64_t fnq_ctx_last_num_edges(const struct fnq_ctx *ctx) { return ctx ? ctx->last_edges : 0; }

int32_t fnq_ctx_last_kernel_launches(const struct fnq_ctx *ctx, int32_t *neighbor_list)
{
    int32_t model = 0, nl = 0;
    if (ctx && ctx->backend->launch_counts)
        ctx->backend->launch_counts(ctx->state, &model, &nl);
    if (neighbor_list)
        *neighbor_list = nl;
    return model;
}

enum fnq_status fnq_ctx_set_min_distance(struct fnq_ctx *ctx, double min_distance)
{
    if (!ctx || !(min_distance >= 0.0) || min_distance >= ctx->limits.cutoff)
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "min_distance must be >= 0 and below the cutoff (got %g)", min_distance);
    ctx->limits.min_distance = min_distance;
    return FNQ_STATUS_OK;
}

enum fnq_status fnq_ctx_set_max_neighbors(struct fnq_ctx *ctx, int64_t max_neighbors)
{
    if (!ctx || max_neighbors < 1)
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "max_neighbors must be >= 1 (got %lld)",
                         (long long)max_neighbors);
    ctx->limits.max_neighbors = max_neighbors;
    return FNQ_STATUS_OK;
}

enum fnq_status fnq_ctx_set_comm(struct fnq_ctx *ctx, const struct fnq_comm *comm)
{
    if (!ctx)
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "fnq_ctx_set_comm: NULL context");
    if (comm && (!comm->forward || !comm->reverse))
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "fnq_ctx_set_comm: both forward and reverse callbacks are required");
    ctx->has_comm = comm != NULL;
    if (comm) {
        ctx->comm = *comm;
        ctx->has_device_comm = 0;
    }
    return FNQ_STATUS_OK;
}

enum fnq_status fnq_ctx_set_device_comm(struct fnq_ctx *ctx, const struct fnq_device_comm *comm)
{
    if (!ctx)
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "fnq_ctx_set_device_comm: NULL context");
    if (comm && ctx->device != FNQ_DEVICE_CUDA)
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "fnq_ctx_set_device_comm: the context is on device %s; a device "
                         "exchange needs device cuda (use fnq_ctx_set_comm)",
                         ctx->backend->name);
    if (comm && (!comm->forward || !comm->reverse))
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "fnq_ctx_set_device_comm: both forward and reverse callbacks are required");
    ctx->has_device_comm = comm != NULL;
    if (comm) {
        ctx->device_comm = *comm;
        ctx->has_comm = 0;
    }
    return FNQ_STATUS_OK;
}

/* The context's exchange for n_local owned atoms of n_all (n_all == n_local: no ghost rows) */
static struct fnq_exchange exchange_of(const struct fnq_ctx *ctx, int64_t n_local, int64_t n_all)
{
    const struct fnq_exchange x = {ctx->has_comm ? &ctx->comm : NULL,
                                   ctx->has_device_comm ? &ctx->device_comm : NULL, n_local,
                                   n_all};
    return x;
}

/* whether the caller exchanges ghost rows (fnq_ctx_set_comm or fnq_ctx_set_device_comm) */
static int caller_exchanges(const struct fnq_ctx *ctx)
{
    return ctx->has_comm || ctx->has_device_comm;
}

enum fnq_status fnq__ctx_check_species(const struct fnq_model *m, int64_t n, const int32_t *species)
{
    for (int64_t i = 0; i < n; i++)
        if (species[i] < 0 || species[i] >= m->n_species)
            return fnq__fail_atoms(FNQ_STATUS_INVALID_ARG, i, -1,
                                   "atom %lld has species index %d; the model has %d species "
                                   "(0..%d)",
                                   (long long)i, species[i], m->n_species, m->n_species - 1);
    return FNQ_STATUS_OK;
}

/* A backend's energy and virial to the caller, unless the model produced a non-finite energy */
static enum fnq_status hand_over(const struct fnq_results *r, double *energy, double *virial)
{
    if (!isfinite(r->energy))
        return fnq__fail(FNQ_STATUS_INTERNAL,
                         "the energy came out as %g: the model produced a non-finite value",
                         r->energy);
    if (energy)
        *energy = r->energy;
    if (virial)
        memcpy(virial, r->virial, sizeof(r->virial));
    return FNQ_STATUS_OK;
}

/* x == NULL: periodic evaluation by the backend's own neighbour list; edges: the caller's
 * pairs, turned into the graph by the backend */
static enum fnq_status run(struct fnq_ctx *ctx, const struct fnq_exchange *x,
                           const struct fnq_edge_input *edges, double *energy,
                           double *atom_energies, double *forces, double *virial,
                           double *atom_virial, int64_t n, const double *pos,
                           const int32_t *species, const double *cell, const int32_t *pbc)
{
    struct fnq_results r;
    memset(&r, 0, sizeof(r));
    r.atom_energies = atom_energies;
    r.forces = forces;
    r.atom_virial = atom_virial;
    if (edges) {
        FNQ_CHECK(ctx->backend->compute_edges(ctx->state, edges, &ctx->limits, x, &r,
                                              &ctx->last_edges));
    } else if (x) {
        FNQ_CHECK(ctx->backend->compute(ctx->state, &ctx->graph.g, x, &r));
        ctx->last_edges = ctx->graph.g.n_edges;
    } else {
        FNQ_CHECK(ctx->backend->compute_periodic(ctx->state, n, pos, species, cell, pbc,
                                                 &ctx->limits, &r, &ctx->last_edges));
    }
    return hand_over(&r, energy, virial);
}

enum fnq_status fnq_ctx_compute_periodic(struct fnq_ctx *ctx, int64_t n_atoms,
                                         const double *positions, const int32_t *species,
                                         const double *cell, const int32_t *pbc, double *energy,
                                         double *atom_energies, double *forces, double *virial)
{
    fnq__clear_error();
    if (!ctx || n_atoms < 0 || (n_atoms > 0 && (!positions || !species)))
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "fnq_ctx_compute_periodic: NULL context, positions or species, or a "
                         "negative atom count");
    FNQ_CHECK(fnq__ctx_check_species(ctx->model, n_atoms, species));
    if (ctx->backend->compute_periodic)
        return run(ctx, NULL, NULL, energy, atom_energies, forces, virial, NULL, n_atoms, positions,
                   species, cell, pbc);
    FNQ_CHECK(fnq__graph_from_cell(&ctx->graph, n_atoms, positions, species, cell, pbc,
                                   &ctx->limits));
    const struct fnq_exchange x = {NULL, NULL, n_atoms, n_atoms};
    return run(ctx, &x, NULL, energy, atom_energies, forces, virial, NULL, 0, NULL, NULL, NULL,
               NULL);
}

/* A caller's pairs (in) evaluated: as a graph built by the backend (on_backend), else built
 * here on the host; ghosts folded by in->ghost_owner get zero force rows. With a caller's
 * exchange the graph keeps the ghost rows (those of other ranks' atoms are exchanged). */
static enum fnq_status evaluate_pairs(struct fnq_ctx *ctx, const struct fnq_edge_input *in,
                                      int on_backend, double *energy, double *atom_energies,
                                      double *forces, double *virial, double *atom_virial)
{
    const int64_t *fold = in->ghost_owner;
    const int keep_rows = caller_exchanges(ctx);
    const struct fnq_exchange x =
        exchange_of(ctx, in->n_local, fnq__graph_rows(in->n_local, in->n_all, fold, keep_rows));
    if (on_backend) {
        FNQ_CHECK(run(ctx, &x, in, energy, atom_energies, forces, virial, atom_virial, 0, NULL,
                      NULL, NULL, NULL));
    } else {
        FNQ_CHECK(fnq__graph_from_edges(&ctx->graph, in->n_local, in->n_all, in->pos, in->species,
                                        in->n_edges, in->recv, in->send, in->shift, fold,
                                        keep_rows, &ctx->limits));
        FNQ_CHECK(run(ctx, &x, NULL, energy, atom_energies, forces, virial, atom_virial, 0, NULL,
                      NULL, NULL, NULL));
    }
    if (fold && !keep_rows) {
        const size_t ghosts = (size_t)(in->n_all - in->n_local);
        if (forces)
            memset(forces + 3 * in->n_local, 0, sizeof(double) * 3 * ghosts);
        if (atom_virial)
            memset(atom_virial + 6 * in->n_local, 0, sizeof(double) * 6 * ghosts);
    }
    return FNQ_STATUS_OK;
}

enum fnq_status fnq_ctx_compute_graph(struct fnq_ctx *ctx, int64_t n_local, int64_t n_all,
                                      const double *positions, const int32_t *species,
                                      int64_t n_edges, const int64_t *edge_recv,
                                      const int64_t *edge_send, const double *edge_shift,
                                      const int64_t *ghost_owner, double *energy,
                                      double *atom_energies, double *forces, double *virial,
                                      double *atom_virial)
{
    fnq__clear_error();
    if (!ctx || n_local < 0 || n_all < n_local || n_edges < 0)
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "fnq_ctx_compute_graph: NULL context or bad counts (n_local %lld, n_all "
                         "%lld, n_edges %lld)",
                         (long long)n_local, (long long)n_all, (long long)n_edges);
    if ((n_all > 0 && (!positions || !species)) || (n_edges > 0 && (!edge_recv || !edge_send)))
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "fnq_ctx_compute_graph: NULL positions, species or edge arrays");
    const int caller_exchange = caller_exchanges(ctx);
    /* a local model (Allegro) exchanges nothing between layers: ghosts are used as they are */
    const int local_model = ctx->model->allegro != NULL;
    if (n_all > n_local && !caller_exchange && !ghost_owner && !local_model)
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "fnq_ctx_compute_graph: %lld ghost atoms need ghost_owner or an "
                         "installed comm (fnq_ctx_set_comm, fnq_ctx_set_device_comm)",
                         (long long)(n_all - n_local));
    /* with a caller's exchange, -1 marks a ghost the exchange fills (another rank's atom) */
    if (ghost_owner)
        for (int64_t k = 0; k < n_all - n_local; k++)
            if (ghost_owner[k] < (caller_exchange ? -1 : 0) || ghost_owner[k] >= n_local)
                return fnq__fail_atoms(FNQ_STATUS_INVALID_ARG, n_local + k, -1,
                                       "ghost atom %lld: owner %lld is not an owned atom "
                                       "(0..%lld)%s",
                                       (long long)(n_local + k), (long long)ghost_owner[k],
                                       (long long)(n_local - 1),
                                       caller_exchange ? " nor -1 (exchanged)" : "");
    FNQ_CHECK(fnq__ctx_check_species(ctx->model, n_all, species));
    /* Ghosts given an owner are folded onto it as the graph is built (graph.h); their force
     * rows come back as zeros. Without a caller's exchange that is every ghost: no ghost rows,
     * no exchange. */
    const int64_t *fold = n_all > n_local ? ghost_owner : NULL;
    /* the backend builds the graph where it can (the GPU sorts millions of pairs faster than
     * the host, and keeps them for fnq_ctx_compute_graph_repeat); FNQ_HOST_GRAPH=1 keeps it on
     * the host (tests compare both) */
    const int on_backend = ctx->backend->compute_edges && n_edges <= INT32_MAX &&
                           n_all < INT32_MAX && !ctx->options.host_graph;
    const struct fnq_edge_input in = {n_local,   n_all,     n_edges,    positions, species,
                                      edge_recv, edge_send, edge_shift, fold,      0, 0, 0};
    ctx->last_call.valid = 0;
    FNQ_CHECK(evaluate_pairs(ctx, &in, on_backend, energy, atom_energies, forces, virial,
                             atom_virial));
    return fnq__pair_cache_save(&ctx->last_call, on_backend, n_local, n_all, species, n_edges,
                                edge_recv, edge_send, edge_shift, fold);
}

enum fnq_status fnq_ctx_compute_graph_repeat(struct fnq_ctx *ctx, const double *positions,
                                             double *energy, double *atom_energies,
                                             double *forces, double *virial, double *atom_virial)
{
    fnq__clear_error();
    if (!ctx || !ctx->last_call.valid)
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "fnq_ctx_compute_graph_repeat: %s", !ctx ? "NULL context"
                         : "no earlier fnq_ctx_compute_graph on this context to repeat (or it failed)");
    const struct fnq_pair_cache *c = &ctx->last_call;
    if (c->n_all > 0 && !positions)
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "fnq_ctx_compute_graph_repeat: NULL positions");
    const struct fnq_edge_input in = {c->n_local, c->n_all,  c->n_edges, positions,
                                      c->species, c->recv,   c->send,    c->shift,
                                      c->owner,   0,         c->on_backend, 0};
    const enum fnq_status st = evaluate_pairs(ctx, &in, c->on_backend, energy, atom_energies,
                                              forces, virial, atom_virial);
    if (st != FNQ_STATUS_OK)
        ctx->last_call.valid = 0;
    return st;
}

/* Host copies of the caller's device positions and species, in ctx->mirror (24 + 4 bytes per
 * atom: small next to the pairs, which stay on the device). */
static enum fnq_status mirror_inputs(struct fnq_ctx *ctx, int64_t n, const double *positions,
                                     const int32_t *species, double **pos_out,
                                     int32_t **species_out)
{
    const size_t pos_bytes = sizeof(double) * 3 * (size_t)n, bytes = pos_bytes + 4 * (size_t)n;
    if (bytes > ctx->mirror_cap) {
        void *p = realloc(ctx->mirror, bytes);
        if (!p)
            return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY,
                             "fnq_ctx_compute_graph_device: out of host memory for %lld atoms",
                             (long long)n);
        ctx->mirror = p;
        ctx->mirror_cap = bytes;
    }
    *pos_out = ctx->mirror;
    *species_out = (int32_t *)((char *)ctx->mirror + pos_bytes);
    if (n == 0)
        return FNQ_STATUS_OK;
    FNQ_CHECK(ctx->backend->to_host(ctx->state, *pos_out, positions, pos_bytes, "positions"));
    if (!species)
        return FNQ_STATUS_OK;
    return ctx->backend->to_host(ctx->state, *species_out, species, 4 * (size_t)n, "species");
}

/* The repeat of a caller on the GPU: positions read and forces added where they are. The
 * pairs must be the GPU's (kept by the last fnq_ctx_compute_graph); the positions are checked
 * on the device, and copied to the host only to word a failed check. */
enum fnq_status fnq_ctx_compute_graph_repeat_device(struct fnq_ctx *ctx, const double *positions,
                                                    double *forces, double *energy,
                                                    double *virial)
{
    fnq__clear_error();
    const char *fn = "fnq_ctx_compute_graph_repeat_device";
    if (!ctx)
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "%s: NULL context", fn);
    if (ctx->device != FNQ_DEVICE_CUDA || !ctx->backend->check_inputs)
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "%s: the context is on device %s; device arrays need a context on "
                         "device cuda (else use fnq_ctx_compute_graph_repeat)",
                         fn, ctx->backend->name);
    if (!ctx->last_call.valid)
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "%s: no earlier fnq_ctx_compute_graph on this context to repeat (or "
                         "it failed)", fn);
    const struct fnq_pair_cache *c = &ctx->last_call;
    if (!c->on_backend)
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "%s: the last fnq_ctx_compute_graph built its graph on the host "
                         "(FNQ_HOST_GRAPH=1, or 2^31 pairs or more), so the GPU holds no pairs "
                         "to repeat: use fnq_ctx_compute_graph_repeat",
                         fn);
    if (c->n_all > 0 && (!positions || !forces))
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "%s: NULL positions or forces", fn);
    int ok = 0;
    FNQ_CHECK(ctx->backend->check_inputs(ctx->state, c->n_all, positions, NULL,
                                         ctx->model->n_species, &ok));
    if (!ok) {
        double *pos = NULL;
        int32_t *unused = NULL;
        FNQ_CHECK(mirror_inputs(ctx, c->n_all, positions, NULL, &pos, &unused));
        ctx->last_call.valid = 0;
        FNQ_CHECK(fnq__check_positions(c->n_all, pos));
        return fnq__fail(FNQ_STATUS_INTERNAL, "%s: the GPU and host position checks disagree",
                         fn);
    }
    const struct fnq_edge_input in = {c->n_local, c->n_all,  c->n_edges, positions,
                                      c->species, NULL,      NULL,       NULL,
                                      c->owner,   0,         1,          1};
    const int keep_rows = caller_exchanges(ctx);
    const struct fnq_exchange x =
        exchange_of(ctx, c->n_local, fnq__graph_rows(c->n_local, c->n_all, c->owner, keep_rows));
    struct fnq_results r;
    memset(&r, 0, sizeof(r));
    r.forces_add_device = forces;
    enum fnq_status st =
        ctx->backend->compute_edges(ctx->state, &in, &ctx->limits, &x, &r, &ctx->last_edges);
    if (st == FNQ_STATUS_OK)
        st = hand_over(&r, energy, virial);
    if (st != FNQ_STATUS_OK)
        ctx->last_call.valid = 0;
    return st;
}

enum fnq_status fnq_ctx_compute_graph_device(struct fnq_ctx *ctx, int64_t n_atoms,
                                             const double *positions, const int32_t *species,
                                             int64_t n_edges, const int64_t *edge_recv,
                                             const int64_t *edge_send, const double *edge_shift,
                                             double *energy, double *atom_energies,
                                             double *forces, double *virial)
{
    fnq__clear_error();
    if (!ctx || n_atoms < 0 || n_edges < 0)
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "fnq_ctx_compute_graph_device: NULL context or bad counts (n_atoms "
                         "%lld, n_edges %lld)",
                         (long long)n_atoms, (long long)n_edges);
    if (ctx->device != FNQ_DEVICE_CUDA || !ctx->backend->to_host || !ctx->backend->compute_edges)
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "fnq_ctx_compute_graph_device: the context is on device %s; device "
                         "arrays need a context on device cuda (else use fnq_ctx_compute_graph)",
                         ctx->backend->name);
    if ((n_atoms > 0 && (!positions || !species)) || (n_edges > 0 && (!edge_recv || !edge_send)))
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "fnq_ctx_compute_graph_device: NULL positions, species or edge arrays");
    ctx->last_call.valid = 0; /* its pairs are the caller's: nothing kept to repeat */
    /* the GPU graph builder's index types (as fnq_ctx_compute_graph's GPU route) */
    if (n_edges > INT32_MAX || n_atoms >= INT32_MAX)
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "fnq_ctx_compute_graph_device: %lld atoms, %lld pairs: the GPU graph "
                         "builder takes fewer than 2^31 of each",
                         (long long)n_atoms, (long long)n_edges);
    /* the checks of the host route: on the device where the backend can, on host copies only
     * to word a message (the pairs' are the backend's, alike) */
    int ok = 0;
    if (ctx->backend->check_inputs)
        FNQ_CHECK(ctx->backend->check_inputs(ctx->state, n_atoms, positions, species,
                                             ctx->model->n_species, &ok));
    if (!ok) {
        double *pos = NULL;
        int32_t *sp = NULL;
        FNQ_CHECK(mirror_inputs(ctx, n_atoms, positions, species, &pos, &sp));
        FNQ_CHECK(fnq__ctx_check_species(ctx->model, n_atoms, sp));
        FNQ_CHECK(fnq__check_positions(n_atoms, pos));
    }
    const struct fnq_exchange x = exchange_of(ctx, n_atoms, n_atoms);
    const struct fnq_edge_input in = {n_atoms,   n_atoms,   n_edges,    positions, species,
                                      edge_recv, edge_send, edge_shift, NULL,      1, 0, 0};
    return run(ctx, &x, &in, energy, atom_energies, forces, virial, NULL, 0, NULL, NULL, NULL,
               NULL);
}
