/*
 * eval.c: frames to the library and its results to JSON lines (eval.h).
 */
#include "eval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", *s);
        else
            putchar(*s);
    }
    putchar('"');
}

static void print_array(const double *v, int64_t n)
{
    putchar('[');
    for (int64_t i = 0; i < n; i++)
        printf("%s%.17g", i ? ", " : "", v[i]);
    putchar(']');
}

static double cell_volume(const double *c)
{
    return c[0] * (c[4] * c[8] - c[5] * c[7]) - c[1] * (c[3] * c[8] - c[5] * c[6]) +
           c[2] * (c[3] * c[7] - c[4] * c[6]);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* one frame's line; nedges < 0 leaves the edge count out (a batch counts its edges together) */
static void print_frame(struct fnq_ctx *ctx, const struct fnq_model *m,
                        const struct xyz_frame *fr, double energy, const double *energies,
                        const double *forces, const double *virial, int64_t nedges)
{
    const int64_t n = fr->n_atoms;
    printf("{\"energy\": %.17g, \"natoms\": %lld, ", energy, (long long)n);
    if (nedges >= 0)
        printf("\"nedges\": %lld, ", (long long)nedges);
    printf("\"energies\": ");
    print_array(energies, n);
    printf(", \"forces\": [");
    for (int64_t i = 0; i < n; i++) {
        printf("%s", i ? ", " : "");
        print_array(forces + 3 * i, 3);
    }
    printf("], \"virial\": ");
    print_array(virial, 6);
    double vol = fr->has_cell ? fabs(cell_volume(fr->cell)) : 0.0;
    if (vol > 1e-12) {
        double stress[6];
        for (int k = 0; k < 6; k++)
            stress[k] = -virial[k] / vol;
        printf(", \"stress\": ");
        print_array(stress, 6);
    }
    printf(", \"dtype\": \"%s\", \"device\": \"%s\", \"model\": ",
           fnq_dtype_name(fnq_ctx_dtype(ctx)), fnq_device_name(fnq_ctx_device(ctx)));
    print_json_string(fnq_model_path(m));
    printf("}\n");
}

/* the model's species index of each atom of a frame; 2 after a message naming the atom */
static int frame_species(const struct fnq_model *m, const char *file, const struct xyz_frame *fr,
                         int32_t *species)
{
    for (int64_t i = 0; i < fr->n_atoms; i++) {
        species[i] = fnq_model_species_index(m, fr->symbols[i]);
        if (species[i] < 0) {
            fprintf(stderr,
                    "fusednequip: error: %s:%lld: atom %lld is element '%s', which the model %s "
                    "does not have\n",
                    file, (long long)(fr->first_line + 2 + i), (long long)i, fr->symbols[i],
                    base_name(fnq_model_path(m)));
            return 2;
        }
    }
    return 0;
}

/* the frames' arrays end to end, as fnq_ctx_compute_batch takes them */
struct batch {
    int64_t *offsets;
    double *positions, *cells, *energies, *atom_energies, *forces, *virials;
    int32_t *species, *pbc;
};

static void batch_free(struct batch *b)
{
    free(b->offsets), free(b->positions), free(b->cells), free(b->energies);
    free(b->atom_energies), free(b->forces), free(b->virials), free(b->species), free(b->pbc);
}

/* zeroed, so that what a frame without atoms or a cell leaves alone is defined */
static int batch_alloc(struct batch *b, int64_t count, int64_t n)
{
    const size_t s = (size_t)count, a = (size_t)(n > 0 ? n : 1);
    b->offsets = calloc(s + 1, sizeof(int64_t));
    b->positions = calloc(3 * a, sizeof(double));
    b->cells = calloc(9 * s, sizeof(double));
    b->energies = calloc(s, sizeof(double));
    b->atom_energies = calloc(a, sizeof(double));
    b->forces = calloc(3 * a, sizeof(double));
    b->virials = calloc(6 * s, sizeof(double));
    b->species = calloc(a, sizeof(int32_t));
    b->pbc = calloc(3 * s, sizeof(int32_t));
    return b->offsets && b->positions && b->cells && b->energies && b->atom_energies &&
           b->forces && b->virials && b->species && b->pbc;
}

/* "structure S: ..." from the library, said of the frame it is about */
static void batch_error(const char *file, const struct xyz_frame *frames, int64_t count)
{
    const char *msg = fnq_last_error();
    long long s = -1;
    int used = 0;
    if (sscanf(msg, "structure %lld: %n", &s, &used) == 1 && used > 0 && s >= 0 && s < count)
        fprintf(stderr, "fusednequip: error: %s (frame at line %lld): %s\n", file,
                (long long)frames[s].first_line, msg + used);
    else
        fprintf(stderr, "fusednequip: error: %s (frames at lines %lld..%lld): %s\n", file,
                (long long)frames[0].first_line, (long long)frames[count - 1].first_line, msg);
}

static int eval_batch(struct fnq_ctx *ctx, const struct fnq_model *m, const char *file,
                      const struct xyz_frame *frames, int64_t count)
{
    int64_t n = 0;
    for (int64_t s = 0; s < count; s++)
        n += frames[s].n_atoms;
    struct batch b = {0};
    int rc = 0;
    if (!batch_alloc(&b, count, n)) {
        fprintf(stderr, "fusednequip: error: out of memory for a batch of %lld atoms\n",
                (long long)n);
        rc = 2;
        goto done;
    }
    b.offsets[0] = 0;
    for (int64_t s = 0; s < count && !rc; s++) {
        const struct xyz_frame *fr = &frames[s];
        const int64_t a0 = b.offsets[s];
        b.offsets[s + 1] = a0 + fr->n_atoms;
        memcpy(b.positions + 3 * a0, fr->positions, sizeof(double) * 3 * (size_t)fr->n_atoms);
        if (fr->has_cell)
            memcpy(b.cells + 9 * s, fr->cell, sizeof(fr->cell));
        else
            memset(b.cells + 9 * s, 0, sizeof(fr->cell));
        memcpy(b.pbc + 3 * s, fr->pbc, sizeof(fr->pbc));
        rc = frame_species(m, file, fr, b.species + a0);
    }
    if (rc)
        goto done;
    if (fnq_ctx_compute_batch(ctx, count, b.offsets, b.positions, b.species, b.cells, b.pbc,
                              b.energies, b.atom_energies, b.forces, b.virials) != FNQ_STATUS_OK) {
        batch_error(file, frames, count);
        rc = 2;
        goto done;
    }
    for (int64_t s = 0; s < count; s++) {
        const int64_t a0 = b.offsets[s];
        print_frame(ctx, m, &frames[s], b.energies[s], b.atom_energies + a0, b.forces + 3 * a0,
                    b.virials + 6 * s, -1);
    }
done:
    batch_free(&b);
    return rc;
}

static int eval_one(struct fnq_ctx *ctx, const struct fnq_model *m, const char *file,
                    const struct xyz_frame *fr)
{
    const size_t a = (size_t)(fr->n_atoms > 0 ? fr->n_atoms : 1);
    int32_t *species = malloc(sizeof(int32_t) * a);
    double *energies = malloc(sizeof(double) * a);
    double *forces = malloc(sizeof(double) * 3 * a);
    int rc = 0;
    double energy, virial[6];
    if (!species || !energies || !forces) {
        fprintf(stderr, "fusednequip: error: out of memory for %lld atoms\n",
                (long long)fr->n_atoms);
        rc = 2;
    } else if ((rc = frame_species(m, file, fr, species)) == 0) {
        if (fnq_ctx_compute_periodic(ctx, fr->n_atoms, fr->positions, species,
                                     fr->has_cell ? fr->cell : NULL, fr->pbc, &energy, energies,
                                     forces, virial) != FNQ_STATUS_OK) {
            fprintf(stderr, "fusednequip: error: %s (frame at line %lld): %s\n", file,
                    (long long)fr->first_line, fnq_last_error());
            rc = 2;
        } else {
            print_frame(ctx, m, fr, energy, energies, forces, virial,
                        fnq_ctx_last_num_edges(ctx));
        }
    }
    free(species), free(energies), free(forces);
    return rc;
}

int eval_frames(struct fnq_ctx *ctx, const struct fnq_model *m, const char *file,
                const struct xyz_frame *frames, int64_t count, int batched)
{
    return batched ? eval_batch(ctx, m, file, frames, count) : eval_one(ctx, m, file, frames);
}
