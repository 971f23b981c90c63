/*
 * bench_cpu.c: CPU baseline. Time per energy + forces + stress evaluation of cubic diamond Si
 * supercells (a = 5.43 A) with a Nequix model, one JSON line per size:
 *   {"bench": "cpu", "model": ..., "dtype": ..., "threads": ..., "atoms": N, "edges": E,
 *    "ms_per_step": ..., "us_per_atom_step": ..., "cpu_ms_per_step": ..., "repeats": R}
 * (cpu_ms_per_step: the process's CPU time per step, all threads; with one thread it is the
 * time the machine's other load did not take away)
 * usage: bench_cpu [--model NAME] [--dtype float64|float32] [--device cpu|cuda] [--sizes 2,4,8]
 *                  [--min-seconds S] [--rattle A]   (--help: this usage)
 * (--sizes are cubic repeats of the 8-atom cell: 2 -> 64, 4 -> 512, 8 -> 4096 atoms; --rattle
 * moves each coordinate by up to +-A Angstrom, fixed seed, as heat does: a perfect lattice has
 * five distinct neighbour distances, so look-ups by distance hit the cache more than in MD)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fnq.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static double clock_s(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }

static void diamond(int rep, double a, double rattle, double **pos, double *cell, int64_t *n)
{
    uint64_t seed = 0x9E3779B97F4A7C15ull; /* xorshift64: the same structure in every run */
    static const double basis[8][3] = {{0, 0, 0},          {0, 0.5, 0.5},      {0.5, 0, 0.5},
                                       {0.5, 0.5, 0},      {0.25, 0.25, 0.25}, {0.25, 0.75, 0.75},
                                       {0.75, 0.25, 0.75}, {0.75, 0.75, 0.25}};
    *n = 8LL * rep * rep * rep;
    *pos = malloc(sizeof(double) * 3 * (size_t)*n);
    int64_t k = 0;
    for (int x = 0; x < rep; x++)
        for (int y = 0; y < rep; y++)
            for (int z = 0; z < rep; z++)
                for (int b = 0; b < 8; b++, k++) {
                    const int cell_of[3] = {x, y, z};
                    for (int c = 0; c < 3; c++) {
                        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
                        const double u = (double)(seed >> 11) / 9007199254740992.0; /* [0,1) */
                        (*pos)[3 * k + c] = a * (cell_of[c] + basis[b][c]) + rattle * (2 * u - 1);
                    }
                }
    memset(cell, 0, 9 * sizeof(double));
    cell[0] = cell[4] = cell[8] = a * rep;
}

struct options {
    const char *model_name, *sizes;
    enum fnq_dtype dtype;
    enum fnq_device device;
    double min_seconds, rattle;
};

static void usage(FILE *out)
{
    fprintf(out, "usage: bench_cpu [--model NAME] [--dtype float64|float32] [--device cpu|cuda]\n"
                 "                 [--sizes 2,4,8] [--min-seconds S] [--rattle A]\n"
                 "Times energy + forces + stress of diamond Si supercells (--sizes: cubic repeats"
                 " of the\n8-atom cell, 2 -> 64 atoms) and prints one JSON line per size.\n");
}

/* one option and its value into o; -1 for an unknown option or value */
static int set_option(struct options *o, const char *k, const char *v)
{
    if (!strcmp(k, "--model"))
        o->model_name = v;
    else if (!strcmp(k, "--sizes"))
        o->sizes = v;
    else if (!strcmp(k, "--min-seconds"))
        o->min_seconds = atof(v);
    else if (!strcmp(k, "--rattle"))
        o->rattle = atof(v);
    else if (!strcmp(k, "--dtype") && !strcmp(v, "float32"))
        o->dtype = FNQ_DTYPE_F32;
    else if (!strcmp(k, "--dtype") && !strcmp(v, "float64"))
        o->dtype = FNQ_DTYPE_F64;
    else if (!strcmp(k, "--device") && !strcmp(v, "cuda"))
        o->device = FNQ_DEVICE_CUDA;
    else if (!strcmp(k, "--device") && !strcmp(v, "cpu"))
        o->device = FNQ_DEVICE_CPU;
    else
        return -1;
    return 0;
}

/* 0: run; 1: --help was asked (usage on stdout); -1: a bad argument (usage on stderr) */
static int parse(int argc, char **argv, struct options *o)
{
    *o = (struct options){"nequix-mp-1", "2,4,8", FNQ_DTYPE_F64, FNQ_DEVICE_CPU, 3.0, 0.0};
    for (int i = 1; i < argc; i += 2) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(k, "--help") || !strcmp(k, "-h")) {
            usage(stdout);
            return 1;
        }
        if (!v || set_option(o, k, v)) {
            if (v)
                fprintf(stderr, "bench_cpu: unknown option or value: %s %s\n", k, v);
            else
                fprintf(stderr, "bench_cpu: %s needs a value\n", k);
            usage(stderr);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct options o;
    const int parsed = parse(argc, argv, &o);
    if (parsed)
        return parsed > 0 ? 0 : 1;
    struct fnq_model *m;
    struct fnq_ctx *ctx;
    if (fnq_model_load(o.model_name, &m) != FNQ_STATUS_OK ||
        fnq_ctx_init(m, o.device, 0, o.dtype, &ctx) != FNQ_STATUS_OK) {
        fprintf(stderr, "bench_cpu: %s\n", fnq_last_error());
        return 2;
    }
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    int32_t si = fnq_model_species_index(m, "Si"), pbc[3] = {1, 1, 1};
    char *list = strdup(o.sizes);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int rep = atoi(tok);
        double *pos, cell[9], energy, virial[6];
        int64_t n;
        diamond(rep, 5.43, o.rattle, &pos, cell, &n);
        int32_t *species = malloc(sizeof(int32_t) * (size_t)n);
        double *forces = malloc(sizeof(double) * 3 * (size_t)n);
        for (int64_t i = 0; i < n; i++)
            species[i] = si;
        /* warm-up: buffers grow to size, pages are touched */
        if (fnq_ctx_compute_periodic(ctx, n, pos, species, cell, pbc, &energy, NULL, forces,
                                     virial) != FNQ_STATUS_OK) {
            fprintf(stderr, "bench_cpu: %s\n", fnq_last_error());
            return 2;
        }
        int reps = 0;
        double t0 = now(), t1, c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        do {
            fnq_ctx_compute_periodic(ctx, n, pos, species, cell, pbc, &energy, NULL, forces,
                                     virial);
            reps++;
            t1 = now();
        } while (t1 - t0 < o.min_seconds && reps < 1000);
        double step = (t1 - t0) / reps, cpu = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / reps;
        printf("{\"bench\": \"cpu\", \"model\": \"%s\", \"dtype\": \"%s\", \"device\": \"%s\", "
               "\"threads\": %d, \"atoms\": %lld, \"edges\": %lld, \"ms_per_step\": %.3f, "
               "\"us_per_atom_step\": %.3f, \"cpu_ms_per_step\": %.3f, \"repeats\": %d, \"rattle_A\": %g, "
               "\"energy\": %.10f}\n",
               o.model_name, fnq_dtype_name(fnq_ctx_dtype(ctx)),
               fnq_device_name(fnq_ctx_device(ctx)), threads, (long long)n,
               (long long)fnq_ctx_last_num_edges(ctx), 1e3 * step, 1e6 * step / (double)n, 1e3 * cpu, reps, o.rattle,
               energy);
        fflush(stdout);
        free(pos), free(species), free(forces);
    }
    free(list);
    fnq_ctx_free(ctx);
    fnq_model_free(m);
    return 0;
}
