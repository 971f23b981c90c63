/*
 * test_gemm_3xtf32.cu: the Allegro engine's tensor-core GEMM (kernels/gemm/gemm_3xtf32.cuh) against
 * a double-precision reference. Skipped without a GPU, on GPUs other than compute capability
 * 9.0, and in builds without architecture 90 (the engine then uses cuBLAS):
 *   - shapes with tails everywhere (rows not a multiple of 128, k not of 32, n not of 128),
 *     leading dimensions wider than the matrices, C written and C added to, more tiles than
 *     a GPU has multiprocessors (several waves of blocks): the largest error
 *     below 2e-6 of C's largest value, the mean error toward zero (the tensor core's
 *     accumulation truncates) below 1e-6 of C's mean magnitude, the columns beyond n untouched;
 *   - the same call twice gives the same bits, and so do the calls given A's lo, Bt's lo or
 *     both from memory (made on the host: x less its top 19 bits, rounded to TF32);
 *   - operands the TMA cannot take (a pointer not 16-byte aligned, a leading dimension not a
 *     multiple of 4) launch nothing and say so (done false), C untouched.
 */
#include <cuda_runtime.h>

#include <vector>

#include "fnq_test.h"
#include "gemm/gemm_3xtf32.cuh"

/* gemm_3xtf32 returns a CUDA error (it stands alone, without the library's error state) */
#define CHECK_CUDA(expr)                                                                         \
    do {                                                                                        \
        cudaError_t err_ = (expr);                                                              \
        CHECK(err_ == cudaSuccess, "%s: %s", #expr, cudaGetErrorString(err_));                  \
    } while (0)

namespace {

struct Shape {
    int rows, n, k, lda, ldb, ldc;
    bool add;
};

/* a deterministic value in [lo, hi) */
double uniform(uint64_t *state, double lo, double hi)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (double)(*state >> 11) / (double)(1ull << 53);
}

template <typename T> T *to_device(const std::vector<T> &h)
{
    T *d = nullptr;
    if (cudaMalloc(&d, sizeof(T) * h.size()) != cudaSuccess ||
        cudaMemcpy(d, h.data(), sizeof(T) * h.size(), cudaMemcpyHostToDevice) != cudaSuccess) {
        fprintf(stderr, "FAIL: device memory for %zu values\n", h.size());
        exit(1);
    }
    return d;
}

/* gemm_3xtf32's lo of x on the host: x less its top 19 bits (exact), rounded to TF32 to
 * nearest, ties away from zero (PTX cvt.rna) */
float lo_part(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    u &= 0xffffe000u;
    float top, rest;
    memcpy(&top, &u, 4);
    rest = x - top;
    memcpy(&u, &rest, 4);
    u = (u + 0x1000u) & 0xffffe000u;
    memcpy(&rest, &u, 4);
    return rest;
}

std::vector<float> lo_of(const std::vector<float> &x)
{
    std::vector<float> lo(x.size());
    for (size_t i = 0; i < x.size(); i++)
        lo[i] = lo_part(x[i]);
    return lo;
}

std::vector<float> from_device(const float *d, size_t count)
{
    std::vector<float> h(count);
    if (cudaMemcpy(h.data(), d, sizeof(float) * count, cudaMemcpyDeviceToHost) != cudaSuccess) {
        fprintf(stderr, "FAIL: copy back: %s\n", cudaGetErrorString(cudaGetLastError()));
        exit(1);
    }
    return h;
}

/* one shape: activations ~ an MLP's (mixed signs, mostly positive), weights ~ 1/sqrt(k) */
void check_shape(const Shape &s)
{
    uint64_t state = 12345 + (uint64_t)s.rows * 7 + (uint64_t)s.k;
    std::vector<float> A((size_t)s.rows * s.lda), Bt((size_t)s.n * s.ldb);
    std::vector<float> C0((size_t)s.rows * s.ldc);
    for (float &v : A)
        v = (float)uniform(&state, -0.5, 1.5);
    for (float &v : Bt)
        v = (float)uniform(&state, -1, 1) / sqrtf((float)s.k);
    for (float &v : C0)
        v = (float)uniform(&state, -1, 1);
    float *dA = to_device(A), *dB = to_device(Bt), *dC = to_device(C0);
    bool done = false;
    CHECK_CUDA(fnqcu::gemm_3xtf32(nullptr, s.rows, s.n, s.k, dA, nullptr, s.lda, dB, nullptr,
                                  s.ldb, s.add, dC, s.ldc, &done));
    CHECK(done, "rows %d n %d k %d: not launched", s.rows, s.n, s.k);
    const std::vector<float> C = from_device(dC, C0.size());
    double worst = 0, scale = 0, toward_zero = 0, magnitude = 0;
    int outside_changed = 0;
    for (int r = 0; r < s.rows; r++) {
        for (int c = 0; c < s.n; c++) {
            double ref = s.add ? C0[(size_t)r * s.ldc + c] : 0;
            double prod = 0;
            for (int q = 0; q < s.k; q++)
                prod += (double)A[(size_t)r * s.lda + q] * Bt[(size_t)c * s.ldb + q];
            ref += prod;
            const double e = C[(size_t)r * s.ldc + c] - ref;
            worst = fmax(worst, fabs(e));
            scale = fmax(scale, fabs(ref));
            toward_zero += ref < 0 ? e : -e, magnitude += fabs(ref);
        }
        for (int c = s.n; c < s.ldc; c++)
            outside_changed += C[(size_t)r * s.ldc + c] != C0[(size_t)r * s.ldc + c];
    }
    printf("rows %d n %d k %d (ld %d %d %d)%s: largest error %.2e, shrink %.2e\n", s.rows, s.n,
           s.k, s.lda, s.ldb, s.ldc, s.add ? ", added" : "", worst / scale,
           toward_zero / magnitude);
    CHECK(worst <= 2e-6 * scale, "rows %d n %d k %d: largest error %.3e of %.3e", s.rows, s.n,
          s.k, worst, scale);
    CHECK(fabs(toward_zero) <= 1e-6 * magnitude, "rows %d n %d k %d: shrink %.3e", s.rows, s.n,
          s.k, toward_zero / magnitude);
    CHECK(outside_changed == 0, "rows %d n %d k %d: %d values beyond column n written", s.rows,
          s.n, s.k, outside_changed);

    /* the same call again, and with lo from memory: the same bits */
    float *dAlo = to_device(lo_of(A)), *dBlo = to_device(lo_of(Bt));
    const struct {
        const char *what;
        const float *a_lo, *b_lo;
    } again_cases[] = {{"again", nullptr, nullptr},
                       {"A's lo from memory", dAlo, nullptr},
                       {"Bt's lo from memory", nullptr, dBlo},
                       {"both lo from memory", dAlo, dBlo}};
    for (const auto &a : again_cases) {
        if (cudaMemcpy(dC, C0.data(), sizeof(float) * C0.size(), cudaMemcpyHostToDevice) !=
            cudaSuccess)
            exit(1);
        CHECK_CUDA(fnqcu::gemm_3xtf32(nullptr, s.rows, s.n, s.k, dA, a.a_lo, s.lda, dB, a.b_lo,
                                      s.ldb, s.add, dC, s.ldc, &done));
        const std::vector<float> again = from_device(dC, C0.size());
        CHECK(done && memcmp(again.data(), C.data(), sizeof(float) * C.size()) == 0,
              "rows %d n %d k %d: %s differs", s.rows, s.n, s.k, a.what);
    }

    cudaFree(dA), cudaFree(dB), cudaFree(dC), cudaFree(dAlo), cudaFree(dBlo);
}

/* operands the TMA cannot take: nothing launched, C as it was */
void check_refused()
{
    std::vector<float> A(64 * 68, 1.0f), Bt(64 * 68, 1.0f), C0(64 * 64, 7.0f);
    float *dA = to_device(A), *dB = to_device(Bt), *dC = to_device(C0);
    const struct {
        const char *what;
        const float *a, *a_lo;
        int lda;
    } cases[] = {{"A one float past 16-byte alignment", dA + 1, nullptr, 64},
                 {"A's lo one float past 16-byte alignment", dA, dA + 1, 64},
                 {"a leading dimension of 66", dA, nullptr, 66}};
    for (const auto &c : cases) {
        bool done = true;
        CHECK_CUDA(fnqcu::gemm_3xtf32(nullptr, 60, 64, 60, c.a, c.a_lo, c.lda, dB, nullptr, 64,
                                      false, dC, 64, &done));
        CHECK(!done, "%s: launched", c.what);
    }
    CHECK(cudaDeviceSynchronize() == cudaSuccess, "%s", cudaGetErrorString(cudaGetLastError()));
    const std::vector<float> C = from_device(dC, C0.size());
    CHECK(memcmp(C.data(), C0.data(), sizeof(float) * C.size()) == 0, "C written by a refusal");
    cudaFree(dA), cudaFree(dB), cudaFree(dC);
}

} // namespace

int main(void)
{
    test_require_gpu();
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
    if (!fnqcu::gemm_3xtf32_available()) {
        printf("SKIP: gemm_3xtf32 needs a GPU of compute capability 9.0 (this one: %d.%d) and a "
               "build for architecture 90\n",
               major, minor);
        return 77;
    }
    const Shape shapes[] = {
        {1000, 130, 70, 72, 76, 136, false},   /* every tail, leading dimensions wider */
        {1000, 130, 70, 72, 76, 136, true},    /* C added to */
        {37, 16, 8, 8, 8, 16, false},          /* smaller than one tile */
        {4100, 256, 576, 576, 576, 256, true}, /* the engine's latent widths */
        {30000, 260, 40, 40, 40, 260, true},   /* 705 tiles: several waves of blocks */
    };
    for (const Shape &s : shapes)
        check_shape(s);
    check_refused();
    if (fnq_test_failures)
        printf("%d check(s) failed\n", fnq_test_failures);
    return fnq_test_failures ? 1 : 0;
}
