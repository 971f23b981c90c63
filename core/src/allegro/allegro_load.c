/*
 * allegro_load.c: an Allegro model from its .fnqm header and arrays (docs/model-format.md,
 * "Allegro in .fnqm"; the math in docs/allegro.md). Every dimension is checked against the
 * others (S, U, l_max, the layers' irreps and paths) and a mismatch names the field.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allegro/allegro.h"
#include "math/cg.h"
#include "model/fnqm.h"
#include "math/sh.h"
#include "api/status.h"

#define field fnq__fnqm_field

static const struct fnqm_array *entry_of(const struct fnqm_arrays *a, const cJSON *ref)
{
    for (int32_t k = 0; cJSON_IsString(ref) && k < a->n; k++)
        if (strcmp(a->entry[k].name, ref->valuestring) == 0)
            return &a->entry[k];
    return NULL;
}

static enum fnq_status get_activation(const cJSON *v, const char *file, const char *path,
                                      struct fnq_activation *out)
{
    static const struct {
        const char *name;
        enum fnq_act kind;
    } known[] = {{"identity", FNQ_ACT_IDENTITY}, {"silu", FNQ_ACT_SILU},
                 {"mish", FNQ_ACT_MISH},         {"gelu", FNQ_ACT_GELU},
                 {"tanh", FNQ_ACT_TANH},         {"ssp", FNQ_ACT_SSP},
                 {"sigmoid", FNQ_ACT_SIGMOID},   {"softplus", FNQ_ACT_SOFTPLUS}};
    for (size_t k = 0; cJSON_IsString(v) && k < sizeof(known) / sizeof(known[0]); k++)
        if (!strcmp(v->valuestring, known[k].name)) {
            *out = (struct fnq_activation){known[k].kind, 1.0};
            return FNQ_STATUS_OK;
        }
    return fnq__fail(FNQ_STATUS_UNSUPPORTED,
                     "%s: header field '%s': activation %s%s%s is not supported (identity, silu, "
                     "mish, gelu, tanh, ssp, sigmoid, softplus)",
                     file, path, cJSON_IsString(v) ? "'" : "",
                     cJSON_IsString(v) ? v->valuestring : "(not a string)",
                     cJSON_IsString(v) ? "'" : "");
}

/* An MLP {"weights": [names], "activation": name} from n_in to n_out values */
static enum fnq_status read_mlp(const cJSON *obj, const struct fnqm_arrays *a, const char *path,
                                int32_t n_in, int32_t n_out, struct fnq_allegro_mlp *mlp)
{
    const char *file = a->file;
    char p[192];
    FNQ_CHECK(fnq__fnqm_need(obj, file, path));
    const cJSON *ws = field(obj, "weights");
    const int32_t K = cJSON_IsArray(ws) ? cJSON_GetArraySize(ws) : 0;
    if (K < 1 || K > FNQ_ALLEGRO_MAX_MLP)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field '%s.weights' must list 1 to %d arrays", file, path,
                         FNQ_ALLEGRO_MAX_MLP);
    snprintf(p, sizeof(p), "%s.activation", path);
    FNQ_CHECK(get_activation(field(obj, "activation"), file, p, &mlp->act));
    mlp->n_layers = K;
    mlp->dim[0] = n_in;
    for (int32_t k = 0; k < K; k++) {
        const cJSON *ref = cJSON_GetArrayItem(ws, k);
        const struct fnqm_array *e = entry_of(a, ref);
        snprintf(p, sizeof(p), "%s.weights[%d]", path, k);
        const int64_t cols = e && e->rec.ndim == 2 ? e->rec.shape[1] : -1;
        if (k == K - 1 && cols != n_out && cols >= 0)
            return fnq__fail(FNQ_STATUS_FORMAT,
                             "%s: header field '%s': the MLP's last matrix has %lld columns, the "
                             "model needs %d",
                             file, p, (long long)cols, n_out);
        if (cols > 1 << 20)
            return fnq__fail(FNQ_STATUS_FORMAT, "%s: header field '%s': %lld columns", file, p,
                             (long long)cols);
        const int64_t shape[2] = {mlp->dim[k], cols < 1 ? 1 : cols};
        FNQ_CHECK(fnq__fnqm_array_get(a, p, ref, 2, shape, &mlp->w[k]));
        mlp->dim[k + 1] = (int32_t)shape[1];
    }
    return FNQ_STATUS_OK;
}

static enum fnq_status read_int(const cJSON *obj, const char *key, const char *file, int64_t lo,
                                int64_t hi, int32_t *out)
{
    return fnq__fnqm_int(field(obj, key), file, key, lo, hi, out);
}

/* [1] or [T] normalisation constants, broadcast to [T] */
static enum fnq_status read_norm(const cJSON *h, const char *key, const struct fnqm_arrays *a,
                                 int32_t T, double **out)
{
    const cJSON *ref = field(h, key);
    FNQ_CHECK(fnq__fnqm_need(ref, a->file, key));
    const struct fnqm_array *e = entry_of(a, ref);
    const int64_t n = e && e->rec.ndim == 1 && e->rec.shape[0] == 1 ? 1 : T;
    double *v = NULL;
    FNQ_CHECK(fnq__fnqm_array_get(a, key, ref, 1, &n, &v));
    *out = malloc(sizeof(double) * (size_t)T);
    if (!*out) {
        free(v);
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    for (int32_t t = 0; t < T; t++)
        (*out)[t] = v[n == 1 ? 0 : t];
    free(v);
    return FNQ_STATUS_OK;
}

/* irreps of the tensor track: multiplicity 1 per block, l <= lmax */
static enum fnq_status get_track_irreps(const cJSON *obj, const char *key, const char *file,
                                        const char *path, int32_t lmax, struct fnq_irreps *out)
{
    const cJSON *v = field(obj, key);
    FNQ_CHECK(fnq__fnqm_need(v, file, path));
    int ok = cJSON_IsString(v) && fnq__irreps_parse(v->valuestring, out) == 0;
    for (int32_t b = 0; ok && b < out->n_blocks; b++)
        ok = out->block[b].mul == 1 && out->block[b].l <= lmax;
    if (!ok)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field '%s' must be irreps like \"1x0e+1x1o\" (one channel "
                         "per block, l <= %d)",
                         file, path, lmax);
    return FNQ_STATUS_OK;
}

static enum fnq_status read_paths(const cJSON *list, const char *file, const char *path,
                                  int32_t lmax, struct fnq_allegro_layer *L)
{
    const int32_t P = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : 0;
    if (P < 1 || P > 4096)
        return fnq__fail(FNQ_STATUS_FORMAT, "%s: header field '%s' must list 1 to 4096 paths",
                         file, path);
    L->n_paths = P;
    L->paths = calloc((size_t)P, sizeof(*L->paths));
    if (!L->paths)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int32_t p = 0; p < P; p++) {
        const cJSON *abc = cJSON_GetArrayItem(list, p);
        int32_t v[3] = {-1, -1, -1};
        const int32_t hi[3] = {L->in.n_blocks - 1, lmax, L->out.n_blocks - 1};
        for (int k = 0; k < 3 && cJSON_IsArray(abc) && cJSON_GetArraySize(abc) == 3; k++) {
            const cJSON *x = cJSON_GetArrayItem(abc, k);
            if (cJSON_IsNumber(x) && x->valuedouble == floor(x->valuedouble) &&
                x->valuedouble >= 0 && x->valuedouble <= hi[k])
                v[k] = (int32_t)x->valuedouble;
        }
        if (v[0] < 0 || v[1] < 0 || v[2] < 0)
            return fnq__fail(FNQ_STATUS_FORMAT,
                             "%s: header field '%s[%d]' must be [input block, harmonic degree, "
                             "output block] within the layer's irreps",
                             file, path, p);
        const struct fnq_irrep_block *ba = &L->in.block[v[0]], *bc = &L->out.block[v[2]];
        const int32_t la = ba->l, lb = v[1], lc = bc->l;
        const int32_t n = (2 * la + 1) * (2 * lb + 1) * (2 * lc + 1);
        double *c = malloc(sizeof(double) * (size_t)n);
        if (!c)
            return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
        if (fnq__cg_real(la, lb, lc, c) != 0) {
            free(c);
            return fnq__fail(FNQ_STATUS_FORMAT,
                             "%s: header field '%s[%d]': l = %d x %d cannot give l = %d", file,
                             path, p, la, lb, lc);
        }
        struct fnq_allegro_path *pa = &L->paths[p];
        pa->l1 = la, pa->l2 = lb, pa->l3 = lc;
        pa->i1 = malloc(sizeof(int32_t) * (size_t)n);
        pa->i2 = malloc(sizeof(int32_t) * (size_t)n);
        pa->i3 = malloc(sizeof(int32_t) * (size_t)n);
        pa->coef = malloc(sizeof(double) * (size_t)n);
        if (!pa->i1 || !pa->i2 || !pa->i3 || !pa->coef) {
            free(c);
            return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
        }
        const double norm = sqrt(2.0 * lc + 1.0);
        for (int32_t m1 = 0, q = 0; m1 < 2 * la + 1; m1++)
            for (int32_t m2 = 0; m2 < 2 * lb + 1; m2++)
                for (int32_t m3 = 0; m3 < 2 * lc + 1; m3++, q++)
                    if (fabs(c[q]) > 1e-14) {
                        const int32_t t = pa->n_terms++;
                        pa->i1[t] = (int32_t)ba->offset + m1;
                        pa->i2[t] = lb * lb + m2;
                        pa->i3[t] = (int32_t)bc->offset + m3;
                        pa->coef[t] = norm * c[q];
                    }
        free(c);
    }
    return FNQ_STATUS_OK;
}

static enum fnq_status read_layer(const cJSON *j, const struct fnqm_arrays *a, int32_t k,
                                  const struct fnq_allegro *al, int32_t lmax, int last,
                                  struct fnq_allegro_layer *L)
{
    const char *file = a->file;
    char p[96];
    snprintf(p, sizeof(p), "layers[%d].irreps_in", k);
    FNQ_CHECK(get_track_irreps(j, "irreps_in", file, p, lmax, &L->in));
    snprintf(p, sizeof(p), "layers[%d].irreps_out", k);
    FNQ_CHECK(get_track_irreps(j, "irreps_out", file, p, lmax, &L->out));
    if (L->out.block[0].l != 0 || L->out.block[0].parity != 1 || (last && L->out.n_blocks != 1))
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field '%s' must begin with 0e (and be 0e alone in the last "
                         "layer)",
                         file, p);
    snprintf(p, sizeof(p), "layers[%d].paths", k);
    FNQ_CHECK(read_paths(field(j, "paths"), file, p, lmax, L));
    const cJSON *cp = field(j, "path_channel_coupling");
    if (!cJSON_IsBool(cp))
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field 'layers[%d].path_channel_coupling' must be true or "
                         "false",
                         file, k);
    L->coupled = cJSON_IsTrue(cp);
    const int64_t shape[2] = {L->coupled ? al->n_tensor : 1, L->n_paths};
    snprintf(p, sizeof(p), "layers[%d].path_weights", k);
    FNQ_CHECK(fnq__fnqm_array_get(a, p, field(j, "path_weights"), 2, shape, &L->path_weights));
    const int32_t S = al->n_scalar, U = al->n_tensor;
    snprintf(p, sizeof(p), "layers[%d].latent_mlp", k);
    return read_mlp(field(j, "latent_mlp"), a, p, S * (k + 1) + U,
                    last ? S : S + U * (lmax + 1), &L->latent);
}

enum fnq_status fnq__allegro_build(const cJSON *h, const struct fnqm_arrays *a,
                                   struct fnq_model *m)
{
    const char *file = a->file;
    struct fnq_allegro *al = calloc(1, sizeof(*al));
    if (!al)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    m->allegro = al;
    snprintf(m->family, sizeof(m->family), "allegro");
    const cJSON *notes = field(h, "notes"), *np = field(h, "num_parameters");
    if (cJSON_IsString(notes))
        snprintf(m->notes, sizeof(m->notes), "%s", notes->valuestring);
    m->n_params = cJSON_IsNumber(np) && np->valuedouble >= 0 && np->valuedouble <= 9e15
                      ? (int64_t)np->valuedouble
                      : a->n_values;
    FNQ_CHECK(fnq__fnqm_species(h, file, m));
    const int32_t T = m->n_species;
    FNQ_CHECK(fnq__fnqm_number(h, "cutoff", file, "cutoff", &m->cutoff));
    if (!(m->cutoff > 0.0 && m->cutoff < 100.0))
        return fnq__fail(FNQ_STATUS_FORMAT, "%s: header field 'cutoff' must be in (0, 100) A",
                         file);
    const cJSON *cut = field(h, "per_edge_type_cutoff");
    if (cut) {
        const int64_t shape[2] = {T, T};
        FNQ_CHECK(fnq__fnqm_array_get(a, "per_edge_type_cutoff", cut, 2, shape,
                                      &al->cut_by_type));
        for (int32_t q = 0; q < T * T; q++)
            if (!(al->cut_by_type[q] > 0.0 && al->cut_by_type[q] <= m->cutoff))
                return fnq__fail(FNQ_STATUS_FORMAT,
                                 "%s: header field 'per_edge_type_cutoff': entry [%d][%d] is %g, "
                                 "not in (0, cutoff = %g]",
                                 file, q / T, q % T, al->cut_by_type[q], m->cutoff);
    }
    const cJSON *rb = field(h, "radial_basis"), *sh = field(h, "spherical_harmonics");
    FNQ_CHECK(fnq__fnqm_need(rb, file, "radial_basis"));
    FNQ_CHECK(fnq__fnqm_need(sh, file, "spherical_harmonics"));
    FNQ_CHECK(fnq__fnqm_int(field(rb, "n_basis"), file, "radial_basis.n_basis", 1, 256,
                            &al->n_basis));
    const int64_t nb = al->n_basis;
    FNQ_CHECK(fnq__fnqm_array_get(a, "radial_basis.bessel_weights", field(rb, "bessel_weights"),
                                  1, &nb, &al->bessel_w));
    FNQ_CHECK(fnq__fnqm_number(rb, "polynomial_p", file, "radial_basis.polynomial_p",
                               &al->poly_p));
    int32_t lmax = 0;
    FNQ_CHECK(fnq__fnqm_int(field(sh, "lmax"), file, "spherical_harmonics.lmax", 0, FNQ_MAX_L,
                            &lmax));
    m->lmax_sh = lmax;
    if (fnq__sh_plan_init(&m->sh, lmax) != 0)
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    FNQ_CHECK(read_int(h, "num_scalar_features", file, 1, 1 << 16, &al->n_scalar));
    FNQ_CHECK(read_int(h, "num_tensor_features", file, 1, 1 << 16, &al->n_tensor));
    const int32_t S = al->n_scalar, U = al->n_tensor, nl = lmax + 1;

    const cJSON *tb = field(h, "two_body");
    FNQ_CHECK(fnq__fnqm_need(tb, file, "two_body"));
    const struct fnqm_array *ce = entry_of(a, field(tb, "center_embed"));
    const int64_t emb[2] = {T, ce && ce->rec.ndim == 2 ? ce->rec.shape[1] : 1};
    if (emb[1] > 1 << 16)
        return fnq__fail(FNQ_STATUS_FORMAT, "%s: header field 'two_body.center_embed' is too wide",
                         file);
    al->half_embed = (int32_t)emb[1];
    FNQ_CHECK(fnq__fnqm_array_get(a, "two_body.center_embed", field(tb, "center_embed"), 2, emb,
                                  &al->center_embed));
    FNQ_CHECK(fnq__fnqm_array_get(a, "two_body.neighbor_embed", field(tb, "neighbor_embed"), 2,
                                  emb, &al->neighbor_embed));
    const int32_t D = 2 * al->half_embed;
    FNQ_CHECK(read_mlp(field(tb, "basis_linear"), a, "two_body.basis_linear", al->n_basis, D,
                       &al->basis_linear));
    FNQ_CHECK(read_mlp(field(tb, "mlp"), a, "two_body.mlp", D, S, &al->two_body));
    FNQ_CHECK(read_mlp(field(h, "tensor_embed"), a, "tensor_embed", S, U * nl,
                       &al->tensor_embed));
    FNQ_CHECK(read_mlp(field(h, "first_projection"), a, "first_projection", S, S + U * nl,
                       &al->first_projection));
    FNQ_CHECK(read_norm(h, "env_sum_norm", a, T, &al->env_norm));

    const cJSON *layers = field(h, "layers");
    al->n_layers = cJSON_IsArray(layers) ? cJSON_GetArraySize(layers) : 0;
    if (al->n_layers < 1 || al->n_layers > FNQ_ALLEGRO_MAX_LAYERS)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: header field 'layers' must be a list of 1 to %d layers", file,
                         FNQ_ALLEGRO_MAX_LAYERS);
    for (int32_t k = 0; k < al->n_layers; k++) {
        struct fnq_allegro_layer *L = &al->layer[k];
        FNQ_CHECK(read_layer(cJSON_GetArrayItem(layers, k), a, k, al, lmax,
                             k == al->n_layers - 1, L));
        /* layer 0 reads the two-body features (Y's layout), later ones the layer below's
         * output: a prefix of it, block for block */
        const struct fnq_irreps *below = k > 0 ? &al->layer[k - 1].out : NULL;
        int ok = L->in.n_blocks <= (below ? below->n_blocks : nl);
        for (int32_t b = 0; ok && b < L->in.n_blocks; b++)
            ok = below ? L->in.block[b].l == below->block[b].l &&
                             L->in.block[b].parity == below->block[b].parity
                       : L->in.block[b].l == b;
        if (!ok)
            return fnq__fail(FNQ_STATUS_FORMAT,
                             "%s: header field 'layers[%d].irreps_in' is not the beginning of "
                             "%s",
                             file, k, k > 0 ? "the layer below's irreps_out" : "the harmonics'");
    }
    FNQ_CHECK(read_mlp(field(h, "edge_readout"), a, "edge_readout", S * (al->n_layers + 1), 1,
                       &al->readout));
    FNQ_CHECK(read_norm(h, "edge_sum_norm", a, T, &al->edge_norm));
    FNQ_CHECK(fnq__fnqm_per_species(a, h, "energy_scale", "energy_scale", T, &m->energy_scale));
    FNQ_CHECK(fnq__fnqm_per_species(a, h, "energy_shift", "energy_shift", T, &m->energy_shift));
    FNQ_CHECK(fnq__fnqm_pair_potential(h, file, m));
    m->pair.cutoff_by_type = al->cut_by_type;
    m->pair.n_types = T;
    m->n_layers = 0;
    return FNQ_STATUS_OK;
}

static void mlp_release(struct fnq_allegro_mlp *mlp)
{
    for (int32_t k = 0; k < FNQ_ALLEGRO_MAX_MLP; k++)
        free(mlp->w[k]);
}

void fnq__allegro_release(struct fnq_allegro *al)
{
    if (!al)
        return;
    free(al->bessel_w);
    free(al->cut_by_type);
    free(al->center_embed);
    free(al->neighbor_embed);
    mlp_release(&al->basis_linear);
    mlp_release(&al->two_body);
    mlp_release(&al->tensor_embed);
    mlp_release(&al->first_projection);
    mlp_release(&al->readout);
    free(al->env_norm);
    free(al->edge_norm);
    for (int32_t k = 0; k < FNQ_ALLEGRO_MAX_LAYERS; k++) {
        struct fnq_allegro_layer *L = &al->layer[k];
        for (int32_t p = 0; L->paths && p < L->n_paths; p++) {
            free(L->paths[p].i1);
            free(L->paths[p].i2);
            free(L->paths[p].i3);
            free(L->paths[p].coef);
        }
        free(L->paths);
        free(L->path_weights);
        mlp_release(&L->latent);
    }
    free(al);
}
