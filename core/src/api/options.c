/*
 * options.c: read the environment's switches once into struct fnq_options (options.h).
 */
#include <stdlib.h>
#include <string.h>

#include "api/options.h"

static int is_set(const char *name) { return getenv(name) != NULL; }

static int equals(const char *name, const char *value)
{
    const char *v = getenv(name);
    return v && strcmp(v, value) == 0;
}

/* a multiple of 16 in [16, 256], else 0 (automatic) */
static int edges_per_chunk(const char *name)
{
    const char *v = getenv(name);
    const int n = v ? atoi(v) : 0;
    return n >= 16 && n <= 256 && n % 16 == 0 ? n : 0;
}

void fnq__options_read(struct fnq_options *o)
{
    memset(o, 0, sizeof(*o));
    o->host_graph = equals("FNQ_HOST_GRAPH", "1");
    o->no_cuda_graph = is_set("FNQ_NO_CUDA_GRAPH");
    o->timing = equals("FNQ_TIMING", "1");
    o->verbose = is_set("FNQ_VERBOSE");
    o->debug_layers = is_set("FNQ_DEBUG_LAYERS");
    o->radial_exact = equals("FNQ_RADIAL", "exact");
    o->radial_intervals = 2048;
    if (getenv("FNQ_RADIAL_INTERVALS")) {
        const int n = atoi(getenv("FNQ_RADIAL_INTERVALS"));
        o->radial_intervals = n > 16 ? n : 16;
    }
    o->tf32 = equals("FNQ_TF32", "1");
    o->sh_generic = equals("FNQ_SH_GENERIC", "1");
    o->no_quads = equals("FNQ_NO_QUADS", "1");
    /* set to anything but "" or "0" */
    const char *groups = getenv("FNQ_NO_GROUPS");
    o->no_groups = groups && *groups && strcmp(groups, "0") != 0;
    o->ec_fwd = edges_per_chunk("FNQ_EC_FWD");
    o->ec_bwd = edges_per_chunk("FNQ_EC_BWD");
    o->skip = getenv("FNQ_SKIP") ? atoi(getenv("FNQ_SKIP")) : 0;
    o->lean_memory = equals("FNQ_LEAN_MEMORY", "1");
    o->node_gemm = equals("FNQ_NODE_GEMM", "0") ? 0 : equals("FNQ_NODE_GEMM", "1") ? 1 : -1;
    o->tp_generic = equals("FNQ_TP_GENERIC", "1");
    o->allegro_chunk = getenv("FNQ_ALLEGRO_CHUNK") ? atoi(getenv("FNQ_ALLEGRO_CHUNK")) : 0;
    if (o->allegro_chunk < 0)
        o->allegro_chunk = 0;
    o->allegro_cublas = equals("FNQ_ALLEGRO_GEMM", "cublas");
    const char *apb = getenv("FNQ_ATOMS_PER_BLOCK");
    o->atoms_per_block = apb && (!strcmp(apb, "1") || !strcmp(apb, "2") || !strcmp(apb, "4"))
                             ? atoi(apb)
                             : 0;
    o->cpu_pair_mb = 2048;
    if (getenv("FNQ_CPU_PAIR_MB")) {
        const int n = atoi(getenv("FNQ_CPU_PAIR_MB"));
        o->cpu_pair_mb = n > 0 ? n : 0;
    }
}
