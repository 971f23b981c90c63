/*
 * bench_cpu.c: CPU baseline. Time per energy + forces + stress evaluation of cubic diamond Si
 * supercells (a = 5.43 A) with a Nequix model, one JSON line per size:
 *   {"bench": "cpu", "model": ..., "dtype": ..., "threads": ..., "atoms": N, "edges": E,
 *    "ms_per_step": ..., "us_per_atom_step": ..., "cpu_ms_per_step": ..., "repeats": R}
 * (cpu_ms_per_step: the process's CPU time per step, all threads; with one thread it is the
 * time the machine's other load did not take away)
 * usage: bench_cpu [--model NAME] [--dtype float64|float32] [--sizes 2,4,8] [--min-seconds S]
 *                  [--rattle A]
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

int main(int argc, char **argv)
{
    const char *model_name = "nequix-mp-1", *sizes = "2,4,8";
    enum fnq_dtype dtype = FNQ_DTYPE_F64;
    enum fnq_device device = FNQ_DEVICE_CPU;
    double min_seconds = 3.0, rattle = 0.0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--model")) model_name = argv[i + 1];
        else if (!strcmp(argv[i], "--sizes")) sizes = argv[i + 1];
        else if (!strcmp(argv[i], "--min-seconds")) min_seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--rattle")) rattle = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--dtype"))
            dtype = !strcmp(argv[i + 1], "float32") ? FNQ_DTYPE_F32 : FNQ_DTYPE_F64;
        else if (!strcmp(argv[i], "--device"))
            device = !strcmp(argv[i + 1], "cuda") ? FNQ_DEVICE_CUDA : FNQ_DEVICE_CPU;
        else {
            fprintf(stderr, "unknown option %s\n", argv[i]);
            return 1;
        }
    }
    struct fnq_model *m;
    struct fnq_ctx *ctx;
    if (fnq_model_load(model_name, &m) != FNQ_STATUS_OK ||
        fnq_ctx_init(m, device, 0, dtype, &ctx) != FNQ_STATUS_OK) {
        fprintf(stderr, "bench_cpu: %s\n", fnq_last_error());
        return 2;
    }
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    int32_t si = fnq_model_species_index(m, "Si"), pbc[3] = {1, 1, 1};
    char *list = strdup(sizes);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int rep = atoi(tok);
        double *pos, cell[9], energy, virial[6];
        int64_t n;
        diamond(rep, 5.43, rattle, &pos, cell, &n);
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
        } while (t1 - t0 < min_seconds && reps < 1000);
        double step = (t1 - t0) / reps, cpu = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / reps;
        printf("{\"bench\": \"cpu\", \"model\": \"%s\", \"dtype\": \"%s\", \"device\": \"%s\", "
               "\"threads\": %d, \"atoms\": %lld, \"edges\": %lld, \"ms_per_step\": %.3f, "
               "\"us_per_atom_step\": %.3f, \"cpu_ms_per_step\": %.3f, \"repeats\": %d, \"rattle_A\": %g, "
               "\"energy\": %.10f}\n",
               model_name, fnq_dtype_name(fnq_ctx_dtype(ctx)),
               fnq_device_name(fnq_ctx_device(ctx)), threads, (long long)n,
               (long long)fnq_ctx_last_num_edges(ctx), 1e3 * step, 1e6 * step / (double)n, 1e3 * cpu, reps, rattle,
               energy);
        fflush(stdout);
        free(pos), free(species), free(forces);
    }
    free(list);
    fnq_ctx_free(ctx);
    fnq_model_free(m);
    return 0;
}
