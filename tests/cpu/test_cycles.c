/*
 * test_cycles.c: many create / evaluate / free cycles of models and contexts in one process
 * leave no growth in memory (the reliability issue: 1,000 cycles, CPU and GPU, none growing,
 * none leaking under the sanitizer).
 *
 * One cycle, through the public API only:
 *   - a load that fails (a missing file: the error path);
 *   - nequix-mp-1 (.nqx) loaded, a context made, and on it: the 2-atom diamond Si cell through
 *     the library's own neighbour list (fnq_ctx_compute_periodic), a caller's pair list
 *     (fnq_ctx_compute_graph, a 4-atom Si cluster), fnq_ctx_compute_graph_repeat (the kept
 *     pairs, new positions) and one call that fails (two atoms 0.05 A apart: the message and
 *     fnq_last_error_atoms);
 *   - a converted NequIP test model (.fnqm, tests/fixtures/nequip) loaded, a context made, one
 *     evaluation of the 2-atom cell;
 *   - every context and model freed.
 * Every cycle's energies must equal the first cycle's to the bit (a reused or freed buffer that
 * leaked into a result would show), and the failing calls must fail with their messages.
 *
 * Memory, after `warmup` cycles (allocator pools, OpenMP threads and, on the GPU, the CUDA
 * runtime have settled by then), halfway and at the end, each time after malloc_trim (glibc:
 * freed pages go back to the system, so what stays resident is what is held):
 *   - the resident set (/proc/self/statm): bound 512 kB (--max-rss-kb). A cycle allocates and
 *     frees ~8 MB (the model's arrays, the context's buffers), so leaking any of those shows
 *     at once (GBs over 1,000 cycles); 512 kB is ~500 bytes per cycle at 1,000 cycles, room
 *     for pages the allocator keeps for its own reasons (without the trim the resident set
 *     moved by up to 16 MB between measurements with one thread; with it, by under 60 kB).
 *     Smaller leaks are the next two checks' business;
 *   - the heap in use (glibc's mallinfo2, every arena): bound 8 kB + 16 bytes per cycle, i.e.
 *     less than one allocation per cycle (glibc's smallest chunk is 32 bytes). glibc's
 *     per-thread caches count as in use and fill over hundreds of cycles (+43 kB over 1,000
 *     cycles, saturating), so this bound applies when they are off, as CTest runs the test
 *     (GLIBC_TUNABLES=glibc.malloc.tcache_count=0; then the growth measured is 0 bytes);
 *   - LeakSanitizer, exactly, at exit (scripts/test-sanitize.sh runs the test with few cycles;
 *     under AddressSanitizer the two bounds above are reported but not checked: its
 *     quarantine keeps 256 MB of freed memory and it replaces the allocator);
 *   - on the GPU, device memory in use (cudaMemGetInfo: total - free; builds with the CUDA
 *     runtime linked, i.e. the gpu_cycles test): bound 4 MB (two of the driver's 2 MB pages):
 *     every context's buffers (MBs), its model upload, stream and CUDA graph must come back.
 * The growth per cycle is printed in each case; FNQ_TEST_CYCLES_TRACE=1 prints the three
 * figures every tenth of the run.
 *
 *   test_cycles [--cycles N] [--warmup N] [--device cpu|cuda] [--dtype float32|float64]
 *               [--max-rss-kb K]
 * FNQ_TEST_CYCLES=N or N,W in the environment overrides --cycles (and --warmup): the
 * sanitizer run takes 4,1.
 * --device cuda exits 77 (skipped) when this build has no CUDA backend or the machine no GPU;
 * a GPU that refuses a context fails the test.
 */
#define _GNU_SOURCE /* mallinfo2, clock_gettime, sysconf */
#include "fnq_test.h"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h>
#define HAVE_MALLINFO2 1
#endif
#ifdef FNQ_TEST_CUDART
#include <cuda_runtime_api.h>
#endif

/* AddressSanitizer keeps freed memory in quarantine (256 MB) and replaces malloc: the resident
 * set and mallinfo2 say nothing there; LeakSanitizer checks at exit instead */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

#ifndef FNQ_TEST_FNQM
#define FNQ_TEST_FNQM "tests/fixtures/nequip/classic_l2_parity_resnet_3sp.fnqm"
#endif

struct mem {
    double rss_kb;    /* resident set */
    double heap_kb;   /* allocator bytes in use (glibc), -1 if unknown */
    double device_mb; /* device memory in use, -1 if unknown */
};

static double rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = 0;
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024.0);
}

static struct mem measure(int on_gpu)
{
#ifdef HAVE_MALLINFO2
    malloc_trim(0); /* freed pages back to the system: the resident set then holds what is used */
#endif
    struct mem m = {rss_kb(), -1, -1};
#ifdef HAVE_MALLINFO2
    struct mallinfo2 mi = mallinfo2();
    m.heap_kb = (mi.uordblks + mi.hblkhd) / 1024.0;
#endif
#ifdef FNQ_TEST_CUDART
    if (on_gpu) {
        size_t free_b = 0, total_b = 0;
        if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
            m.device_mb = (total_b - free_b) / 1e6;
    }
#else
    (void)on_gpu;
#endif
    return m;
}

static double cpu_seconds(void) /* this process, all threads, user + system */
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* the results of one cycle, compared to the first cycle's */
struct energies {
    double e[5];
};

struct setup {
    enum fnq_device device;
    enum fnq_dtype dtype;
    const char *fnqm;
};

static const double cell2[9] = {0, 2.715, 2.715, 2.715, 0, 2.715, 2.715, 2.715, 0};
static const int32_t pbc3[3] = {1, 1, 1};

/* a 4-atom piece of the diamond lattice (no periodicity), given with every pair of it */
static const double cluster[4][3] = {
    {0, 0, 0}, {1.3575, 1.3575, 1.3575}, {0, 2.715, 2.715}, {2.715, 0, 2.715}};

static int one_cycle(const struct setup *s, struct energies *out)
{
    /* the error path of a load */
    struct fnq_model *missing = NULL;
    enum fnq_status st = fnq_model_load("/nonexistent/fnq-test-cycles.nqx", &missing);
    CHECK(st == FNQ_STATUS_IO && missing == NULL && strstr(fnq_last_error(), "fnq-test-cycles"),
          "a missing model file: status %d, message '%s'", (int)st, fnq_last_error());

    struct fnq_model *m;
    CHECK_OK(fnq_model_load("nequix-mp-1", &m));
    struct fnq_ctx *c;
    /* main has skipped where there is no GPU: a context refused here is a failure */
    CHECK_OK(fnq_ctx_init(m, s->device, 0, s->dtype, &c));
    const int32_t si = fnq_model_species_index(m, "Si");
    int32_t sp[4];
    for (int i = 0; i < 4; i++)
        sp[i] = si;

    /* the library's own neighbour list */
    double pos2[6] = {0, 0, 0, 1.3575, 1.3575, 1.3575}, f2[6], ea2[2], v[6];
    CHECK_OK(fnq_ctx_compute_periodic(c, 2, pos2, sp, cell2, pbc3, &out->e[0], ea2, f2, v));

    /* a caller's pair list (every pair of the cluster), then the kept pairs with new positions */
    int64_t recv[12], send[12], ne = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            if (i != j)
                recv[ne] = i, send[ne] = j, ne++;
    double x4[12], f4[12], ea4[4], va4[24];
    memcpy(x4, cluster, sizeof(x4));
    CHECK_OK(fnq_ctx_compute_graph(c, 4, 4, x4, sp, ne, recv, send, NULL, NULL, &out->e[1], ea4,
                                   f4, v, va4));
    x4[0] += 0.04, x4[5] -= 0.02;
    CHECK_OK(fnq_ctx_compute_graph_repeat(c, x4, &out->e[2], ea4, f4, v, va4));

    /* a failing evaluation: two atoms 0.05 A apart */
    double bad[6] = {0, 0, 0, 0.05, 0, 0};
    double e_bad;
    st = fnq_ctx_compute_periodic(c, 2, bad, sp, cell2, pbc3, &e_bad, NULL, f2, NULL);
    out->e[3] = (double)st;
    int64_t atoms[2] = {-1, -1};
    const int32_t named = fnq_last_error_atoms(atoms, 2);
    CHECK(st == FNQ_STATUS_INVALID_ARG && named == 2 && atoms[0] + atoms[1] == 1,
          "atoms too close: status %d, %d atoms named, message '%s'", (int)st, named,
          fnq_last_error());
    fnq_ctx_free(c);
    fnq_model_free(m);

    /* a converted NequIP model (.fnqm), its first species on the 2-atom cell */
    CHECK_OK(fnq_model_load(s->fnqm, &m));
    CHECK_OK(fnq_ctx_init(m, s->device, 0, s->dtype, &c));
    sp[0] = sp[1] = 0;
    CHECK_OK(fnq_ctx_compute_periodic(c, 2, pos2, sp, cell2, pbc3, &out->e[4], ea2, f2, v));
    fnq_ctx_free(c);
    fnq_model_free(m);
    return 0;
}

static long arg_long(const char *name, const char *value)
{
    char *end;
    long v = value ? strtol(value, &end, 10) : -1;
    if (!value || *end || v < 0) {
        fprintf(stderr, "test_cycles: %s needs a non-negative integer\n", name);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    long cycles = 1000, warmup = 20;
    double max_rss_kb = 512, max_device_mb = 4;
    struct setup s = {FNQ_DEVICE_CPU, FNQ_DTYPE_DEFAULT, FNQ_TEST_FNQM};
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--cycles"))
            cycles = arg_long(argv[i], v), i++;
        else if (!strcmp(argv[i], "--warmup"))
            warmup = arg_long(argv[i], v), i++;
        else if (!strcmp(argv[i], "--max-rss-kb"))
            max_rss_kb = (double)arg_long(argv[i], v), i++;
        else if (!strcmp(argv[i], "--device") && v)
            s.device = !strcmp(v, "cuda") ? FNQ_DEVICE_CUDA : FNQ_DEVICE_CPU, i++;
        else if (!strcmp(argv[i], "--dtype") && v)
            s.dtype = !strcmp(v, "float32") ? FNQ_DTYPE_F32 : FNQ_DTYPE_F64, i++;
        else {
            fprintf(stderr, "usage: %s [--cycles N] [--warmup N] [--device cpu|cuda] "
                            "[--dtype float32|float64] [--max-rss-kb K]\n", argv[0]);
            return 2;
        }
    }
    const char *env = getenv("FNQ_TEST_CYCLES"); /* N or N,W */
    if (env && *env) {
        char buf[64];
        snprintf(buf, sizeof(buf), "%s", env);
        char *comma = strchr(buf, ',');
        if (comma)
            *comma = 0, warmup = arg_long("FNQ_TEST_CYCLES (warm-up)", comma + 1);
        cycles = arg_long("FNQ_TEST_CYCLES", buf);
    }
    if (cycles < 2) {
        fprintf(stderr, "test_cycles: at least 2 cycles after the warm-up\n");
        return 2;
    }
    const int gpu = s.device == FNQ_DEVICE_CUDA;
    if (gpu)
        test_require_gpu();
    /* skip (77), as other tests do, when the model is not there */
    fnq_model_free(test_load_model("nequix-mp-1"));
    /* glibc's per-thread caches (tcache) hold up to 7 freed chunks per size class and count
     * as in use: they fill over hundreds of cycles (~40 kB here), so the heap bound applies
     * with them off (CTest sets GLIBC_TUNABLES=glibc.malloc.tcache_count=0) */
    const char *tunables = getenv("GLIBC_TUNABLES");
    const int tcache_off = tunables && strstr(tunables, "tcache_count=0");
    const long trace = getenv("FNQ_TEST_CYCLES_TRACE") ? (cycles >= 10 ? cycles / 10 : 1) : 0;
    printf("test_cycles: %ld warm-up cycles, then %ld measured, device %s\n", warmup, cycles,
           gpu ? "cuda" : "cpu");
    fflush(stdout); /* stdout's buffer exists before the first measurement */

    struct energies first, e;
    const double t0 = now();
    one_cycle(&s, &first);
    /* the measurement itself once before its first figure: cudaMemGetInfo's first call keeps
     * ~70 kB of heap (measured on the H100: the whole growth of 1,000 cycles, all of it between
     * the first and the second figure) */
    (void)measure(gpu);
    for (long k = 1; k < warmup; k++)
        one_cycle(&s, &e);
    const struct mem base = measure(gpu);
    const double t1 = now(), c1 = cpu_seconds();
    struct mem mid = base;
    long mismatch = 0, done = 0;
    for (long k = 0; k < cycles; k++, done++) {
        one_cycle(&s, &e);
        if (memcmp(&e, &first, sizeof(e)) != 0 && mismatch++ == 0)
            for (int q = 0; q < 5; q++)
                fprintf(stderr, "cycle %ld: energy %d = %.17g, first cycle %.17g\n",
                        warmup + k, q, e.e[q], first.e[q]);
        if (k == cycles / 2 - 1)
            mid = measure(gpu);
        if (trace && (k + 1) % trace == 0) {
            struct mem t = measure(gpu);
            printf("  after cycle %ld: resident %.0f kB, heap in use %.1f kB, device %.1f MB\n",
                   warmup + k + 1, t.rss_kb, t.heap_kb, t.device_mb);
        }
        if (fnq_test_failures > 10) /* something is broken every cycle: stop early */
            break;
    }
    const struct mem end = measure(gpu);
    const double t2 = now(), c2 = cpu_seconds();
    CHECK(mismatch == 0, "%ld of %ld cycles gave energies different from the first cycle's",
          mismatch, cycles);

    const double n = (double)(done > 0 ? done : 1);
    printf("%ld cycles (after %ld warm-up), device %s, dtype %s: %.1f ms per cycle, %.1f ms of "
           "CPU time (warm-up cycles %.1f ms)\n",
           done, warmup, gpu ? "cuda" : "cpu", fnq_dtype_name(s.dtype), 1e3 * (t2 - t1) / n,
           1e3 * (c2 - c1) / n, 1e3 * (t1 - t0) / (double)(warmup > 0 ? warmup : 1));
    printf("resident set: %.0f kB after the warm-up, %.0f kB halfway, %.0f kB at the end: "
           "%+.0f kB, second half %+.0f kB (%+.1f bytes per cycle; bound %.0f kB%s)\n",
           base.rss_kb, mid.rss_kb, end.rss_kb, end.rss_kb - base.rss_kb,
           end.rss_kb - mid.rss_kb, 1024 * (end.rss_kb - base.rss_kb) / n, max_rss_kb,
           UNDER_ASAN ? ", not checked under AddressSanitizer" : "");
    if (!UNDER_ASAN)
        CHECK(end.rss_kb - base.rss_kb <= max_rss_kb,
              "the resident set grew by %.0f kB over %ld cycles (bound %.0f kB)",
              end.rss_kb - base.rss_kb, done, max_rss_kb);
    if (base.heap_kb >= 0 && !UNDER_ASAN) {
        const int checked = tcache_off;
        /* less than one allocation per cycle (glibc's smallest chunk: 32 bytes), plus slack */
        const double max_heap_kb = 8 + 16.0 * (double)done / 1024;
        printf("heap in use (mallinfo2): %.1f kB, %.1f kB, %.1f kB: %+.1f kB, second half "
               "%+.1f kB (%+.1f bytes per cycle; bound %.1f kB%s)\n",
               base.heap_kb, mid.heap_kb, end.heap_kb, end.heap_kb - base.heap_kb,
               end.heap_kb - mid.heap_kb, 1024 * (end.heap_kb - base.heap_kb) / n,
               max_heap_kb,
               checked ? "" : ", not checked: glibc's tcache is on (GLIBC_TUNABLES=glibc.malloc."
                              "tcache_count=0 turns it off)");
        if (checked)
            CHECK(end.heap_kb - base.heap_kb <= max_heap_kb,
                  "heap in use grew by %.1f kB over %ld cycles (bound %.1f kB)",
                  end.heap_kb - base.heap_kb, done, max_heap_kb);
    }
    if (gpu) {
        if (base.device_mb >= 0) {
            printf("device memory in use: %.1f MB, %.1f MB, %.1f MB: %+.1f MB (bound %.0f MB)\n",
                   base.device_mb, mid.device_mb, end.device_mb, end.device_mb - base.device_mb,
                   max_device_mb);
            CHECK(end.device_mb - base.device_mb <= max_device_mb,
                  "device memory in use grew by %.1f MB over %ld cycles (bound %.0f MB)",
                  end.device_mb - base.device_mb, cycles, max_device_mb);
        } else {
            printf("device memory in use: not measured (built without the CUDA runtime)\n");
        }
    }
    return test_finish("test_cycles");
}
