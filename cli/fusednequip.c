/*
 * fusednequip.c: the command-line tool.
 *   fusednequip info                       the library: version, backends, CUDA devices
 *   fusednequip info MODEL                 architecture, species, cutoff, parameter count
 *   fusednequip eval MODEL STRUCTURE.xyz   energy, per-atom energies, forces, stress, virial as
 *                                          JSON (one object per frame, one line each)
 * Exit status: 0 on success, 1 on a usage error, 2 when a model or structure is rejected.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fnq.h"
#include "eval.h"
#include "xyz.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: fusednequip info [MODEL]\n"
            "       fusednequip eval [--dtype float32|float64] [--device auto|cpu|cuda]\n"
            "                        [--min-distance A] [--max-neighbors N] [--modal NAME]\n"
            "                        [--batch N] MODEL STRUCTURE.xyz\n"
            "\n"
            "MODEL is a file (.fnqm, .nqx) or a model name looked up in $FUSEDNEQUIP_MODEL_DIR\n"
            "(default %s).\n"
            "info without MODEL describes the library: version, backends, CUDA devices.\n"
            "eval prints JSON: energy (eV), energies (eV per atom), forces (eV/A), stress\n"
            "(eV/A^3, Voigt xx yy zz yz xz xy, ASE sign; only with a 3-D cell) and virial (eV).\n"
            "--modal chooses the modality of a multi-modal model (e.g. PBE for 7net-mf-0).\n"
            "--batch N evaluates the frames N at a time, each batch in one call of the library\n"
            "(one graph on the GPU: many small structures); the lines then have no nedges.\n",
            fnq_default_model_dir());
}

static int load(const char *name, struct fnq_model **m)
{
    if (fnq_model_load(name, m) != FNQ_STATUS_OK) {
        fprintf(stderr, "fusednequip: error: %s\n", fnq_last_error());
        return 2;
    }
    return 0;
}

/* info without a model: what this build of the library has */
static int cmd_info_library(void)
{
    printf("version: %s\n", fnq_version_string());
    printf("backends:");
    for (int32_t i = 0; i < fnq_backend_count(); i++)
        printf(" %s", fnq_backend_name(i));
    printf("\n");
    printf("cuda devices: %d\n", (int)fnq_cuda_device_count());
    printf("model directory: %s\n", fnq_default_model_dir());
    return 0;
}

static int cmd_info(int argc, char **argv)
{
    if (argc == 0)
        return cmd_info_library();
    if (argc != 1) {
        usage(stderr);
        return 1;
    }
    struct fnq_model *m;
    int rc = load(argv[0], &m);
    if (rc)
        return rc;
    char *buf = malloc(1 << 16);
    if (!buf || fnq_model_describe(m, buf, 1 << 16) != FNQ_STATUS_OK) {
        fprintf(stderr, "fusednequip: error: %s\n", buf ? fnq_last_error() : "out of memory");
        free(buf);
        fnq_model_free(m);
        return 2;
    }
    fputs(buf, stdout);
    free(buf);
    fnq_model_free(m);
    return 0;
}

static int cmd_eval(int argc, char **argv)
{
    enum fnq_dtype dtype = FNQ_DTYPE_DEFAULT;
    enum fnq_device device = FNQ_DEVICE_AUTO;
    double min_distance = -1.0;
    long long max_neighbors = -1;
    const char *modal = NULL;
    long long batch = 1;
    int k = 0;
    for (; k < argc && strncmp(argv[k], "--", 2) == 0; k++) {
        const char *opt = argv[k];
        const char *val = (k + 1 < argc) ? argv[k + 1] : NULL;
        if (!val) {
            fprintf(stderr, "fusednequip: error: option %s needs a value\n", opt);
            return 1;
        }
        k++;
        if (strcmp(opt, "--dtype") == 0) {
            if (strcmp(val, "float32") == 0) dtype = FNQ_DTYPE_F32;
            else if (strcmp(val, "float64") == 0) dtype = FNQ_DTYPE_F64;
            else {
                fprintf(stderr, "fusednequip: error: --dtype must be float32 or float64, not '%s'\n",
                        val);
                return 1;
            }
        } else if (strcmp(opt, "--device") == 0) {
            if (strcmp(val, "cpu") == 0) device = FNQ_DEVICE_CPU;
            else if (strcmp(val, "cuda") == 0) device = FNQ_DEVICE_CUDA;
            else if (strcmp(val, "auto") == 0) device = FNQ_DEVICE_AUTO;
            else {
                fprintf(stderr, "fusednequip: error: --device must be auto, cpu or cuda, not '%s'\n",
                        val);
                return 1;
            }
        } else if (strcmp(opt, "--min-distance") == 0) {
            min_distance = atof(val);
        } else if (strcmp(opt, "--max-neighbors") == 0) {
            max_neighbors = atoll(val);
        } else if (strcmp(opt, "--modal") == 0) {
            modal = val;
        } else if (strcmp(opt, "--batch") == 0) {
            char *end;
            batch = strtoll(val, &end, 10);
            if (*end || batch < 1 || batch > 1000000) {
                fprintf(stderr, "fusednequip: error: --batch must be a frame count from 1 to "
                                "1000000, not '%s'\n", val);
                return 1;
            }
        } else {
            fprintf(stderr, "fusednequip: error: unknown option %s\n", opt);
            return 1;
        }
    }
    if (argc - k != 2) {
        usage(stderr);
        return 1;
    }
    const char *model_name = argv[k], *file = argv[k + 1];
    FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "r");
    if (!f) {
        fprintf(stderr, "fusednequip: error: %s: cannot open\n", file);
        return 2;
    }
    struct fnq_model *m;
    int rc = load(model_name, &m);
    if (rc) {
        if (f != stdin) fclose(f);
        return rc;
    }
    struct fnq_ctx *ctx;
    if ((modal && fnq_model_set_modality(m, modal) != FNQ_STATUS_OK) ||
        fnq_ctx_init(m, device, 0, dtype, &ctx) != FNQ_STATUS_OK ||
        (min_distance >= 0.0 && fnq_ctx_set_min_distance(ctx, min_distance) != FNQ_STATUS_OK) ||
        (max_neighbors >= 0 && fnq_ctx_set_max_neighbors(ctx, max_neighbors) != FNQ_STATUS_OK)) {
        fprintf(stderr, "fusednequip: error: %s\n", fnq_last_error());
        fnq_model_free(m);
        if (f != stdin) fclose(f);
        return 2;
    }
    int64_t line = 0, frames = 0, held = 0;
    char err[1024];
    struct xyz_frame *fr = calloc((size_t)batch, sizeof(*fr));
    int got = 1;
    if (!fr) {
        fprintf(stderr, "fusednequip: error: out of memory for a batch of %lld frames\n", batch);
        rc = 2;
    }
    /* frames are read `batch` at a time; the last batch takes what is left */
    while (fr && rc == 0 && got == 1) {
        got = xyz_read_frame(f, file, &line, &fr[held], err, sizeof(err));
        if (got == 1 && ++held < batch)
            continue;
        if (held > 0)
            rc = eval_frames(ctx, m, file, fr, held, batch > 1);
        frames += held;
        for (int64_t s = 0; s < held; s++)
            xyz_frame_free(&fr[s]);
        held = 0;
    }
    free(fr);
    if (got < 0) {
        fprintf(stderr, "fusednequip: error: %s\n", err);
        rc = 2;
    } else if (rc == 0 && frames == 0) {
        fprintf(stderr, "fusednequip: error: %s: no structure in the file\n", file);
        rc = 2;
    }
    fflush(stdout);
    fnq_ctx_free(ctx);
    fnq_model_free(m);
    if (f != stdin) fclose(f);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 1;
    }
    if (strcmp(argv[1], "info") == 0)
        return cmd_info(argc - 2, argv + 2);
    if (strcmp(argv[1], "eval") == 0)
        return cmd_eval(argc - 2, argv + 2);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("fusednequip %s\n", fnq_version_string());
        return 0;
    }
    fprintf(stderr, "fusednequip: error: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 1;
}
