/*
 * fuzz_common.h: what the fuzz harnesses (fuzz_nqx.c, fuzz_fnqm.c, fuzz_xyz.c) share.
 *
 *  - The input as a file with a fixed name (fuzz_input_file): the readers take paths or FILE
 *    streams, and the name is what every error message must contain.
 *  - The checks every input must pass besides "no crash, no hang, no leak" (which libFuzzer,
 *    AddressSanitizer, UndefinedBehaviorSanitizer and LeakSanitizer check): a failure comes
 *    with a message naming the file (fuzz_check_message), and no allocation is larger than
 *    the input justifies (fuzz_alloc_begin / fuzz_alloc_end). Under AddressSanitizer the
 *    allocator's hooks see every malloc and free during the call; one block above
 *    FUZZ_ALLOC_ONE(size), or more live memory at once than FUZZ_ALLOC_LIVE(size), stops the
 *    run with the allocation's stack. The bounds are linear in the input size with a constant
 *    floor (fixed-size structures: a model's 64 layers, a line buffer), so a size or count that
 *    a file declares but does not back with bytes is a finding, whatever its magnitude.
 *    The bound is the loaders': a model's evaluation (fuzz_model.h) runs outside it
 *    (fuzz_alloc_pause). Without AddressSanitizer (the replay programs of a plain build) there
 *    are no hooks and these checks are skipped.
 */
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_ALLOC_ONE(n) (((size_t)1 << 20) + 16 * (size_t)(n))
#define FUZZ_ALLOC_LIVE(n) (((size_t)64 << 20) + 64 * (size_t)(n))

/* ---- the input as a file ---- */

static char fuzz_dir[256];

static void fuzz_remove_dir(void)
{
    if (fuzz_dir[0])
        rmdir(fuzz_dir);
}

/* Write the input to <private temp dir>/<name> and return that path (the same each call). */
static const char *fuzz_input_file(const uint8_t *data, size_t size, const char *name)
{
    static char path[512];
    if (!fuzz_dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/fnq-fuzz-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
        if (!mkdtemp(fuzz_dir)) {
            perror("fuzz: mkdtemp");
            abort();
        }
        atexit(fuzz_remove_dir);
    }
    snprintf(path, sizeof(path), "%s/%s", fuzz_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror("fuzz: writing the input file");
        abort();
    }
    return path;
}

static void fuzz_remove_file(const char *path) { unlink(path); }

/* ---- every failure names the file ---- */

static void fuzz_check_message(const char *message, const char *name)
{
    if (!message || !message[0]) {
        fprintf(stderr, "fuzz: FINDING: an input was refused without a message\n");
        abort();
    }
    if (!strstr(message, name)) {
        fprintf(stderr, "fuzz: FINDING: the message does not name the file '%s': %s\n", name,
                message);
        abort();
    }
}

/* ---- allocations bounded by the input size ---- */

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_HAVE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_HAVE_ASAN 1
#endif

#ifdef FUZZ_HAVE_ASAN
/* compiler-rt's allocator interface (sanitizer/allocator_interface.h; GCC does not ship the
 * header, its libasan has the functions) */
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *));
size_t __sanitizer_get_allocated_size(const volatile void *p);
void __sanitizer_print_stack_trace(void);

static volatile int fuzz_armed;
static size_t fuzz_one_limit, fuzz_live_limit;
static long long fuzz_live, fuzz_peak;

static void fuzz_report(const char *what, size_t bytes, size_t limit)
{
    fuzz_armed = 0; /* no further checks while we report */
    char msg[256];
    int n = snprintf(msg, sizeof(msg),
                     "fuzz: FINDING: %s of %zu bytes, over the %zu that this input of its size "
                     "justifies\n",
                     what, bytes, limit);
    if (write(2, msg, (size_t)n) < 0) {
    }
    __sanitizer_print_stack_trace();
    abort();
}

static void fuzz_malloc_hook(const volatile void *p, size_t size)
{
    (void)p;
    if (!fuzz_armed)
        return;
    if (size > fuzz_one_limit)
        fuzz_report("one allocation", size, fuzz_one_limit);
    fuzz_live += (long long)size;
    if (fuzz_live > fuzz_peak)
        fuzz_peak = fuzz_live;
    if (fuzz_peak > (long long)fuzz_live_limit)
        fuzz_report("live memory", (size_t)fuzz_peak, fuzz_live_limit);
}

static void fuzz_free_hook(const volatile void *p)
{
    if (fuzz_armed && p)
        fuzz_live -= (long long)__sanitizer_get_allocated_size(p);
}

static void fuzz_alloc_begin(size_t input_size)
{
    static int installed;
    if (!installed) {
        __sanitizer_install_malloc_and_free_hooks(fuzz_malloc_hook, fuzz_free_hook);
        installed = 1;
    }
    fuzz_one_limit = FUZZ_ALLOC_ONE(input_size);
    fuzz_live_limit = FUZZ_ALLOC_LIVE(input_size);
    fuzz_live = fuzz_peak = 0;
    fuzz_armed = 1;
}

static void fuzz_alloc_end(void) { fuzz_armed = 0; }

/* Outside the bound: evaluating a model needs memory per atom and per feature, not per byte
 * of its file (libFuzzer's -rss_limit_mb and -malloc_limit_mb still apply). Blocks allocated
 * while paused and freed after are not counted either way. */
static long long fuzz_paused_live;
static void fuzz_alloc_pause(void)
{
    fuzz_paused_live = fuzz_live;
    fuzz_armed = 0;
}
static void fuzz_alloc_resume(void)
{
    fuzz_live = fuzz_paused_live;
    fuzz_armed = 1;
}
#else
static void fuzz_alloc_begin(size_t input_size) { (void)input_size; }
static void fuzz_alloc_end(void) {}
static void fuzz_alloc_pause(void) {}
static void fuzz_alloc_resume(void) {}
#endif
