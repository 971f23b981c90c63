/*
 * model_load.c: fnq_model_load and the model getters. A model file is one JSON header line
 * followed by .npy array records: our own .fnqm (header "format": "fusednequip-model") or a
 * Nequix .nqx (a training config); the header decides which reader builds the model.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "allegro/allegro.h"
#include "model/fnqm.h"
#include "model/modality.h"
#include "nequix/nqx.h"
#include "api/status.h"

#ifndef FNQ_DEFAULT_MODEL_DIR
#define FNQ_DEFAULT_MODEL_DIR ""
#endif

const char *fnq_default_model_dir(void) { return FNQ_DEFAULT_MODEL_DIR; }

/* ---- finding and reading files ---- */

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A directory where a model file was expected: say so, with the model files it holds. */
static enum fnq_status fail_directory(const char *path)
{
    char found[256] = "";
    size_t used = 0;
    int n = 0;
    DIR *dir = opendir(path);
    for (struct dirent *e; dir && (e = readdir(dir)) != NULL;) {
        const size_t len = strlen(e->d_name);
        const int model = (len > 4 && strcmp(e->d_name + len - 4, ".nqx") == 0) ||
                          (len > 5 && strcmp(e->d_name + len - 5, ".fnqm") == 0);
        if (!model)
            continue;
        if (n++ < 4 && used + len + 3 < sizeof(found))
            used += (size_t)snprintf(found + used, sizeof(found) - used, "%s%s", used ? ", " : "",
                                     e->d_name);
    }
    if (dir)
        closedir(dir);
    return fnq__fail(FNQ_STATUS_IO,
                     "model '%s' is a directory, not a model file: give the path of a .nqx or "
                     ".fnqm file%s%s%s",
                     path, n ? " (this directory holds " : "", found,
                     n > 4 ? ", ...)" : n ? ")" : "");
}

static int find_in_dir(const char *dir, const char *name, char *out, size_t cap)
{
    static const char *const exts[] = {"", ".nqx", ".fnqm"};
    static const char *const subdirs[] = {"", "nequix/", "nequip/"};
    if (!dir || !dir[0])
        return 0;
    for (size_t s = 0; s < sizeof(subdirs) / sizeof(subdirs[0]); s++)
        for (size_t e = 0; e < sizeof(exts) / sizeof(exts[0]); e++) {
            snprintf(out, cap, "%s/%s%s%s", dir, subdirs[s], name, exts[e]);
            if (is_file(out))
                return 1;
        }
    return 0;
}

enum fnq_status fnq_model_find(const char *name, char *path_out, size_t path_cap)
{
    if (!name || !path_out || path_cap == 0)
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "fnq_model_find: NULL argument");
    if (is_file(name)) {
        snprintf(path_out, path_cap, "%s", name);
        return FNQ_STATUS_OK;
    }
    const char *env = getenv("FUSEDNEQUIP_MODEL_DIR");
    if (!strchr(name, '/')) {
        if (find_in_dir(env, name, path_out, path_cap) ||
            find_in_dir(FNQ_DEFAULT_MODEL_DIR, name, path_out, path_cap))
            return FNQ_STATUS_OK;
    }
    if (is_dir(name))
        return fail_directory(name);
    return fnq__fail(FNQ_STATUS_IO,
                     "model '%s' not found: no such file%s%s%s%s (set FUSEDNEQUIP_MODEL_DIR to the "
                     "directory holding your models)",
                     name, strchr(name, '/') ? "" : ", nor in FUSEDNEQUIP_MODEL_DIR=",
                     strchr(name, '/') ? "" : (env ? env : "(unset)"),
                     strchr(name, '/') ? "" : " or ",
                     strchr(name, '/') ? "" : FNQ_DEFAULT_MODEL_DIR);
}

static enum fnq_status read_whole_file(const char *path, uint8_t **buf, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return fnq__fail(FNQ_STATUS_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return fnq__fail(FNQ_STATUS_IO, "%s: cannot seek: %s", path, strerror(errno));
    }
    long n = ftell(f);
    rewind(f);
    if (n < 0 || n > (1L << 34)) {
        fclose(f);
        return fnq__fail(FNQ_STATUS_IO, "%s: unreadable size", path);
    }
    *buf = malloc((size_t)n + 1);
    if (!*buf) {
        fclose(f);
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "%s: out of memory reading %ld bytes", path, n);
    }
    size_t got = fread(*buf, 1, (size_t)n, f);
    fclose(f);
    if (got != (size_t)n) {
        free(*buf);
        return fnq__fail(FNQ_STATUS_IO, "%s: read %zu of %ld bytes", path, got, n);
    }
    (*buf)[n] = 0;
    *size = (size_t)n;
    return FNQ_STATUS_OK;
}

static enum fnq_status load_buffer(const char *path, const uint8_t *buf, size_t size,
                                   struct fnq_model *m)
{
    const char *file = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    const uint8_t *nl = memchr(buf, '\n', size);
    if (size == 0 || buf[0] != '{')
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: not a model file: .fnqm and Nequix .nqx files start with a JSON "
                         "header line (convert NequIP files with fusednequip-convert)",
                         file);
    if (!nl)
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: the JSON header line has no end (truncated file)", file);
    cJSON *header = cJSON_ParseWithLength((const char *)buf, (size_t)(nl - buf));
    if (!header) {
        const char *at = cJSON_GetErrorPtr();
        long pos = at ? (long)(at - (const char *)buf) : -1;
        return fnq__fail(FNQ_STATUS_FORMAT,
                         "%s: line 1 is not valid JSON (error near byte %ld): corrupt file", file,
                         pos);
    }
    struct fnq_leaf_reader r = {file, buf, size, (size_t)(nl - buf) + 1, 0, 0};
    enum fnq_status st;
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(header, "format");
    if (cJSON_IsString(format) && strcmp(format->valuestring, FNQM_FORMAT) == 0) {
        struct fnqm_arrays arrays;
        st = fnq__fnqm_arrays_read(header, file, buf, size, r.offset, &arrays);
        if (st == FNQ_STATUS_OK)
            st = fnq__fnqm_build(header, &arrays, m);
        fnq__fnqm_arrays_free(&arrays);
    } else if (cJSON_IsString(format))
        st = fnq__fail(FNQ_STATUS_UNSUPPORTED, "%s: model format '%s' is not supported by this "
                                               "version of fusednequip",
                       file, format->valuestring);
    else if (cJSON_GetObjectItemCaseSensitive(header, "hidden_irreps"))
        st = fnq__nqx_build(header, &r, m);
    else
        st = fnq__fail(FNQ_STATUS_FORMAT,
                       "%s: header is neither a Nequix config nor a fusednequip-model header",
                       file);
    cJSON_Delete(header);
    return st;
}

enum fnq_status fnq_model_load(const char *path, struct fnq_model **out)
{
    fnq__clear_error();
    if (!path || !out)
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "fnq_model_load: NULL argument");
    *out = NULL;
    char resolved[4096];
    FNQ_CHECK(fnq_model_find(path, resolved, sizeof(resolved)));
    uint8_t *buf = NULL;
    size_t size = 0;
    FNQ_CHECK(read_whole_file(resolved, &buf, &size));
    struct fnq_model *m = fnq__model_alloc();
    if (!m) {
        free(buf);
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    snprintf(m->source, sizeof(m->source), "%s", resolved);
    enum fnq_status st = load_buffer(resolved, buf, size, m);
    free(buf);
    if (st != FNQ_STATUS_OK) {
        fnq__model_release(m);
        return st;
    }
    *out = m;
    return FNQ_STATUS_OK;
}

void fnq_model_free(struct fnq_model *model) { fnq__model_release(model); }

/* ---- getters ---- */

double fnq_model_cutoff(const struct fnq_model *m) { return m ? m->cutoff : 0.0; }
int32_t fnq_model_num_species(const struct fnq_model *m) { return m ? m->n_species : 0; }
int32_t fnq_model_num_layers(const struct fnq_model *m)
{
    return !m ? 0 : m->allegro ? m->allegro->n_layers : m->n_layers;
}
int64_t fnq_model_num_params(const struct fnq_model *m) { return m ? m->n_params : 0; }
const char *fnq_model_family(const struct fnq_model *m) { return m ? m->family : ""; }
const char *fnq_model_path(const struct fnq_model *m) { return m ? m->source : ""; }

const char *fnq_model_species_symbol(const struct fnq_model *m, int32_t index)
{
    return (m && index >= 0 && index < m->n_species) ? m->species_symbol[index] : NULL;
}

int32_t fnq_model_species_z(const struct fnq_model *m, int32_t index)
{
    return (m && index >= 0 && index < m->n_species) ? m->species_z[index] : 0;
}

int32_t fnq_model_species_index(const struct fnq_model *m, const char *symbol)
{
    if (!m || !symbol)
        return -1;
    for (int32_t t = 0; t < m->n_species; t++)
        if (strcmp(m->species_symbol[t], symbol) == 0)
            return t;
    return -1;
}

int32_t fnq_model_ghost_width(const struct fnq_model *m, int32_t layer)
{
    if (!m || layer < 1 || layer >= m->n_layers)
        return 0;
    /* the CUDA backend's rows are tiled (padded); the CPU's are in.dim wide */
    const struct fnq_irreps *in = &m->layers[layer].in;
    int64_t padded = 0;
    for (int b = 0; b < in->n_blocks; b++)
        padded += fnq__tiled_block_dim(&in->block[b]);
    return (int32_t)(padded > in->dim ? padded : in->dim);
}

enum fnq_status fnq_model_describe(const struct fnq_model *m, char *buf, size_t cap)
{
    if (!m || !buf || cap == 0)
        return fnq__fail(FNQ_STATUS_INVALID_ARG, "fnq_model_describe: NULL argument");
    size_t n = 0;
#define PUT(...)                                                                                \
    do {                                                                                        \
        if (n < cap)                                                                            \
            n += (size_t)snprintf(buf + n, cap - n, __VA_ARGS__);                               \
    } while (0)
    PUT("model: %s\nfamily: %s\nparameters: %lld\ncutoff: %.10g A\nlayers: %d\n", m->source,
        m->family, (long long)m->n_params, m->cutoff, fnq_model_num_layers(m));
    if (m->n_modalities > 0) {
        char names[512];
        fnq__modality_list(m, names, sizeof(names));
        PUT("modalities: %s (chosen: %s)\n", names,
            m->modality >= 0 ? m->modality_name[m->modality] : "none yet");
    }
    if (m->allegro) {
        const struct fnq_allegro *al = m->allegro;
        PUT("architecture: Allegro (strictly local: no ghost exchange), %d scalar and %d tensor "
            "features%s\nradial basis: %d Bessel functions\nspherical harmonics: l <= %d\n",
            al->n_scalar, al->n_tensor,
            al->cut_by_type ? ", per-edge-type cutoffs" : "", al->n_basis, m->lmax_sh);
    } else {
        if (m->xplor_r_on > 0.0)
            PUT("radial basis: %d Bessel functions, XPLOR envelope from %.10g A\n", m->n_basis,
                m->xplor_r_on);
        else
            PUT("radial basis: %d Bessel functions\n", m->n_basis);
        PUT("spherical harmonics: l <= %d%s\n", m->lmax_sh,
            m->sh_raw ? ", not normalised (|r|^l Y_l)" : "");
    }
    for (int32_t i = 0; i < m->n_layers; i++) {
        const struct fnq_layer *L = &m->layers[i];
        char a[512], b[512], c[512];
        fnq__irreps_format(&L->in, a, sizeof(a));
        fnq__irreps_format(&L->mid, b, sizeof(b));
        fnq__irreps_format(&L->out, c, sizeof(c));
        PUT("layer %d: %s -> messages %s (%d paths, %d radial weights) -> %s%s\n", i, a, b,
            L->n_paths, L->radial.size[L->radial.n_layers], c, L->resnet ? " (+ resnet)" : "");
    }
    if (m->pair.kind == FNQ_PAIR_ZBL)
        PUT("pair potential: ZBL (k_e %.10g, envelope p = %g over %.10g A), added unscaled\n",
            m->pair.coulomb, m->pair.poly_p, m->pair.cutoff);
    PUT("%s\nspecies (%d):", m->notes, m->n_species);
    for (int32_t t = 0; t < m->n_species; t++)
        PUT(" %s", m->species_symbol[t]);
    PUT("\n");
#undef PUT
    return FNQ_STATUS_OK;
}
