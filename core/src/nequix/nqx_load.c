/*
 * nqx_load.c: build a model from a Nequix .nqx file (nequix.model.save_model): a JSON config
 * line, then the model's array leaves in equinox pytree order. The architecture comes from the
 * config; each leaf's shape is checked against it, so a file that does not match the
 * architecture it declares is refused with the leaf named. See docs/model-format.md.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nequix/nqx.h"
#include "math/sh.h"
#include "api/status.h"

struct nqx_config {
    int64_t n_layers, lmax, n_basis, mlp_size, mlp_layers;
    double cutoff, poly_p, shift, scale, avg_nn;
    int index_weights, layer_norm;
    const char *hidden;
};

static enum fnq_status read_config(const cJSON *c, const char *file, struct nqx_config *k)
{
    FNQ_CHECK(fnq__json_int(c, file, "n_layers", &k->n_layers));
    FNQ_CHECK(fnq__json_int(c, file, "lmax", &k->lmax));
    FNQ_CHECK(fnq__json_int(c, file, "radial_basis_size", &k->n_basis));
    FNQ_CHECK(fnq__json_int(c, file, "radial_mlp_size", &k->mlp_size));
    FNQ_CHECK(fnq__json_int(c, file, "radial_mlp_layers", &k->mlp_layers));
    FNQ_CHECK(fnq__json_number(c, file, "cutoff", &k->cutoff));
    FNQ_CHECK(fnq__json_number(c, file, "radial_polynomial_p", &k->poly_p));
    FNQ_CHECK(fnq__json_number(c, file, "shift", &k->shift));
    FNQ_CHECK(fnq__json_number(c, file, "scale", &k->scale));
    FNQ_CHECK(fnq__json_number(c, file, "avg_n_neighbors", &k->avg_nn));
    FNQ_CHECK(fnq__json_bool(c, file, "index_weights", &k->index_weights));
    FNQ_CHECK(fnq__json_bool(c, file, "layer_norm", &k->layer_norm));
    FNQ_CHECK(fnq__json_string(c, file, "hidden_irreps", &k->hidden));

    if (k->n_layers < 1 || k->n_layers > 64)
        return fnq__fail(FNQ_STATUS_FORMAT, "%s: config field 'n_layers' = %lld is out of range",
                         file, (long long)k->n_layers);
    if (k->lmax < 0 || k->lmax > FNQ_MAX_L)
        return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                         "%s: config field 'lmax' = %lld; this build supports 0..%d", file,
                         (long long)k->lmax, FNQ_MAX_L);
    if (k->n_basis < 1 || k->n_basis > 128 || k->mlp_size < 1 || k->mlp_size > 4096 ||
        k->mlp_layers < 0 || k->mlp_layers + 1 > FNQ_MAX_MLP_LAYERS)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: radial settings out of range (radial_basis_size %lld, "
                         "radial_mlp_size %lld, radial_mlp_layers %lld)",
                         file, (long long)k->n_basis, (long long)k->mlp_size,
                         (long long)k->mlp_layers);
    if (!(k->cutoff > 0.0) || !isfinite(k->cutoff))
        return fnq__fail(FNQ_STATUS_FORMAT, "%s: config field 'cutoff' = %g must be positive",
                         file, k->cutoff);
    if (!(k->avg_nn > 0.0))
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: config field 'avg_n_neighbors' = %g must be positive", file,
                         k->avg_nn);
    if (k->index_weights)
        return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                         "%s: config field 'index_weights' = true (species-indexed skip "
                         "connections) is not supported for .nqx files",
                         file);
    return FNQ_STATUS_OK;
}

static enum fnq_status read_species(const cJSON *c, const char *file, struct fnq_model *m)
{
    const cJSON *zs = cJSON_GetObjectItemCaseSensitive(c, "atomic_numbers");
    if (!cJSON_IsArray(zs) || cJSON_GetArraySize(zs) < 1)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: config field 'atomic_numbers' is missing or not a list", file);
    int32_t n = cJSON_GetArraySize(zs);
    m->species_z = calloc((size_t)n, sizeof(int32_t));
    m->species_symbol = calloc((size_t)n, sizeof(*m->species_symbol));
    if (!m->species_z || !m->species_symbol)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    int32_t k = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, zs)
    {
        if (!cJSON_IsNumber(it) || !(it->valuedouble >= 0.0 && it->valuedouble <= 1000.0) ||
            it->valuedouble != floor(it->valuedouble) ||
            !fnq__element_symbol((int32_t)it->valuedouble))
            return fnq__fail(FNQ_STATUS_FORMAT,
                             "%s: config field 'atomic_numbers' entry %d is not an atomic number",
                             file, k);
        m->species_z[k++] = (int32_t)it->valuedouble;
    }
    /* species index = position in sorted(atomic_numbers) */
    for (int32_t a = 1; a < n; a++)
        for (int32_t b = a; b > 0 && m->species_z[b - 1] > m->species_z[b]; b--) {
            int32_t t = m->species_z[b];
            m->species_z[b] = m->species_z[b - 1];
            m->species_z[b - 1] = t;
        }
    for (int32_t a = 0; a < n; a++) {
        if (a > 0 && m->species_z[a] == m->species_z[a - 1])
            return fnq__fail(FNQ_STATUS_FORMAT,
                             "%s: config field 'atomic_numbers' lists Z=%d twice", file,
                             m->species_z[a]);
        snprintf(m->species_symbol[a], sizeof(m->species_symbol[a]), "%s",
                 fnq__element_symbol(m->species_z[a]));
    }
    m->n_species = n;
    return FNQ_STATUS_OK;
}

/* e3nn-jax regroup(): sort by (l, natural parity first) and merge equal irreps */
static void regroup(struct fnq_irreps *x)
{
    for (int32_t a = 1; a < x->n_blocks; a++)
        for (int32_t b = a; b > 0; b--) {
            struct fnq_irrep_block *p = &x->block[b - 1], *q = &x->block[b];
            int kp = p->l * 4 + (p->parity == ((p->l % 2) ? -1 : 1) ? 0 : 1);
            int kq = q->l * 4 + (q->parity == ((q->l % 2) ? -1 : 1) ? 0 : 1);
            if (kp <= kq)
                break;
            struct fnq_irrep_block t = *p;
            *p = *q;
            *q = t;
        }
    int32_t n = 0;
    for (int32_t a = 0; a < x->n_blocks; a++) {
        if (n > 0 && x->block[n - 1].l == x->block[a].l &&
            x->block[n - 1].parity == x->block[a].parity)
            x->block[n - 1].mul += x->block[a].mul;
        else
            x->block[n++] = x->block[a];
    }
    x->n_blocks = n;
    fnq__irreps_finalize(x);
}

/* Order of a Linear's instructions as equinox serialises its weight dict (sorted keys). */
static void linear_key_order(const struct fnq_linear *lin, int32_t *order)
{
    char keys[FNQ_MAX_BLOCKS * FNQ_MAX_BLOCKS][24];
    for (int32_t k = 0; k < lin->n_instr; k++) {
        snprintf(keys[k], sizeof(keys[k]), "w[%d,%d]", lin->instr[k].in_block,
                 lin->instr[k].out_block);
        order[k] = k;
    }
    for (int32_t a = 1; a < lin->n_instr; a++)
        for (int32_t b = a; b > 0 && strcmp(keys[order[b - 1]], keys[order[b]]) > 0; b--) {
            int32_t t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
}

static enum fnq_status read_linear(struct fnq_leaf_reader *r, struct fnq_linear *lin,
                                   const struct fnq_irreps *in, const struct fnq_irreps *out,
                                   const char *name)
{
    int32_t order[FNQ_MAX_BLOCKS * FNQ_MAX_BLOCKS];
    linear_key_order(lin, order);
    for (int32_t k = 0; k < lin->n_instr; k++) {
        const struct fnq_linear_instr *ins = &lin->instr[order[k]];
        int64_t shape[2] = {in->block[ins->in_block].mul, out->block[ins->out_block].mul};
        char what[160];
        snprintf(what, sizeof(what), "%s weights w[%d,%d]", name, ins->in_block, ins->out_block);
        FNQ_CHECK(fnq__leaf_read(r, what, 2, shape, lin->w + ins->w_offset));
    }
    return FNQ_STATUS_OK;
}

static enum fnq_status build_layer(struct fnq_model *m, const struct nqx_config *k,
                                   const struct fnq_irreps *hidden, int32_t i,
                                   struct fnq_leaf_reader *r, double silu_scale)
{
    struct fnq_layer *L = &m->layers[i];
    char name[96];
    L->in = (i == 0) ? m->embed_irreps : *hidden;

    /* output irreps: the hidden irreps, scalars only in the last layer */
    struct fnq_irreps out = *hidden;
    if (i == k->n_layers - 1) {
        out.n_blocks = 0;
        for (int32_t b = 0; b < hidden->n_blocks; b++)
            if (hidden->block[b].l == 0 && hidden->block[b].parity == 1)
                out.block[out.n_blocks++] = hidden->block[b];
        fnq__irreps_finalize(&out);
    }
    L->out = out;
    if (fnq__tp_build(L, (int32_t)k->lmax, &out, 1, 1, 1) != 0)
        return fnq__fail(FNQ_STATUS_UNSUPPORTED, "%s: layer %d: tensor product too large",
                         r->file, i);

    /* gate input: outputs plus one 0e gate per non-scalar channel, regrouped */
    int32_t n_scalars = 0, n_gated = 0;
    for (int32_t b = 0; b < out.n_blocks; b++) {
        if (out.block[b].l == 0 && out.block[b].parity == 1)
            n_scalars += out.block[b].mul;
        else if (out.block[b].l == 0)
            return fnq__fail(FNQ_STATUS_UNSUPPORTED, "%s: odd scalars (0o) in hidden_irreps "
                                                     "are not supported for .nqx files",
                             r->file);
        else
            n_gated += out.block[b].mul;
    }
    L->conv = out;
    if (n_gated > 0) {
        if (L->conv.n_blocks >= FNQ_MAX_BLOCKS)
            return fnq__fail(FNQ_STATUS_UNSUPPORTED, "%s: too many irrep blocks", r->file);
        L->conv.block[L->conv.n_blocks++] = (struct fnq_irrep_block){n_gated, 0, 1, 0};
    }
    regroup(&L->conv);
    int32_t conv0 = fnq__irreps_find(&L->conv, 0, 1);
    int32_t gate_chan = n_scalars;
    for (int32_t b = 0; b < out.n_blocks; b++) {
        struct fnq_gate_out *g = &L->gate[b];
        const struct fnq_irrep_block *ob = &out.block[b];
        g->src_block = fnq__irreps_find(&L->conv, ob->l, ob->parity);
        g->src_chan = 0;
        if (ob->l == 0) {
            g->act = (struct fnq_activation){FNQ_ACT_SILU, silu_scale};
            g->gate_block = -1;
        } else {
            g->act = (struct fnq_activation){FNQ_ACT_IDENTITY, 1.0};
            g->gate_block = conv0;
            g->gate_chan = gate_chan;
            g->gate_act = (struct fnq_activation){FNQ_ACT_SILU, silu_scale};
            gate_chan += ob->mul;
        }
    }

    /* radial MLP: basis -> mlp_size x mlp_layers -> one weight per TP channel; plain SiLU */
    int32_t n_weights = 0;
    for (int32_t p = 0; p < L->n_paths; p++)
        n_weights += L->paths[p].mul;
    L->radial.n_layers = (int32_t)k->mlp_layers + 1;
    L->radial.size[0] = (int32_t)k->n_basis;
    for (int32_t q = 1; q <= k->mlp_layers; q++)
        L->radial.size[q] = (int32_t)k->mlp_size;
    L->radial.size[L->radial.n_layers] = n_weights;
    L->radial.act = (struct fnq_activation){FNQ_ACT_SILU, 1.0};
    for (int32_t q = 0; q < L->radial.n_layers; q++) {
        int64_t shape[2] = {L->radial.size[q], L->radial.size[q + 1]};
        snprintf(name, sizeof(name), "layers[%d].radial_mlp.layers[%d].weights", i, q);
        FNQ_CHECK(fnq__leaf_room(r, name, shape[0] * shape[1]));
        L->radial.w[q] = malloc(sizeof(double) * (size_t)(shape[0] * shape[1] + 1));
        if (!L->radial.w[q])
            return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
        FNQ_CHECK(fnq__leaf_read(r, name, 2, shape, L->radial.w[q]));
    }

    snprintf(name, sizeof(name), "the linears of layers[%d] (linear_1, linear_2, skip)", i);
    FNQ_CHECK(fnq__leaf_room(r, name, fnq__linear_count(&L->in, &L->in) +
                                          fnq__linear_count(&L->mid, &L->conv) +
                                          fnq__linear_count(&L->in, &L->conv)));
    if (fnq__linear_build(&L->linear_1, &L->in, &L->in, 1) != 0 ||
        fnq__linear_build(&L->linear_2, &L->mid, &L->conv, 1) != 0 ||
        fnq__linear_build(&L->self_conn, &L->in, &L->conv, 1) != 0)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    snprintf(name, sizeof(name), "layers[%d].linear_1", i);
    FNQ_CHECK(read_linear(r, &L->linear_1, &L->in, &L->in, name));
    snprintf(name, sizeof(name), "layers[%d].linear_2", i);
    FNQ_CHECK(read_linear(r, &L->linear_2, &L->mid, &L->conv, name));
    snprintf(name, sizeof(name), "layers[%d].skip", i);
    FNQ_CHECK(read_linear(r, &L->self_conn, &L->in, &L->conv, name));

    if (k->layer_norm) {
        L->norm = FNQ_NORM_RMS;
        L->norm_eps = 1e-12;
        for (int32_t b = 0; b < L->conv.n_blocks; b++) {
            int64_t shape[1] = {L->conv.block[b].mul};
            snprintf(name, sizeof(name), "layers[%d].layer_norm.affine_weight[%d]", i, b);
            FNQ_CHECK(fnq__leaf_room(r, name, shape[0]));
            L->norm_weight[b] = malloc(sizeof(double) * (size_t)shape[0]);
            if (!L->norm_weight[b])
                return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
            FNQ_CHECK(fnq__leaf_read(r, name, 1, shape, L->norm_weight[b]));
        }
    }

    L->sender_scale = malloc(sizeof(double) * (size_t)m->n_species);
    if (!L->sender_scale)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int32_t t = 0; t < m->n_species; t++)
        L->sender_scale[t] = 1.0 / sqrt(k->avg_nn);
    return FNQ_STATUS_OK;
}

enum fnq_status fnq__nqx_build(const cJSON *config, struct fnq_leaf_reader *r,
                               struct fnq_model *m)
{
    struct nqx_config k;
    FNQ_CHECK(read_config(config, r->file, &k));
    FNQ_CHECK(read_species(config, r->file, m));
    snprintf(m->family, sizeof(m->family), "nequix");

    struct fnq_irreps hidden;
    if (fnq__irreps_parse(k.hidden, &hidden) != 0 || hidden.n_blocks == 0)
        return fnq__fail(FNQ_STATUS_FORMAT, "%s: config field 'hidden_irreps' = '%s' is not an "
                                            "irreps string",
                         r->file, k.hidden);
    struct fnq_irreps sorted = hidden;
    regroup(&sorted);
    if (sorted.n_blocks != hidden.n_blocks)
        return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                         "%s: hidden_irreps '%s' must be sorted and simplified (like %s)",
                         r->file, k.hidden, "128x0e+64x1o+32x2e+32x3o");
    for (int32_t b = 0; b < hidden.n_blocks; b++)
        if (hidden.block[b].parity != ((hidden.block[b].l % 2) ? -1 : 1) ||
            hidden.block[b].l != sorted.block[b].l)
            return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                             "%s: hidden_irreps '%s': only natural parity (0e, 1o, 2e, ...) is "
                             "supported for .nqx files",
                             r->file, k.hidden);

    m->cutoff = k.cutoff;
    m->poly_p = k.poly_p;
    m->n_basis = (int32_t)k.n_basis;
    m->lmax_sh = (int32_t)k.lmax;
    m->bessel_freq = malloc(sizeof(double) * (size_t)k.n_basis);
    if (!m->bessel_freq || fnq__sh_plan_init(&m->sh, m->lmax_sh) != 0)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int64_t n = 0; n < k.n_basis; n++)
        m->bessel_freq[n] = (double)(n + 1) * FNQ_PI;

    /* node input: one-hot species */
    m->embed_irreps = (struct fnq_irreps){0};
    m->embed_irreps.n_blocks = 1;
    m->embed_irreps.block[0] = (struct fnq_irrep_block){m->n_species, 0, 1, 0};
    fnq__irreps_finalize(&m->embed_irreps);
    m->embed = calloc((size_t)m->n_species * (size_t)m->n_species, sizeof(double));
    m->energy_scale = malloc(sizeof(double) * (size_t)m->n_species);
    m->energy_shift = malloc(sizeof(double) * (size_t)m->n_species);
    m->layers = calloc((size_t)k.n_layers, sizeof(struct fnq_layer));
    if (!m->embed || !m->energy_scale || !m->energy_shift || !m->layers)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int32_t t = 0; t < m->n_species; t++)
        m->embed[(size_t)t * (size_t)m->n_species + (size_t)t] = 1.0;
    m->n_layers = (int32_t)k.n_layers;

    int64_t shape_ae[1] = {m->n_species};
    FNQ_CHECK(fnq__leaf_read(r, "atom_energies", 1, shape_ae, m->energy_shift));
    for (int32_t t = 0; t < m->n_species; t++) {
        m->energy_shift[t] += k.shift;
        m->energy_scale[t] = k.scale;
    }

    double silu_scale = fnq__act_normalization(FNQ_ACT_SILU);
    for (int32_t i = 0; i < m->n_layers; i++)
        FNQ_CHECK(build_layer(m, &k, &hidden, i, r, silu_scale));

    /* readout: last layer's scalars -> 1x0e */
    m->n_readout = 1;
    m->readout_irreps[0] = m->layers[m->n_layers - 1].out;
    fnq__irreps_parse("1x0e", &m->readout_irreps[1]);
    FNQ_CHECK(fnq__leaf_room(r, "readout weights",
                             fnq__linear_count(&m->readout_irreps[0], &m->readout_irreps[1])));
    if (fnq__linear_build(&m->readout[0], &m->readout_irreps[0], &m->readout_irreps[1], 1) != 0)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    FNQ_CHECK(read_linear(r, &m->readout[0], &m->readout_irreps[0], &m->readout_irreps[1],
                          "readout"));
    m->n_params = r->n_values;

    char hid[256];
    fnq__irreps_format(&hidden, hid, sizeof(hid));
    snprintf(m->notes, sizeof(m->notes),
             "radial MLP %lld -> %lldx%lld -> paths (SiLU), polynomial envelope p=%g\n"
             "avg_n_neighbors %.10g, energy scale %.10g, shift %.10g, RMS layer norm %s",
             (long long)k.n_basis, (long long)k.mlp_size, (long long)k.mlp_layers, k.poly_p,
             k.avg_nn, k.scale, k.shift, k.layer_norm ? "on" : "off");
    return FNQ_STATUS_OK;
}
