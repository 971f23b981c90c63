/*
 * test_backend_registry.c: the backend registry of a STATICALLY linked library
 * (fusednequip_internal) has "cpu" always and "cuda" exactly when the build was made with the
 * CUDA backend (FNQ_TEST_EXPECT_CUDA, passed by CMake). A static link is where a weakly linked
 * backend used to vanish without a word; now the registry names the kernels' entry directly.
 * The CUDA entry also names the Allegro engine's tables, which an Allegro model gets.
 * Then device "cuda": without the CUDA backend it fails with the "no CUDA backend" message;
 * with it, on a machine without a GPU it fails with the kernels' "no usable GPU" message (the
 * backend is there, the device is not), and with a GPU the context is made on it.
 */
#include <string.h>

#include "allegro/allegro.h"
#include "backend/backend.h"
#include "fnq_test.h"

#ifndef FNQ_TEST_EXPECT_CUDA
#error "FNQ_TEST_EXPECT_CUDA (0 or 1) must be set by tests/CMakeLists.txt"
#endif
#ifndef FNQ_TEST_MODEL
#error "FNQ_TEST_MODEL (a small model file) must be set by tests/CMakeLists.txt"
#endif

int main(void)
{
    const int want_cuda = FNQ_TEST_EXPECT_CUDA;
    printf("build with CUDA: %s; registry:", want_cuda ? "yes" : "no");
    for (int32_t i = 0; i < fnq_backend_count(); i++)
        printf(" %s", fnq_backend_name(i));
    printf("\n");

    /* the public view: count and names */
    CHECK(fnq_backend_count() == 1 + want_cuda, "%d backends, want %d", (int)fnq_backend_count(),
          1 + want_cuda);
    CHECK(fnq_backend_name(0) && strcmp(fnq_backend_name(0), "cpu") == 0,
          "backend 0 is '%s', want 'cpu'", fnq_backend_name(0) ? fnq_backend_name(0) : "(null)");
    if (want_cuda)
        CHECK(fnq_backend_name(1) && strcmp(fnq_backend_name(1), "cuda") == 0,
              "backend 1 is '%s', want 'cuda'",
              fnq_backend_name(1) ? fnq_backend_name(1) : "(null)");
    CHECK(fnq_backend_name(-1) == NULL, "fnq_backend_name(-1) is not NULL");
    CHECK(fnq_backend_name(fnq_backend_count()) == NULL, "fnq_backend_name(count) is not NULL");

    /* the internal lookups ctx.c uses */
    const struct fnq_backend_reg *cpu = fnq__backend_reg_by_name("cpu");
    CHECK(cpu && cpu->device == FNQ_DEVICE_CPU && cpu == fnq__backend_reg_by_device(FNQ_DEVICE_CPU)
              && cpu->device_count() == 1,
          "the cpu entry is missing or inconsistent");
    const struct fnq_backend_reg *cuda = fnq__backend_reg_by_name("cuda");
    CHECK((cuda != NULL) == want_cuda, "registry entry 'cuda' %s, the build %s CUDA",
          cuda ? "present" : "absent", want_cuda ? "has" : "has no");
    CHECK(cuda == fnq__backend_reg_by_device(FNQ_DEVICE_CUDA),
          "by name and by device give different cuda entries");
    if (cuda)
        CHECK(cuda->device == FNQ_DEVICE_CUDA && strcmp(cuda->f32->name, "cuda") == 0 && strcmp(cuda->f64->name, "cuda") == 0 &&
                  cuda->device_count() == fnq_cuda_device_count(),
              "the cuda entry is inconsistent");
    /* an Allegro model gets the CUDA backend's Allegro engine, any other model its NequIP
     * kernels; the CPU's one table serves both (fnq__backend_reg_table) */
    struct fnq_allegro allegro_part;
    struct fnq_model nequip_like, allegro_like;
    memset(&nequip_like, 0, sizeof(nequip_like));
    memset(&allegro_like, 0, sizeof(allegro_like));
    allegro_like.allegro = &allegro_part;
    CHECK(!cpu->allegro_f32 && !cpu->allegro_f64 &&
              fnq__backend_reg_table(cpu, &allegro_like, FNQ_DTYPE_F64) == cpu->f64,
          "the cpu entry should take Allegro models in its own table");
    if (cuda) {
        CHECK(cuda->allegro_f32 && cuda->allegro_f64 && cuda->allegro_f32 != cuda->f32 &&
                  strcmp(cuda->allegro_f64->name, "cuda") == 0,
              "the cuda entry has no Allegro engine tables");
        CHECK(fnq__backend_reg_table(cuda, &allegro_like, FNQ_DTYPE_F32) == cuda->allegro_f32 &&
                  fnq__backend_reg_table(cuda, &allegro_like, FNQ_DTYPE_F64) ==
                      cuda->allegro_f64 &&
                  fnq__backend_reg_table(cuda, &nequip_like, FNQ_DTYPE_F32) == cuda->f32,
              "fnq__backend_reg_table picks the wrong cuda table");
    }
    CHECK(fnq__backend_reg_by_name("metal") == NULL && fnq__backend_reg_by_name(NULL) == NULL,
          "lookup of an unknown name found something");
    CHECK(fnq__backend_reg_by_device(FNQ_DEVICE_AUTO) == NULL, "device auto has an entry");

    /* device "cuda" */
    struct fnq_model *model;
    CHECK_OK(fnq_model_load(FNQ_TEST_MODEL, &model));
    struct fnq_ctx *ctx = NULL;
    const enum fnq_status st = fnq_ctx_init(model, FNQ_DEVICE_CUDA, 0, FNQ_DTYPE_DEFAULT, &ctx);
    const char *err = fnq_last_error();
    printf("device cuda (%d GPUs): %s%s%s\n", (int)fnq_cuda_device_count(),
           fnq_status_string(st), *err ? ": " : "", err);
    if (!want_cuda) {
        CHECK(st == FNQ_STATUS_UNSUPPORTED && strstr(err, "no CUDA backend"),
              "without the CUDA backend, want UNSUPPORTED 'no CUDA backend', got %s: %s",
              fnq_status_string(st), err);
        CHECK(fnq_cuda_device_count() == 0, "no CUDA backend, yet %d CUDA devices",
              (int)fnq_cuda_device_count());
    } else if (fnq_cuda_device_count() == 0) {
        CHECK(st == FNQ_STATUS_DEVICE && strstr(err, "no usable GPU"),
              "CUDA backend without a GPU: want DEVICE 'no usable GPU', got %s: %s",
              fnq_status_string(st), err);
        CHECK(!strstr(err, "no CUDA backend"), "the CUDA backend was built, yet: %s", err);
        /* the CUDA runtime's own words for a machine without a driver mislead: say what is
         * missing and what to do instead */
        CHECK(!strstr(err, "insufficient") && strstr(err, "device cpu"),
              "no GPU: want a message a user can act on, got: %s", err);
    } else {
        CHECK(st == FNQ_STATUS_OK && ctx && fnq_ctx_device(ctx) == FNQ_DEVICE_CUDA,
              "with %d GPUs, want a cuda context, got %s: %s", (int)fnq_cuda_device_count(),
              fnq_status_string(st), err);
    }
    fnq_ctx_free(ctx);

    /* device "auto" takes the GPU exactly when the backend and a device are there */
    ctx = NULL;
    CHECK_OK(fnq_ctx_init(model, FNQ_DEVICE_AUTO, 0, FNQ_DTYPE_DEFAULT, &ctx));
    const enum fnq_device want_auto = want_cuda && fnq_cuda_device_count() > 0
                                          ? FNQ_DEVICE_CUDA : FNQ_DEVICE_CPU;
    CHECK(fnq_ctx_device(ctx) == want_auto, "device auto chose %s, want %s",
          fnq_device_name(fnq_ctx_device(ctx)), fnq_device_name(want_auto));
    fnq_ctx_free(ctx);
    fnq_model_free(model);

    if (!fnq_test_failures)
        printf("backend registry: all checks passed\n");
    return fnq_test_failures ? 1 : 0;
}
