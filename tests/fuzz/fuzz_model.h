/*
 * fuzz_model.h: one model file through the library, as the harnesses of both model formats
 * (fuzz_nqx.c, fuzz_fnqm.c) do it. Both formats are one file, a JSON header line and .npy
 * records, read by the same entry point (fnq_model_load, which dispatches on the header), so
 * the harnesses differ in their seeds and in what fuzz_fnqm.c makes of the header.
 *
 * A file that loads is described (fnq_model_describe) and, when small, evaluated once on the
 * CPU (three atoms, no cell): whatever the loader accepts must be safe to run. A file that is
 * refused must say so with a message naming the file.
 */
#pragma once

#include "fnq.h"
#include "fuzz_common.h"

#include "model/model.h" /* the harnesses link the static library and see its internals */

/* Inputs above this size, or models with more work per edge than FUZZ_EVAL_MAX_WORK, load but
 * are not evaluated: the real 2.8 MB Nequix models take a few ms each under the sanitizers,
 * and a header can ask for thousands of l = 6 paths, seconds per evaluation. */
#define FUZZ_EVAL_MAX_BYTES (256 * 1024)
#define FUZZ_EVAL_MAX_WORK 2e5

/* multiply-adds per edge and per atom, roughly: tensor-product terms and radial MLPs per edge,
 * linears per atom */
static double fuzz_eval_work(const struct fnq_model *m)
{
    double work = 0;
    for (int32_t i = 0; i < m->n_layers; i++) {
        const struct fnq_layer *L = &m->layers[i];
        for (int32_t p = 0; p < L->n_paths; p++)
            work += (double)L->paths[p].n_terms * L->paths[p].mul;
        for (int32_t k = 0; k < L->radial.n_layers; k++)
            work += (double)L->radial.size[k] * L->radial.size[k + 1];
        work += (double)(L->linear_1.n_w + L->linear_2.n_w + L->self_conn.n_w) *
                (2 * FNQ_MAX_L + 1);
    }
    return work;
}

static void fuzz_evaluate(const struct fnq_model *m)
{
    struct fnq_ctx *ctx = NULL;
    if (fnq_ctx_init(m, FNQ_DEVICE_CPU, 0, FNQ_DTYPE_F64, &ctx) != FNQ_STATUS_OK) {
        fuzz_check_message(fnq_last_error(), "");
        return;
    }
    double rc = fnq_model_cutoff(m);
    int32_t last = fnq_model_num_species(m) - 1;
    double pos[9] = {0, 0, 0, 0.6 * rc, 0, 0, 0.1 * rc, 0.7 * rc, 0.05 * rc};
    int32_t species[3] = {0, last, 0};
    double energy = 0, forces[9], virial[6];
    if (fnq_ctx_compute_periodic(ctx, 3, pos, species, NULL, NULL, &energy, NULL, forces,
                                 virial) != FNQ_STATUS_OK)
        fuzz_check_message(fnq_last_error(), "");
    fnq_ctx_free(ctx);
}

static void fuzz_model_bytes(const uint8_t *data, size_t size, const char *name)
{
    const char *path = fuzz_input_file(data, size, name);
    fuzz_alloc_begin(size);
    struct fnq_model *m = NULL;
    if (fnq_model_load(path, &m) == FNQ_STATUS_OK) {
        static char text[1 << 16];
        fnq_model_describe(m, text, sizeof(text));
        if (getenv("FUZZ_PRINT_WORK"))
            fprintf(stderr, "fuzz: evaluation work %g\n", fuzz_eval_work(m));
        if (size <= FUZZ_EVAL_MAX_BYTES && fuzz_eval_work(m) <= FUZZ_EVAL_MAX_WORK) {
            fuzz_alloc_pause();
            fuzz_evaluate(m);
            fuzz_alloc_resume();
        }
        fnq_model_free(m);
    } else {
        if (m) {
            fprintf(stderr, "fuzz: FINDING: a failed load returned a model\n");
            abort();
        }
        fuzz_check_message(fnq_last_error(), name);
    }
    fuzz_alloc_end();
    fuzz_remove_file(path);
}
