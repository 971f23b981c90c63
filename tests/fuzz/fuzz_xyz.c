/*
 * fuzz_xyz.c: libFuzzer harness of the extended-XYZ reader of the command-line tool
 * (cli/xyz.c): the input is a whole structure file, read frame by frame as `fusednequip eval`
 * does until the end or the first error. Seeds: the structures in tests/data, examples/ and
 * tests/fixtures/nequip (scripts/test-fuzz.sh collects them). Besides what fuzz_common.h
 * checks, every frame read must hold what it declares (symbols NUL-terminated, finite or
 * not, positions present). Build and run: scripts/test-fuzz.sh.
 */
#include "fuzz_common.h"
#include "xyz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char name[] = "fuzz-input.xyz";
    const char *path = fuzz_input_file(data, size, name);
    fuzz_alloc_begin(size);
    FILE *f = fopen(path, "r");
    if (!f)
        abort();
    int64_t line = 0;
    struct xyz_frame fr;
    char err[1024];
    int got;
    volatile double sink = 0;
    while ((got = xyz_read_frame(f, path, &line, &fr, err, sizeof(err))) == 1) {
        for (int64_t i = 0; i < fr.n_atoms; i++) {
            if (memchr(fr.symbols[i], 0, sizeof(fr.symbols[i])) == NULL)
                abort();
            sink += fr.positions[3 * i] + fr.positions[3 * i + 1] + fr.positions[3 * i + 2];
        }
        xyz_frame_free(&fr);
    }
    (void)sink;
    if (got < 0)
        fuzz_check_message(err, name);
    fclose(f);
    fuzz_alloc_end();
    fuzz_remove_file(path);
    return 0;
}
