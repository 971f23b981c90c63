/*
 * model_build.c: pieces every model loader needs: irreps strings, e3nn Linear instruction
 * lists with their fan-in scaling, and the uvu tensor-product paths with their Clebsch-Gordan
 * terms. Loaders (nqx_load.c) fill weights into the structures built here.
 */
#include <ctype.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allegro/allegro.h"
#include "math/cg.h"
#include "model/model.h"
#include "math/sh.h"

struct fnq_model *fnq__model_alloc(void)
{
    return calloc(1, sizeof(struct fnq_model));
}

static void linear_release(struct fnq_linear *lin)
{
    free(lin->instr);
    free(lin->w);
    free(lin->bias_modal);
    memset(lin, 0, sizeof(*lin));
}

void fnq__model_release(struct fnq_model *m)
{
    if (!m)
        return;
    for (int32_t i = 0; m->layers && i < m->n_layers; i++) {
        struct fnq_layer *L = &m->layers[i];
        linear_release(&L->linear_1);
        linear_release(&L->linear_2);
        linear_release(&L->self_conn);
        free(L->sender_scale);
        for (int k = 0; k < FNQ_MAX_MLP_LAYERS; k++)
            free(L->radial.w[k]);
        free(L->paths); /* their CG terms are shared tables (path_cg_terms) */
        for (int b = 0; b < FNQ_MAX_BLOCKS; b++)
            free(L->norm_weight[b]);
    }
    free(m->layers);
    for (int r = 0; r < 4; r++)
        linear_release(&m->readout[r]);
    fnq__sh_plan_free(&m->sh);
    free(m->species_z);
    free(m->species_symbol);
    free(m->bessel_freq);
    free(m->embed);
    free(m->energy_scale);
    free(m->energy_shift);
    free(m->modality_name);
    free(m->energy_scale_modal);
    free(m->energy_shift_modal);
    free(m->pair.charge);
    fnq__allegro_release(m->allegro);
    free(m);
}

/* ---- irreps ---- */

void fnq__irreps_finalize(struct fnq_irreps *irreps)
{
    int64_t off = 0;
    for (int32_t b = 0; b < irreps->n_blocks; b++) {
        irreps->block[b].offset = off;
        off += (int64_t)irreps->block[b].mul * (2 * irreps->block[b].l + 1);
    }
    irreps->dim = off;
}

int fnq__irreps_parse(const char *text, struct fnq_irreps *out)
{
    memset(out, 0, sizeof(*out));
    const char *p = text;
    while (*p) {
        while (isspace((unsigned char)*p) || *p == '+')
            p++;
        if (!*p)
            break;
        char *end;
        long mul = 1;
        if (isdigit((unsigned char)*p)) {
            long v = strtol(p, &end, 10);
            if (*end == 'x') {
                mul = v;
                p = end + 1;
            }
        }
        if (!isdigit((unsigned char)*p))
            return -1;
        long l = strtol(p, &end, 10);
        p = end;
        int parity;
        if (*p == 'e' || *p == 'y')
            parity = 1;
        else if (*p == 'o')
            parity = -1;
        else
            return -1;
        if (*p == 'y') /* "1y": spherical harmonics parity */
            parity = (l % 2 == 0) ? 1 : -1;
        p++;
        if (mul < 0 || mul > FNQ_MAX_MUL || l < 0 || l > FNQ_MAX_L ||
            out->n_blocks >= FNQ_MAX_BLOCKS)
            return -1;
        if (mul == 0)
            continue;
        struct fnq_irrep_block *b = &out->block[out->n_blocks++];
        b->mul = (int32_t)mul;
        b->l = (int32_t)l;
        b->parity = parity;
        while (isspace((unsigned char)*p))
            p++;
        if (*p && *p != '+')
            return -1;
    }
    fnq__irreps_finalize(out);
    return 0;
}

void fnq__irreps_format(const struct fnq_irreps *irreps, char *buf, int cap)
{
    int n = 0;
    buf[0] = 0;
    for (int32_t b = 0; b < irreps->n_blocks && n < cap; b++)
        n += snprintf(buf + n, (size_t)(cap - n), "%s%dx%d%c", b ? "+" : "", irreps->block[b].mul,
                      irreps->block[b].l, irreps->block[b].parity > 0 ? 'e' : 'o');
}

int fnq__irreps_find(const struct fnq_irreps *irreps, int32_t l, int32_t parity)
{
    for (int32_t b = 0; b < irreps->n_blocks; b++)
        if (irreps->block[b].l == l && irreps->block[b].parity == parity)
            return b;
    return -1;
}

/* ---- linear ---- */

int64_t fnq__linear_count(const struct fnq_irreps *in, const struct fnq_irreps *out)
{
    int64_t n = 0;
    for (int32_t i = 0; i < in->n_blocks; i++)
        for (int32_t o = 0; o < out->n_blocks; o++)
            if (in->block[i].l == out->block[o].l && in->block[i].parity == out->block[o].parity)
                n += (int64_t)in->block[i].mul * out->block[o].mul;
    return n;
}

int fnq__linear_build(struct fnq_linear *lin, const struct fnq_irreps *in,
                      const struct fnq_irreps *out, int32_t n_sets)
{
    memset(lin, 0, sizeof(*lin));
    int32_t n = 0;
    for (int32_t i = 0; i < in->n_blocks; i++)
        for (int32_t o = 0; o < out->n_blocks; o++)
            if (in->block[i].l == out->block[o].l && in->block[i].parity == out->block[o].parity)
                n++;
    lin->instr = calloc((size_t)(n > 0 ? n : 1), sizeof(struct fnq_linear_instr));
    if (!lin->instr)
        return -1;
    int64_t off = 0;
    for (int32_t i = 0; i < in->n_blocks; i++)
        for (int32_t o = 0; o < out->n_blocks; o++) {
            if (in->block[i].l != out->block[o].l || in->block[i].parity != out->block[o].parity)
                continue;
            struct fnq_linear_instr *ins = &lin->instr[lin->n_instr++];
            ins->in_block = i;
            ins->out_block = o;
            ins->w_offset = off;
            off += (int64_t)in->block[i].mul * out->block[o].mul;
        }
    /* e3nn path normalisation "element": 1/sqrt(sum of input multiplicities into the output) */
    for (int32_t k = 0; k < lin->n_instr; k++) {
        int64_t fan_in = 0;
        for (int32_t q = 0; q < lin->n_instr; q++)
            if (lin->instr[q].out_block == lin->instr[k].out_block)
                fan_in += in->block[lin->instr[q].in_block].mul;
        lin->instr[k].alpha = 1.0 / sqrt((double)fan_in);
    }
    lin->n_w = off;
    lin->species_indexed = n_sets > 1 ? 1 : 0;
    lin->w = calloc((size_t)(off * (n_sets > 1 ? n_sets : 1) + 1), sizeof(double));
    return lin->w ? 0 : -1;
}

/* ---- tensor product paths ---- */

struct pending_path {
    int32_t l1, l2, l3, parity, in_block, mul, creation;
};

/* e3nn-torch orders irreps by (l, p) with odd first; e3nn-jax puts natural parity first. */
static int irrep_key(int32_t l, int32_t parity, int jax_order)
{
    int pkey = jax_order ? -parity * ((l % 2 == 0) ? 1 : -1) : parity;
    return l * 4 + (pkey + 1);
}

/* Clebsch-Gordan terms of one kind of path (l1, l2 -> l3), scaled by the uvu path coefficient
 * sqrt(2 l3 + 1), grouped by (m1, m3) so that the kernels do one channel-vector update per
 * pair. They depend on (l1, l2, l3) only, and fnq__cg_real costs O(d^6) (~30 ms for l = 6), so
 * each kind is computed once per process and shared, read-only, by every path of that kind in
 * every model: a header listing thousands of paths costs a pointer per path, not a table (a
 * 68 KB .fnqm with 4096 paths of l = 6 took 134 s and 155 MB to load before). Two threads
 * may both compute a table; the first stored wins, the other is freed. Never freed: at most
 * (FNQ_MAX_L + 1)^3 small tables, reachable from here until exit. */
struct cg_table {
    int32_t n_pairs, n_terms;
    struct fnq_cg_pair *pairs;
    struct fnq_cg_term *terms;
};
static _Atomic(struct cg_table *) cg_tables[FNQ_MAX_L + 1][FNQ_MAX_L + 1][FNQ_MAX_L + 1];

static void cg_table_free(struct cg_table *t)
{
    if (t) {
        free(t->pairs);
        free(t->terms);
        free(t);
    }
}

static struct cg_table *cg_table_make(int l1, int l2, int l3)
{
    int d1 = 2 * l1 + 1, d2 = 2 * l2 + 1, d3 = 2 * l3 + 1;
    double *c = malloc(sizeof(double) * (size_t)(d1 * d2 * d3));
    struct cg_table *t = calloc(1, sizeof(*t));
    if (!c || !t) {
        free(c);
        free(t);
        return NULL;
    }
    fnq__cg_real(l1, l2, l3, c);
    int32_t n_terms = 0, n_pairs = 0;
    for (int m1 = 0; m1 < d1; m1++)
        for (int m3 = 0; m3 < d3; m3++) {
            int32_t before = n_terms;
            for (int m2 = 0; m2 < d2; m2++)
                n_terms += c[(m1 * d2 + m2) * d3 + m3] != 0.0;
            n_pairs += n_terms > before;
        }
    t->terms = calloc((size_t)(n_terms > 0 ? n_terms : 1), sizeof(struct fnq_cg_term));
    t->pairs = calloc((size_t)(n_pairs > 0 ? n_pairs : 1), sizeof(struct fnq_cg_pair));
    if (!t->terms || !t->pairs) {
        free(c);
        cg_table_free(t);
        return NULL;
    }
    double coef = sqrt((double)d3);
    for (int m1 = 0; m1 < d1; m1++)
        for (int m3 = 0; m3 < d3; m3++) {
            int first = t->n_terms;
            for (int m2 = 0; m2 < d2; m2++) {
                double v = c[(m1 * d2 + m2) * d3 + m3];
                if (v == 0.0)
                    continue;
                t->terms[t->n_terms].m2 = m2;
                t->terms[t->n_terms].c = v * coef;
                t->n_terms++;
            }
            if (t->n_terms > first) {
                struct fnq_cg_pair *pr = &t->pairs[t->n_pairs++];
                pr->m1 = m1;
                pr->m3 = m3;
                pr->first = first;
                pr->count = t->n_terms - first;
            }
        }
    free(c);
    return t;
}

static int path_cg_terms(struct fnq_tp_path *path)
{
    int l1 = path->l1, l2 = path->l2, l3 = path->l3;
    if (l1 < 0 || l2 < 0 || l3 < 0 || l1 > FNQ_MAX_L || l2 > FNQ_MAX_L || l3 > FNQ_MAX_L)
        return -1;
    _Atomic(struct cg_table *) *slot = &cg_tables[l1][l2][l3];
    struct cg_table *t = atomic_load(slot);
    if (!t) {
        struct cg_table *made = cg_table_make(l1, l2, l3), *none = NULL;
        if (!made)
            return -1;
        if (atomic_compare_exchange_strong(slot, &none, made))
            t = made;
        else { /* another thread stored its table first */
            cg_table_free(made);
            t = none;
        }
    }
    path->n_pairs = t->n_pairs;
    path->n_terms = t->n_terms;
    path->pairs = t->pairs;
    path->terms = t->terms;
    return 0;
}

int fnq__tp_set_paths(struct fnq_layer *layer, int32_t n, const struct fnq_path_spec *spec)
{
    layer->paths = calloc((size_t)(n > 0 ? n : 1), sizeof(struct fnq_tp_path));
    if (!layer->paths)
        return -1;
    layer->n_paths = n;
    int32_t chan[FNQ_MAX_BLOCKS] = {0}, w_offset = 0;
    for (int32_t s = 0; s < n; s++) {
        struct fnq_tp_path *path = &layer->paths[s];
        const struct fnq_irrep_block *bi = &layer->in.block[spec[s].in_block];
        path->l1 = bi->l;
        path->l2 = spec[s].l_sh;
        path->l3 = layer->mid.block[spec[s].mid_block].l;
        path->in_block = spec[s].in_block;
        path->out_block = spec[s].mid_block;
        path->out_chan = chan[spec[s].mid_block];
        path->mul = bi->mul;
        path->w_offset = w_offset;
        chan[spec[s].mid_block] += bi->mul;
        w_offset += bi->mul;
        if (path_cg_terms(path) != 0)
            return -1;
    }
    return 0;
}

int fnq__tp_build(struct fnq_layer *layer, int32_t lmax_sh, const struct fnq_irreps *allowed,
                  int32_t sh_natural_parity, int jax_order, int weights_sorted)
{
    struct pending_path pend[512];
    int32_t n = 0;
    const struct fnq_irreps *in = &layer->in;
    for (int32_t i = 0; i < in->n_blocks; i++)
        for (int32_t l2 = 0; l2 <= lmax_sh; l2++) {
            int32_t p2 = sh_natural_parity ? ((l2 % 2 == 0) ? 1 : -1) : 1;
            int32_t l1 = in->block[i].l, p = in->block[i].parity * p2;
            for (int32_t l3 = abs(l1 - l2); l3 <= l1 + l2; l3++) {
                if (fnq__irreps_find(allowed, l3, p) < 0)
                    continue;
                if (n >= 512 || l3 > FNQ_MAX_L)
                    return -1;
                pend[n] = (struct pending_path){l1, l2, l3, p, i, in->block[i].mul, n};
                n++;
            }
        }
    /* stable sort by irrep of the output */
    int32_t order[512];
    for (int32_t k = 0; k < n; k++)
        order[k] = k;
    for (int32_t a = 1; a < n; a++)
        for (int32_t b = a; b > 0; b--) {
            const struct pending_path *x = &pend[order[b - 1]], *y = &pend[order[b]];
            if (irrep_key(x->l3, x->parity, jax_order) <= irrep_key(y->l3, y->parity, jax_order))
                break;
            int32_t t = order[b - 1];
            order[b - 1] = order[b];
            order[b] = t;
        }
    /* mid irreps: sorted then simplified, one block per output irrep */
    struct fnq_irreps *mid = &layer->mid;
    memset(mid, 0, sizeof(*mid));
    layer->paths = calloc((size_t)(n > 0 ? n : 1), sizeof(struct fnq_tp_path));
    if (!layer->paths)
        return -1;
    layer->n_paths = n;
    int32_t creation_offset[512];
    {
        int32_t off = 0;
        for (int32_t k = 0; k < n; k++) {
            creation_offset[k] = off;
            off += pend[k].mul;
        }
    }
    int32_t sorted_offset = 0;
    for (int32_t s = 0; s < n; s++) {
        const struct pending_path *pp = &pend[order[s]];
        int32_t b = mid->n_blocks - 1;
        if (b < 0 || mid->block[b].l != pp->l3 || mid->block[b].parity != pp->parity) {
            if (mid->n_blocks >= FNQ_MAX_BLOCKS)
                return -1;
            b = mid->n_blocks++;
            mid->block[b].l = pp->l3;
            mid->block[b].parity = pp->parity;
            mid->block[b].mul = 0;
        }
        struct fnq_tp_path *path = &layer->paths[s];
        path->l1 = pp->l1;
        path->l2 = pp->l2;
        path->l3 = pp->l3;
        path->in_block = pp->in_block;
        path->out_block = b;
        path->out_chan = mid->block[b].mul;
        path->mul = pp->mul;
        path->w_offset = weights_sorted ? sorted_offset : creation_offset[order[s]];
        mid->block[b].mul += pp->mul;
        sorted_offset += pp->mul;
    }
    fnq__irreps_finalize(mid);

    for (int32_t s = 0; s < n; s++)
        if (path_cg_terms(&layer->paths[s]) != 0)
            return -1;
    return 0;
}

/* ---- double-precision linears on the host (precomputed tables of the GPU backend) ---- */

/* y += linear(x) (transpose 0) or, with the same loops and weights, x_grad += linear^T(y_grad)
 * (transpose 1): src is read at one end of each weight, dst accumulated at the other */
static void linear_apply_dir_f64(const struct fnq_linear *lin, const struct fnq_irreps *in,
                                 const struct fnq_irreps *out, int32_t t, const double *src,
                                 double *dst, int transpose)
{
    const double *W = lin->w + (lin->species_indexed ? (int64_t)t * lin->n_w : 0);
    for (int32_t k = 0; k < lin->n_instr; k++) {
        const struct fnq_linear_instr *ins = &lin->instr[k];
        const struct fnq_irrep_block *bi = &in->block[ins->in_block];
        const struct fnq_irrep_block *bo = &out->block[ins->out_block];
        for (int32_t m = 0; m < 2 * bi->l + 1; m++)
            for (int32_t u = 0; u < bi->mul; u++)
                for (int32_t v = 0; v < bo->mul; v++) {
                    const double w = ins->alpha * W[ins->w_offset + (int64_t)u * bo->mul + v];
                    const int64_t i = bi->offset + (int64_t)m * bi->mul + u;
                    const int64_t o = bo->offset + (int64_t)m * bo->mul + v;
                    if (transpose)
                        dst[i] += w * src[o];
                    else
                        dst[o] += w * src[i];
                }
    }
}

void fnq__linear_apply_f64(const struct fnq_linear *lin, const struct fnq_irreps *in,
                           const struct fnq_irreps *out, int32_t t, const double *x, double *y)
{
    linear_apply_dir_f64(lin, in, out, t, x, y, 0);
}

void fnq__linear_apply_t_f64(const struct fnq_linear *lin, const struct fnq_irreps *in,
                             const struct fnq_irreps *out, int32_t t, const double *dy,
                             double *dx)
{
    linear_apply_dir_f64(lin, in, out, t, dy, dx, 1);
}
