/*
 * batch.c: fnq_ctx_compute_batch, many independent structures in one evaluation (screening,
 * relaxations, replica MD: structures too small to fill a GPU one by one). The structures'
 * neighbour lists join into one graph (graph_batch.c) that the backend evaluates as it would
 * one structure; per-structure energies and virials are the sums of their atoms' shares.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/ctx.h"
#include "api/status.h"

static enum fnq_status check_offsets(int64_t n_structures, const int64_t *atom_offsets)
{
    if (atom_offsets[0] != 0)
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "fnq_ctx_compute_batch: atom_offsets[0] is %lld; the first structure "
                         "starts at atom 0",
                         (long long)atom_offsets[0]);
    for (int64_t s = 0; s < n_structures; s++)
        if (atom_offsets[s + 1] < atom_offsets[s])
            return fnq__fail(FNQ_STATUS_INVALID_ARG,
                             "fnq_ctx_compute_batch: structure %lld ends (atom_offsets[%lld] = "
                             "%lld) before it starts (%lld)",
                             (long long)s, (long long)(s + 1), (long long)atom_offsets[s + 1],
                             (long long)atom_offsets[s]);
    return FNQ_STATUS_OK;
}

/* results land here first, so that a failure leaves the caller's arrays as they were: per-atom
 * energies [n], forces [n*3], atom virials [n*6], then the structures' energies [m] */
static double *scratch(struct fnq_ctx *ctx, int64_t n, int64_t m)
{
    const size_t need = (size_t)n * 10 + (size_t)m;
    if (need > ctx->batch_out_cap) {
        double *p = realloc(ctx->batch_out, sizeof(double) * need);
        if (!p)
            return NULL;
        ctx->batch_out = p;
        ctx->batch_out_cap = need;
    }
    return ctx->batch_out;
}

/* the sum over structure s's atoms of per-atom rows of `width` values */
static void structure_sum(const double *rows, int width, int64_t a0, int64_t a1, double *out)
{
    for (int k = 0; k < width; k++)
        out[k] = 0.0;
    for (int64_t i = a0; i < a1; i++)
        for (int k = 0; k < width; k++)
            out[k] += rows[(size_t)width * i + k];
}

enum fnq_status fnq_ctx_compute_batch(struct fnq_ctx *ctx, int64_t n_structures,
                                      const int64_t *atom_offsets, const double *positions,
                                      const int32_t *species, const double *cells,
                                      const int32_t *pbc, double *energies, double *atom_energies,
                                      double *forces, double *virials)
{
    fnq__clear_error();
    if (!ctx || n_structures < 0 || (n_structures > 0 && !atom_offsets))
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "fnq_ctx_compute_batch: NULL context or atom_offsets, or a negative "
                         "structure count");
    if (n_structures == 0)
        return FNQ_STATUS_OK;
    FNQ_CHECK(check_offsets(n_structures, atom_offsets));
    const int64_t n = atom_offsets[n_structures];
    if (n > 0 && (!positions || !species))
        return fnq__fail(FNQ_STATUS_INVALID_ARG,
                         "fnq_ctx_compute_batch: NULL positions or species");
    for (int64_t s = 0; s < n_structures; s++) {
        const int64_t a0 = atom_offsets[s];
        const enum fnq_status st =
            fnq__ctx_check_species(ctx->model, atom_offsets[s + 1] - a0, species + a0);
        if (st != FNQ_STATUS_OK)
            return fnq__fail_in_structure(st, s, a0);
    }
    FNQ_CHECK(fnq__graph_from_batch(&ctx->graph, &ctx->batch_parts, n_structures, atom_offsets,
                                    positions, species, cells, pbc, &ctx->limits));
    double *e_atom = scratch(ctx, n, n_structures);
    if (!e_atom)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY,
                         "out of host memory for the results of a batch of %lld atoms",
                         (long long)n);
    double *f_atom = e_atom + n, *v_atom = f_atom + 3 * n, *e_structure = v_atom + 6 * n;
    struct fnq_results r;
    memset(&r, 0, sizeof(r));
    r.atom_energies = e_atom;
    r.forces = f_atom;
    r.atom_virial = v_atom;
    const struct fnq_exchange x = {NULL, NULL, n, n};
    ctx->last_call.valid = 0; /* a batch is not a call fnq_ctx_compute_graph_repeat repeats */
    FNQ_CHECK(ctx->backend->compute(ctx->state, &ctx->graph.g, &x, &r));
    ctx->last_edges = ctx->graph.g.n_edges;
    for (int64_t s = 0; s < n_structures; s++) {
        structure_sum(e_atom, 1, atom_offsets[s], atom_offsets[s + 1], e_structure + s);
        if (!isfinite(e_structure[s]))
            return fnq__fail(FNQ_STATUS_INTERNAL,
                             "structure %lld: the energy came out as %g: the model produced a "
                             "non-finite value",
                             (long long)s, e_structure[s]);
    }
    if (energies)
        memcpy(energies, e_structure, sizeof(double) * (size_t)n_structures);
    if (virials)
        for (int64_t s = 0; s < n_structures; s++)
            structure_sum(v_atom, 6, atom_offsets[s], atom_offsets[s + 1], virials + 6 * s);
    if (atom_energies)
        memcpy(atom_energies, e_atom, sizeof(double) * (size_t)n);
    if (forces)
        memcpy(forces, f_atom, sizeof(double) * 3 * (size_t)n);
    return FNQ_STATUS_OK;
}
