/*
 * fnqm_load.c: build a model from a .fnqm file (docs/model-format.md). The header spells the
 * network out (irreps of every stage, tensor-product paths in radial-weight order, gate
 * wiring, activations with their constants), so this reader knows no framework's rules; it
 * checks every index, selection rule and array shape against the header and names the field
 * at fault.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allegro/allegro.h"
#include "model/fnqm.h"
#include "model/modality.h"
#include "math/sh.h"
#include "api/status.h"

/* ---- small header readers (messages name the field path) ---- */

static enum fnq_status get_irreps(const cJSON *obj, const char *key, const char *file,
                                  const char *path, struct fnq_irreps *out)
{
    const cJSON *v = fnq__fnqm_field(obj, key);
    FNQ_CHECK(fnq__fnqm_need(v, file, path));
    if (!cJSON_IsString(v) || fnq__irreps_parse(v->valuestring, out) != 0)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field '%s' is not an irreps string like \"8x0e+8x1o\" "
                         "(at most %d blocks of at most %d channels, l <= %d)",
                         file, path, FNQ_MAX_BLOCKS, FNQ_MAX_MUL, FNQ_MAX_L);
    return FNQ_STATUS_OK;
}

static int irreps_equal(const struct fnq_irreps *a, const struct fnq_irreps *b)
{
    if (a->n_blocks != b->n_blocks)
        return 0;
    for (int32_t k = 0; k < a->n_blocks; k++)
        if (a->block[k].mul != b->block[k].mul || a->block[k].l != b->block[k].l ||
            a->block[k].parity != b->block[k].parity)
            return 0;
    return 1;
}

static enum fnq_status get_activation(const cJSON *obj, const char *key, const char *file,
                                      const char *path, struct fnq_activation *out)
{
    static const char *const names[] = {"identity", "silu", "tanh", "ssp", "abs", "sigmoid"};
    *out = (struct fnq_activation){FNQ_ACT_IDENTITY, 1.0};
    const cJSON *v = fnq__fnqm_field(obj, key);
    if (!v)
        return FNQ_STATUS_OK; /* identity */
    const cJSON *name = fnq__fnqm_field(v, "name");
    if (!cJSON_IsString(name))
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field '%s' must be {\"name\": ..., \"scale\": ...}", file,
                         path);
    int kind = -1;
    for (int k = 0; k < (int)(sizeof(names) / sizeof(names[0])); k++)
        if (strcmp(name->valuestring, names[k]) == 0)
            kind = k;
    if (kind < 0)
        return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                         "%s: header field '%s': activation '%s' is not supported (identity, "
                         "silu, tanh, ssp, abs, sigmoid)",
                         file, path, name->valuestring);
    out->kind = (enum fnq_act)kind;
    if (fnq__fnqm_field(v, "scale")) {
        char p[160];
        snprintf(p, sizeof(p), "%s.scale", path);
        FNQ_CHECK(fnq__fnqm_number(v, "scale", file, p, &out->scale));
    }
    return FNQ_STATUS_OK;
}

/* An e3nn Linear (instructions: every pair of equal irreps, input-major) whose weights are one
 * shared set [n_w] or one set per species [n_species, n_w]. */
static enum fnq_status read_factored_linear(const struct fnqm_arrays *a, const cJSON *obj,
                                            const char *path, const struct fnq_irreps *in,
                                            const struct fnq_irreps *out, int32_t n_species,
                                            struct fnq_linear *lin);

static enum fnq_status read_linear(const struct fnqm_arrays *a, const cJSON *ref,
                                   const char *path, const struct fnq_irreps *in,
                                   const struct fnq_irreps *out, int32_t n_species,
                                   struct fnq_linear *lin)
{
    if (cJSON_IsObject(ref))
        return read_factored_linear(a, ref, path, in, out, n_species, lin);
    const struct fnqm_array *e = fnq__fnqm_array_find(a, ref);
    int32_t sets = (e && e->rec.ndim == 2) ? n_species : 1;
    /* the array must hold the weights before they are allocated: a header's irreps can ask for
     * any number of them; fnq__fnqm_array_get names the array and both shapes when not */
    int64_t n_w = fnq__linear_count(in, out);
    if (!e || e->rec.count != n_w * sets) {
        int64_t shape[2] = {sets > 1 ? sets : n_w, n_w};
        double *none = NULL;
        enum fnq_status st = fnq__fnqm_array_get(a, path, ref, sets > 1 ? 2 : 1,
                                                 sets > 1 ? shape : shape + 1, &none);
        free(none);
        if (st != FNQ_STATUS_OK)
            return st;
    }
    if (fnq__linear_build(lin, in, out, sets) != 0)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    lin->species_indexed = e && e->rec.ndim == 2;
    double *w;
    if (lin->species_indexed) {
        int64_t shape[2] = {n_species, lin->n_w};
        FNQ_CHECK(fnq__fnqm_array_get(a, path, ref, 2, shape, &w));
    } else {
        int64_t shape[1] = {lin->n_w};
        FNQ_CHECK(fnq__fnqm_array_get(a, path, ref, 1, shape, &w));
    }
    memcpy(lin->w, w, sizeof(double) * (size_t)(lin->n_w * sets));
    free(w);
    return FNQ_STATUS_OK;
}

/* A per-species linear in factored form, {"weights": [K, n_w], "species_coefficients":
 * [T, K]}: set t is sum_k C[t][k] W[k]. NequIP's self-connection FCTP(h, type embedding) is
 * this with C = the embedding (K = its width): the file holds K sets instead of T, and the
 * sets are expanded here once. */
static enum fnq_status read_factored_linear(const struct fnqm_arrays *a, const cJSON *obj,
                                            const char *path, const struct fnq_irreps *in,
                                            const struct fnq_irreps *out, int32_t n_species,
                                            struct fnq_linear *lin)
{
    char sub[192];
    const cJSON *wref = fnq__fnqm_field(obj, "weights"), *cref = fnq__fnqm_field(obj, "species_coefficients");
    const struct fnqm_array *e = fnq__fnqm_array_find(a, cref);
    snprintf(sub, sizeof(sub), "%s.species_coefficients", path);
    if (!e || e->rec.ndim != 2 || e->rec.shape[0] != n_species || e->rec.shape[1] < 1 ||
        e->rec.shape[1] > 4096)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field '%s' must name an array [%d species, K] (K <= 4096)",
                         a->file, sub, n_species);
    const int64_t K = e->rec.shape[1], n_w = fnq__linear_count(in, out);
    int64_t cshape[2] = {n_species, K}, wshape[2] = {K, n_w};
    double *c = NULL, *w = NULL;
    FNQ_CHECK(fnq__fnqm_array_get(a, sub, cref, 2, cshape, &c));
    snprintf(sub, sizeof(sub), "%s.weights", path);
    enum fnq_status st = fnq__fnqm_array_get(a, sub, wref, 2, wshape, &w);
    if (st == FNQ_STATUS_OK && fnq__linear_build(lin, in, out, n_species) != 0)
        st = fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    if (st == FNQ_STATUS_OK) {
        lin->species_indexed = 1;
        /* by column blocks, so that a block of the K sets stays in cache for every species
         * (NequIP-OAM-XL: 32 sets of 860,000 weights -> 89 species in about a second) */
        const int64_t cols = 2048;
#pragma omp parallel for schedule(dynamic, 1)
        for (int64_t i0 = 0; i0 < n_w; i0 += cols) {
            const int64_t n = n_w - i0 < cols ? n_w - i0 : cols;
            for (int32_t t = 0; t < n_species; t++) {
                double *set = lin->w + (size_t)t * (size_t)n_w + i0;
                memset(set, 0, sizeof(double) * (size_t)n);
                for (int64_t k = 0; k < K; k++) {
                    const double ck = c[t * K + k], *wk = w + k * n_w + i0;
                    for (int64_t i = 0; i < n; i++)
                        set[i] += ck * wk[i];
                }
            }
        }
    }
    free(c);
    free(w);
    return st;
}

/* radial_basis.envelope: absent or {"kind": "polynomial"} (with radial_basis.polynomial_p), or
 * {"kind": "xplor", "r_on": r} with 0 < r < cutoff (docs/model-format.md) */
static enum fnq_status read_envelope(const cJSON *rb, const char *file, struct fnq_model *m)
{
    const cJSON *env = fnq__fnqm_field(rb, "envelope");
    const cJSON *kind = env ? fnq__fnqm_field(env, "kind") : NULL;
    if (env && !cJSON_IsString(kind))
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field 'radial_basis.envelope.kind' must be a string", file);
    if (kind && !strcmp(kind->valuestring, "xplor")) {
        FNQ_CHECK(fnq__fnqm_number(env, "r_on", file, "radial_basis.envelope.r_on",
                                   &m->xplor_r_on));
        if (!(m->xplor_r_on > 0.0 && m->xplor_r_on < m->cutoff))
            return fnq__fail(FNQ_STATUS_FORMAT,
                             "%s: header field 'radial_basis.envelope.r_on' must lie between 0 "
                             "and the cutoff (%g)", file, m->cutoff);
        return FNQ_STATUS_OK;
    }
    if (kind && strcmp(kind->valuestring, "polynomial"))
        return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                         "%s: radial_basis.envelope.kind '%s' is not supported (polynomial, "
                         "xplor)", file, kind->valuestring);
    FNQ_CHECK(fnq__fnqm_number(rb, "polynomial_p", file, "radial_basis.polynomial_p", &m->poly_p));
    if (!(m->poly_p >= 1.0))
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field 'radial_basis.polynomial_p' must be >= 1", file);
    return FNQ_STATUS_OK;
}

/* ---- parts of the model ---- */

static enum fnq_status read_geometry(const cJSON *h, const struct fnqm_arrays *a,
                                     struct fnq_model *m, int32_t *sh_natural)
{
    const char *file = a->file;
    FNQ_CHECK(fnq__fnqm_number(h, "cutoff", file, "cutoff", &m->cutoff));
    if (!(m->cutoff > 0.0))
        return fnq__fail(FNQ_STATUS_FORMAT, "%s: header field 'cutoff' must be positive", file);

    const cJSON *rb = fnq__fnqm_field(h, "radial_basis");
    FNQ_CHECK(fnq__fnqm_need(rb, file, "radial_basis"));
    FNQ_CHECK(fnq__fnqm_int(fnq__fnqm_field(rb, "n_basis"), file, "radial_basis.n_basis", 1, 128, &m->n_basis));
    FNQ_CHECK(read_envelope(rb, file, m));
    int64_t shape[1] = {m->n_basis};
    FNQ_CHECK(fnq__fnqm_need(fnq__fnqm_field(rb, "bessel_freq"), file, "radial_basis.bessel_freq"));
    FNQ_CHECK(fnq__fnqm_array_get(a, "radial_basis.bessel_freq", fnq__fnqm_field(rb, "bessel_freq"), 1,
                                  shape, &m->bessel_freq));

    const cJSON *sh = fnq__fnqm_field(h, "spherical_harmonics");
    FNQ_CHECK(fnq__fnqm_need(sh, file, "spherical_harmonics"));
    FNQ_CHECK(fnq__fnqm_int(fnq__fnqm_field(sh, "lmax"), file, "spherical_harmonics.lmax", 0, FNQ_MAX_L,
                      &m->lmax_sh));
    const cJSON *par = fnq__fnqm_field(sh, "parity");
    if (!cJSON_IsString(par) ||
        (strcmp(par->valuestring, "natural") != 0 && strcmp(par->valuestring, "even") != 0))
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field 'spherical_harmonics.parity' must be \"natural\" "
                         "(Y_l has parity (-1)^l) or \"even\"",
                         file);
    *sh_natural = strcmp(par->valuestring, "natural") == 0;
    const cJSON *norm = fnq__fnqm_field(sh, "normalize");
    if (norm && !cJSON_IsBool(norm))
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field 'spherical_harmonics.normalize' is not true/false",
                         file);
    m->sh_raw = cJSON_IsFalse(norm);
    if (fnq__sh_plan_init(&m->sh, m->lmax_sh) != 0)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    return FNQ_STATUS_OK;
}

static enum fnq_status read_embedding(const cJSON *h, const struct fnqm_arrays *a,
                                      struct fnq_model *m)
{
    const char *file = a->file;
    const cJSON *e = fnq__fnqm_field(h, "embedding");
    FNQ_CHECK(fnq__fnqm_need(e, file, "embedding"));
    FNQ_CHECK(get_irreps(e, "irreps", file, "embedding.irreps", &m->embed_irreps));
    for (int32_t b = 0; b < m->embed_irreps.n_blocks; b++)
        if (m->embed_irreps.block[b].l != 0)
            return fnq__fail(FNQ_STATUS_FORMAT,
                             "%s: header field 'embedding.irreps' must hold scalars only (l = 0)",
                             file);
    int64_t shape[2] = {m->n_species, m->embed_irreps.dim};
    FNQ_CHECK(fnq__fnqm_need(fnq__fnqm_field(e, "weights"), file, "embedding.weights"));
    return fnq__fnqm_array_get(a, "embedding.weights", fnq__fnqm_field(e, "weights"), 2, shape, &m->embed);
}

static enum fnq_status read_paths(const cJSON *list, const char *file, const char *lp,
                                  struct fnq_layer *L, int32_t lmax_sh, int32_t sh_natural)
{
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) < 1 || cJSON_GetArraySize(list) > 4096)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field '%s.tensor_product' must be a list of [input block, "
                         "l of the spherical harmonic, message block] triples",
                         file, lp);
    int32_t n = cJSON_GetArraySize(list);
    struct fnq_path_spec *spec = calloc((size_t)n, sizeof(*spec));
    if (!spec)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    int64_t filled[FNQ_MAX_BLOCKS] = {0};
    enum fnq_status st = FNQ_STATUS_OK;
    for (int32_t p = 0; p < n && st == FNQ_STATUS_OK; p++) {
        const cJSON *t = cJSON_GetArrayItem(list, p);
        char path[160];
        snprintf(path, sizeof(path), "%s.tensor_product[%d]", lp, p);
        if (!cJSON_IsArray(t) || cJSON_GetArraySize(t) != 3) {
            st = fnq__fail(FNQ_STATUS_FORMAT, "%s: header field '%s' must be a triple", file,
                           path);
            break;
        }
        if ((st = fnq__fnqm_int(cJSON_GetArrayItem(t, 0), file, path, 0, L->in.n_blocks - 1,
                          &spec[p].in_block)) != FNQ_STATUS_OK ||
            (st = fnq__fnqm_int(cJSON_GetArrayItem(t, 1), file, path, 0, lmax_sh, &spec[p].l_sh)) !=
                FNQ_STATUS_OK ||
            (st = fnq__fnqm_int(cJSON_GetArrayItem(t, 2), file, path, 0, L->mid.n_blocks - 1,
                          &spec[p].mid_block)) != FNQ_STATUS_OK)
            break;
        const struct fnq_irrep_block *bi = &L->in.block[spec[p].in_block];
        const struct fnq_irrep_block *bo = &L->mid.block[spec[p].mid_block];
        int32_t l2 = spec[p].l_sh, p2 = (sh_natural && (l2 & 1)) ? -1 : 1;
        if (bo->l < abs(bi->l - l2) || bo->l > bi->l + l2 || bo->parity != bi->parity * p2)
            st = fnq__fail(FNQ_STATUS_FORMAT,
                           "%s: header field '%s': %d%c x Y_%d cannot give the message block "
                           "%d%c (selection rules)",
                           file, path, bi->l, bi->parity > 0 ? 'e' : 'o', l2, bo->l,
                           bo->parity > 0 ? 'e' : 'o');
        filled[spec[p].mid_block] += bi->mul;
    }
    for (int32_t b = 0; st == FNQ_STATUS_OK && b < L->mid.n_blocks; b++)
        if (filled[b] != L->mid.block[b].mul)
            st = fnq__fail(FNQ_STATUS_FORMAT,
                           "%s: header field '%s.tensor_product': the paths into message block "
                           "%d give %lld channels, its irreps say %d",
                           file, lp, b, (long long)filled[b], L->mid.block[b].mul);
    if (st == FNQ_STATUS_OK && fnq__tp_set_paths(L, n, spec) != 0)
        st = fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    free(spec);
    return st;
}

static enum fnq_status read_radial(const cJSON *r, const struct fnqm_arrays *a, const char *lp,
                                   int32_t n_basis, struct fnq_layer *L)
{
    const char *file = a->file;
    char path[160];
    snprintf(path, sizeof(path), "%s.radial_mlp", lp);
    FNQ_CHECK(fnq__fnqm_need(r, file, path));
    const cJSON *ws = fnq__fnqm_field(r, "weights");
    if (!cJSON_IsArray(ws) || cJSON_GetArraySize(ws) < 1 ||
        cJSON_GetArraySize(ws) > FNQ_MAX_MLP_LAYERS)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field '%s.weights' must list 1 to %d weight matrices", file,
                         path, FNQ_MAX_MLP_LAYERS);
    snprintf(path, sizeof(path), "%s.radial_mlp.activation", lp);
    FNQ_CHECK(get_activation(r, "activation", file, path, &L->radial.act));
    int32_t n_weights = 0;
    for (int32_t p = 0; p < L->n_paths; p++)
        n_weights += L->paths[p].mul;
    struct fnq_mlp *mlp = &L->radial;
    mlp->n_layers = cJSON_GetArraySize(ws);
    mlp->size[0] = n_basis;
    for (int32_t k = 0; k < mlp->n_layers; k++) {
        const cJSON *ref = cJSON_GetArrayItem(ws, k);
        const struct fnqm_array *e = fnq__fnqm_array_find(a, ref);
        snprintf(path, sizeof(path), "%s.radial_mlp.weights[%d]", lp, k);
        int64_t width = (k + 1 == mlp->n_layers) ? n_weights
                        : (e && e->rec.ndim == 2) ? e->rec.shape[1]
                                                  : 0;
        if (width < 1 || width > (1 << 20))
            return fnq__fail(FNQ_STATUS_FORMAT,
                             "%s: header field '%s' must name a 2-D array (at least one column)",
                             file, path);
        mlp->size[k + 1] = (int32_t)width;
        int64_t shape[2] = {mlp->size[k], width};
        FNQ_CHECK(fnq__fnqm_array_get(a, path, ref, 2, shape, &mlp->w[k]));
    }
    return FNQ_STATUS_OK;
}

static enum fnq_status read_gate(const cJSON *list, const char *file, const char *lp,
                                 struct fnq_layer *L)
{
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) != L->out.n_blocks)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field '%s.gate' must have one entry per block of "
                         "'%s.irreps_out' (%d)",
                         file, lp, lp, L->out.n_blocks);
    for (int32_t k = 0; k < L->out.n_blocks; k++) {
        const cJSON *g = cJSON_GetArrayItem(list, k);
        const struct fnq_irrep_block *ob = &L->out.block[k];
        struct fnq_gate_out *go = &L->gate[k];
        char path[160], sub[192];
        snprintf(path, sizeof(path), "%s.gate[%d]", lp, k);
        const cJSON *src = fnq__fnqm_field(g, "source"), *gate = fnq__fnqm_field(g, "gate");
        snprintf(sub, sizeof(sub), "%s.source", path);
        if (!cJSON_IsArray(src) || cJSON_GetArraySize(src) != 2)
            return fnq__fail(FNQ_STATUS_FORMAT,
                             "%s: header field '%s' must be [gate-input block, first channel]",
                             file, sub);
        FNQ_CHECK(fnq__fnqm_int(cJSON_GetArrayItem(src, 0), file, sub, 0, L->conv.n_blocks - 1,
                          &go->src_block));
        const struct fnq_irrep_block *sb = &L->conv.block[go->src_block];
        FNQ_CHECK(fnq__fnqm_int(cJSON_GetArrayItem(src, 1), file, sub, 0, sb->mul - ob->mul,
                          &go->src_chan));
        if (sb->l != ob->l)
            return fnq__fail(FNQ_STATUS_FORMAT,
                             "%s: header field '%s': source block has l = %d, output block l = "
                             "%d",
                             file, sub, sb->l, ob->l);
        snprintf(sub, sizeof(sub), "%s.source_activation", path);
        FNQ_CHECK(get_activation(g, "source_activation", file, sub, &go->act));
        go->gate_block = -1;
        go->gate_act = (struct fnq_activation){FNQ_ACT_IDENTITY, 1.0};
        if (gate) {
            snprintf(sub, sizeof(sub), "%s.gate", path);
            if (!cJSON_IsArray(gate) || cJSON_GetArraySize(gate) != 2)
                return fnq__fail(FNQ_STATUS_FORMAT,
                                 "%s: header field '%s' must be [gate-input block, first channel]",
                                 file, sub);
            FNQ_CHECK(fnq__fnqm_int(cJSON_GetArrayItem(gate, 0), file, sub, 0, L->conv.n_blocks - 1,
                              &go->gate_block));
            const struct fnq_irrep_block *gb = &L->conv.block[go->gate_block];
            if (gb->l != 0)
                return fnq__fail(FNQ_STATUS_FORMAT,
                                 "%s: header field '%s': gates must come from a scalar block",
                                 file, sub);
            FNQ_CHECK(fnq__fnqm_int(cJSON_GetArrayItem(gate, 1), file, sub, 0, gb->mul - ob->mul,
                              &go->gate_chan));
            snprintf(sub, sizeof(sub), "%s.gate_activation", path);
            FNQ_CHECK(get_activation(g, "gate_activation", file, sub, &go->gate_act));
        }
    }
    return FNQ_STATUS_OK;
}

static enum fnq_status read_layer(const cJSON *j, const struct fnqm_arrays *a, int32_t i,
                                  const struct fnq_irreps *prev, int32_t sh_natural,
                                  struct fnq_model *m)
{
    const char *file = a->file;
    struct fnq_layer *L = &m->layers[i];
    char lp[32], path[160];
    snprintf(lp, sizeof(lp), "layers[%d]", i);
#define SUB(name) (snprintf(path, sizeof(path), "%s.%s", lp, name), path)
    FNQ_CHECK(get_irreps(j, "irreps_in", file, SUB("irreps_in"), &L->in));
    FNQ_CHECK(get_irreps(j, "irreps_messages", file, SUB("irreps_messages"), &L->mid));
    FNQ_CHECK(get_irreps(j, "irreps_gate_in", file, SUB("irreps_gate_in"), &L->conv));
    FNQ_CHECK(get_irreps(j, "irreps_out", file, SUB("irreps_out"), &L->out));
    if (!irreps_equal(&L->in, prev))
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field '%s.irreps_in' differs from the %s",
                         file, lp, i == 0 ? "embedding irreps" : "previous layer's irreps_out");

    FNQ_CHECK(fnq__fnqm_need(fnq__fnqm_field(j, "linear_1"), file, SUB("linear_1")));
    FNQ_CHECK(read_linear(a, fnq__fnqm_field(j, "linear_1"), SUB("linear_1"), &L->in, &L->in,
                          m->n_species, &L->linear_1));
    FNQ_CHECK(fnq__fnqm_per_species(a, j, "sender_scale", SUB("sender_scale"), m->n_species,
                               &L->sender_scale));
    FNQ_CHECK(read_paths(fnq__fnqm_field(j, "tensor_product"), file, lp, L, m->lmax_sh, sh_natural));
    FNQ_CHECK(read_radial(fnq__fnqm_field(j, "radial_mlp"), a, lp, m->n_basis, L));
    FNQ_CHECK(fnq__fnqm_need(fnq__fnqm_field(j, "linear_2"), file, SUB("linear_2")));
    FNQ_CHECK(read_linear(a, fnq__fnqm_field(j, "linear_2"), SUB("linear_2"), &L->mid, &L->conv,
                          m->n_species, &L->linear_2));
    if (fnq__fnqm_field(j, "self_connection"))
        FNQ_CHECK(read_linear(a, fnq__fnqm_field(j, "self_connection"), SUB("self_connection"), &L->in,
                              &L->conv, m->n_species, &L->self_conn));
    FNQ_CHECK(read_gate(fnq__fnqm_field(j, "gate"), file, lp, L));
    const cJSON *res = fnq__fnqm_field(j, "resnet");
    if (res && !cJSON_IsBool(res))
        return fnq__fail(FNQ_STATUS_FORMAT, "%s: header field '%s' is not true/false", file,
                         SUB("resnet"));
    L->resnet = cJSON_IsTrue(res);
    if (L->resnet && !irreps_equal(&L->in, &L->out))
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field '%s.resnet' is true but irreps_in != irreps_out",
                         file, lp);
    L->norm = FNQ_NORM_NONE;
#undef SUB
    return FNQ_STATUS_OK;
}

static enum fnq_status read_readout(const cJSON *h, const struct fnqm_arrays *a,
                                    struct fnq_model *m)
{
    const char *file = a->file;
    const cJSON *r = fnq__fnqm_field(h, "readout");
    FNQ_CHECK(fnq__fnqm_need(r, file, "readout"));
    const cJSON *irr = fnq__fnqm_field(r, "irreps"), *ws = fnq__fnqm_field(r, "weights");
    if (!cJSON_IsArray(ws) || cJSON_GetArraySize(ws) < 1 || cJSON_GetArraySize(ws) > 4 ||
        !cJSON_IsArray(irr) || cJSON_GetArraySize(irr) != cJSON_GetArraySize(ws) + 1)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field 'readout' needs 'weights' (1 to 4 linears) and "
                         "'irreps' (one more entry than 'weights')",
                         file);
    m->n_readout = cJSON_GetArraySize(ws);
    for (int32_t k = 0; k <= m->n_readout; k++) {
        char path[64];
        snprintf(path, sizeof(path), "readout.irreps[%d]", k);
        const cJSON *s = cJSON_GetArrayItem(irr, k);
        if (!cJSON_IsString(s) || fnq__irreps_parse(s->valuestring, &m->readout_irreps[k]) != 0)
            return fnq__fail(FNQ_STATUS_FORMAT, "%s: header field '%s' is not an irreps string",
                             file, path);
        if (k > 0 && m->readout_irreps[k].dim > 4096) /* the CPU's per-atom buffers */
            return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                             "%s: header field '%s': readout stages wider than 4096 values are "
                             "not supported",
                             file, path);
    }
    if (!irreps_equal(&m->readout_irreps[0], &m->layers[m->n_layers - 1].out))
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field 'readout.irreps[0]' differs from the last layer's "
                         "irreps_out",
                         file);
    const struct fnq_irreps *last = &m->readout_irreps[m->n_readout];
    if (last->n_blocks != 1 || last->dim != 1 || last->block[0].parity != 1)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field 'readout.irreps' must end with \"1x0e\" (the atomic "
                         "energy)",
                         file);
    for (int32_t k = 0; k < m->n_readout; k++) {
        char path[64];
        snprintf(path, sizeof(path), "readout.weights[%d]", k);
        FNQ_CHECK(read_linear(a, cJSON_GetArrayItem(ws, k), path, &m->readout_irreps[k],
                              &m->readout_irreps[k + 1], m->n_species, &m->readout[k]));
    }
    return FNQ_STATUS_OK;
}

/* Optional "pair_potential": {"kind": "zbl", "atomic_numbers": [Z per species],
 * "coulomb_constant": k_e, "cutoff": r, "polynomial_p": p} (docs/model-format.md). */
enum fnq_status fnq__fnqm_build(const cJSON *h, const struct fnqm_arrays *a,
                                struct fnq_model *m)
{
    const char *file = a->file;
    int32_t version = 0;
    FNQ_CHECK(fnq__fnqm_int(fnq__fnqm_field(h, "version"), file, "version", 0, 1 << 30, &version));
    if (version < 1 || version > FNQM_VERSION)
        return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                         "%s: .fnqm format version %d; this build of fusednequip reads versions "
                         "1 to %d",
                         file, version, FNQM_VERSION);
    /* the architecture (absent: NequIP's message passing); another is refused by name rather
     * than read as something else */
    const cJSON *arch = fnq__fnqm_field(h, "architecture");
    if (cJSON_IsString(arch) && !strcmp(arch->valuestring, "allegro"))
        return fnq__allegro_build(h, a, m);
    if (arch && !(cJSON_IsString(arch) && !strcmp(arch->valuestring, "nequip")))
        return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                         "%s: a model of architecture '%s'; this version of fusednequip "
                         "evaluates NequIP-family models (Nequix, NequIP) and Allegro",
                         file, cJSON_IsString(arch) ? arch->valuestring : "(not a string)");
    const cJSON *fam = fnq__fnqm_field(h, "family"), *notes = fnq__fnqm_field(h, "notes");
    snprintf(m->family, sizeof(m->family), "%s", cJSON_IsString(fam) ? fam->valuestring : "fnqm");
    if (cJSON_IsString(notes))
        snprintf(m->notes, sizeof(m->notes), "%s", notes->valuestring);
    const cJSON *np = fnq__fnqm_field(h, "num_parameters");
    m->n_params = cJSON_IsNumber(np) && np->valuedouble >= 0 && np->valuedouble <= 9e15
                      ? (int64_t)np->valuedouble
                      : a->n_values;

    int32_t sh_natural = 1;
    FNQ_CHECK(fnq__fnqm_species(h, file, m));
    FNQ_CHECK(read_geometry(h, a, m, &sh_natural));
    FNQ_CHECK(read_embedding(h, a, m));

    const cJSON *layers = fnq__fnqm_field(h, "layers");
    if (!cJSON_IsArray(layers) || cJSON_GetArraySize(layers) < 1 ||
        cJSON_GetArraySize(layers) > 64)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field 'layers' must be a list of 1 to 64 layers", file);
    m->n_layers = cJSON_GetArraySize(layers);
    m->layers = calloc((size_t)m->n_layers, sizeof(struct fnq_layer));
    if (!m->layers)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int32_t i = 0; i < m->n_layers; i++)
        FNQ_CHECK(read_layer(cJSON_GetArrayItem(layers, i), a, i,
                             i == 0 ? &m->embed_irreps : &m->layers[i - 1].out, sh_natural, m));
    FNQ_CHECK(read_readout(h, a, m));
    FNQ_CHECK(fnq__fnqm_modalities(h, a, m)); /* and the energy scale and shift */
    return fnq__fnqm_pair_potential(h, file, m);
}
