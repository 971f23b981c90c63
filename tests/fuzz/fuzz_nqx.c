/*
 * fuzz_nqx.c: libFuzzer harness of the Nequix .nqx reader (core/src/model/model_load.c, nqx_load.c,
 * loader.c, npy.c): the input is a whole .nqx file (a JSON config line, then the model's .npy
 * leaves in equinox order). Seeds: tests/fuzz/seeds/nqx (small synthetic models made by
 * tests/fuzz/make_nqx_seeds.py) and, at run time, the real models in the model directory
 * (scripts/test-fuzz.sh). The input may be any bytes; everything that fuzz_model.h checks must
 * hold. Build and run: scripts/test-fuzz.sh.
 */
#include "fuzz_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_model_bytes(data, size, "fuzz-input.nqx");
    return 0;
}
