/*
 * gemm_3xtf32.cu: how fast can a float32-accurate tensor-core GEMM of our own be against cuBLAS'
 * float32 (SIMT) GEMM at the Allegro engine's shapes (rows = edges, K and N = 1024 or so)? The
 * way to kernels/gemm_3xtf32.cu, the engine's GEMM on Hopper (issue 50, docs/allegro.md).
 *
 * C = A B, row-major float32. Each operand value is split into hi and lo (TF32 parts), and a run
 * of k sums lo*hi + hi*lo + hi*hi in a tensor-core accumulator started from zero, which is then
 * added to the running sum in float32: one sum over all of k loses ~5e-6 (session 46). Forms:
 *   gemm_3xtf32_presplit_kernel  mma.sync m16n8k8, block 128 x 128 x 16, 8 warps of 64 x 32;
 *                                the next stage loaded into registers during this one's
 *                                products, split once into (hi, lo) in shared memory; runs of 16
 *   gemm_3xtf32_wgmma_kernel     Hopper's warpgroup MMA (m64n128k8), A's split fragments from
 *                                registers, B (transposed, K-major) by descriptor; runs of 16
 *   gemm_3xtf32_ring_kernel      a ring of raw stages filled by cp.async three ahead, both
 *                                operands by descriptor, hi = x itself (the tensor core reads
 *                                the top 19 bits), lo made from it; runs of 32 to 256
 *   gemm_3xtf32_tma_kernel       the ring filled by TMA (128-byte swizzle, mbarriers); lo
 *                                truncated or rounded to nearest (the engine's form)
 *   gemm_3xtf32_ws_kernel        a producer warp of its own, warpgroups independent of each
 *                                other; runs of 32 or 16 (session 47: compiled, not yet run)
 * The wgmma forms need sm_90a; built for plain sm_90 they compute nothing. Also timed: cuBLAS'
 * one-pass TF32 GEMM (the tensor cores' speed, not float32's accuracy) and its BF16x9
 * emulation. Prints, per shape: ms, TFLOPS, the speed-up over cublasSgemm (pedantic float32),
 * the largest error relative to a double-precision reference on sampled rows, and the shrink
 * (a systematic error toward zero, which a network's layers compound):
 * bench/results/2026-11-28-h200-gemm-3xtf32-s46.md, 2026-11-29-h200-gemm-3xtf32-s47.md.
 * Build: nvcc -arch=sm_90a -O3 bench/gemm_3xtf32.cu -lcublas -o gemm_3xtf32; run: gemm_3xtf32
 * [rows] (default 303,742: 4,096 atoms' active edges)
 */
#include <cublas_v2.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#define CHECK(x)                                                                               \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));         \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

constexpr int BM = 128, BN = 128, BK = 16, THREADS = 256;
constexpr int A_STRIDE = BK + 4; /* floats: fragment reads conflict-free, rows 16-byte aligned */
constexpr int B_STRIDE = BN + 8;

__device__ __forceinline__ uint32_t tf32(float v)
{
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

__device__ __forceinline__ void split(float v, uint32_t &hi, uint32_t &lo)
{
    hi = tf32(v);
    lo = tf32(v - __uint_as_float(hi));
}

/* x - trunc(x) (exact), and with ROUND rounded to TF32 to nearest: left to the tensor core's
 * truncation, every lo loses ~2^-11 of itself toward zero, a bias of ~2^-22 on every operand
 * (the shrink column) */
template <bool ROUND> __device__ __forceinline__ uint32_t lo_part(uint32_t x)
{
    const float lo = __uint_as_float(x) - __uint_as_float(x & 0xFFFFE000u);
    return ROUND ? tf32(lo) : __float_as_uint(lo);
}

__device__ __forceinline__ void split4(float4 v, uint4 &hi, uint4 &lo)
{
    split(v.x, hi.x, lo.x), split(v.y, hi.y, lo.y), split(v.z, hi.z, lo.z), split(v.w, hi.w, lo.w);
}

/* d = a b + c, m16n8k8, A row-major, B column-major fragments */
__device__ __forceinline__ void mma(float d[4], const uint32_t a[4], const uint32_t b[2],
                                    const float c[4])
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                   "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

/* a warp's 64 x 32 of C from its accumulators (the m16n8 fragment layout: row g and g + 8,
 * columns 2t and 2t + 1) */
__device__ __forceinline__ void store_tile(const float (&acc)[4][4][4], float *C, int M, int N,
                                           int row0, int col0, int lane)
{
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int q = 0; q < 4; q++) {
                const int r = row0 + 16 * i + g + 8 * (q / 2), c = col0 + 8 * j + 2 * t + q % 2;
                if (r < M && c < N)
                    C[(int64_t)r * N + c] = acc[i][j][q];
            }
}

/* A's m16n8k8 fragment (rows row, row + 8; columns k + t, k + t + 4, t = lane % 4) from the
 * split copies in shared memory */
__device__ __forceinline__ void a_fragment(const uint32_t *Ah, const uint32_t *Al, int row, int k,
                                           uint32_t hi[4], uint32_t lo[4], int stride = A_STRIDE)
{
    const int at = row * stride + k, o[4] = {0, 8 * stride, 4, 8 * stride + 4};
#pragma unroll
    for (int r = 0; r < 4; r++)
        hi[r] = Ah[at + o[r]], lo[r] = Al[at + o[r]];
}

/* the register-staged forms' pipeline: stage s + 1 is loaded into registers while body(s)
 * runs on stage s in shared memory, then split and stored there */
template <typename Load, typename Store, typename Body>
__device__ __forceinline__ void run_stages(int K, Load load, Store store, Body body)
{
    const int steps = (K + BK - 1) / BK;
    load(0);
    store();
    __syncthreads();
    for (int s = 0; s < steps; s++) {
        if (s + 1 < steps)
            load((s + 1) * BK);
        body(s);
        __syncthreads();
        if (s + 1 < steps) {
            store();
            __syncthreads();
        }
    }
}

/* The mma.sync form: each value split once, as a thread moves it from its registers (loaded
 * from global memory during the previous stage's products) into shared memory as (hi, lo);
 * the fragments are read already split. The tensor-core accumulator is started afresh every
 * KG values of k (8, 16 or 32) and added to the float32 sum then. */
template <int KG>
__global__ void __launch_bounds__(THREADS)
    gemm_3xtf32_presplit_kernel(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ __align__(16) uint32_t Ah[BM * A_STRIDE], Al[BM * A_STRIDE];
    __shared__ __align__(16) uint32_t Bh[BK * B_STRIDE], Bl[BK * B_STRIDE];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int wm = (warp / 4) * 64, wn = (warp % 4) * 32;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float4 ra[2], rb[2];
    auto load = [&](int k0) {
        for (int h = 0; h < 2; h++) {
            const int q = threadIdx.x + h * THREADS;
            int r = q / (BK / 4), c = (q % (BK / 4)) * 4;
            ra[h] = m0 + r < M && k0 + c < K
                        ? *reinterpret_cast<const float4 *>(A + (int64_t)(m0 + r) * K + k0 + c)
                        : make_float4(0.f, 0.f, 0.f, 0.f);
            r = q / (BN / 4), c = (q % (BN / 4)) * 4;
            rb[h] = k0 + r < K && n0 + c < N
                        ? *reinterpret_cast<const float4 *>(B + (int64_t)(k0 + r) * N + n0 + c)
                        : make_float4(0.f, 0.f, 0.f, 0.f);
        }
    };
    auto store = [&]() {
        for (int h = 0; h < 2; h++) {
            const int q = threadIdx.x + h * THREADS;
            uint4 hi, lo;
            split4(ra[h], hi, lo);
            int at = (q / (BK / 4)) * A_STRIDE + (q % (BK / 4)) * 4;
            *reinterpret_cast<uint4 *>(Ah + at) = hi, *reinterpret_cast<uint4 *>(Al + at) = lo;
            split4(rb[h], hi, lo);
            at = (q / (BN / 4)) * B_STRIDE + (q % (BN / 4)) * 4;
            *reinterpret_cast<uint4 *>(Bh + at) = hi, *reinterpret_cast<uint4 *>(Bl + at) = lo;
        }
    };
    float acc[4][4][4] = {}, d[4][4][4] = {};
    run_stages(K, load, store, [&](int s) {
#pragma unroll
        for (int kk = 0; kk < BK; kk += 8) {
            uint32_t ah[4][4], al[4][4], bh[4][2], bl[4][2];
#pragma unroll
            for (int i = 0; i < 4; i++)
                a_fragment(Ah, Al, wm + 16 * i + g, kk + t, ah[i], al[i]);
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int at = (kk + t) * B_STRIDE + wn + 8 * j + g;
                bh[j][0] = Bh[at], bl[j][0] = Bl[at];
                bh[j][1] = Bh[at + 4 * B_STRIDE], bl[j][1] = Bl[at + 4 * B_STRIDE];
            }
            /* KG = 0: one tensor-core sum over all of k (the small products first in each
             * step), no float32 adds */
            const int k = s * BK + kk;
            constexpr int run = KG > 0 ? KG : 1;
            const bool fresh = KG > 0 && k % run == 0;
            const bool last = KG > 0 && ((k + 8) % run == 0 || k + 8 >= K);
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    if (fresh)
#pragma unroll
                        for (int q = 0; q < 4; q++)
                            d[i][j][q] = 0.f;
                    mma(d[i][j], al[i], bh[j], d[i][j]);
                    mma(d[i][j], ah[i], bl[j], d[i][j]);
                    mma(d[i][j], ah[i], bh[j], d[i][j]);
                    if (last)
#pragma unroll
                        for (int q = 0; q < 4; q++)
                            acc[i][j][q] += d[i][j][q];
                }
        }
    });
    store_tile(KG > 0 ? acc : d, C, M, N, m0 + wm, n0 + wn, lane);
}

template <int KG> static void gemm_presplit(const float *A, const float *B, float *C, int M,
                                            int N, int K)
{
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    gemm_3xtf32_presplit_kernel<KG><<<grid, THREADS>>>(A, B, C, M, N, K);
}

/* ---- The wgmma form: Hopper's warpgroup MMA (wgmma, sm_90a). A's fragments come from
 * registers (split as in the second form), B from shared memory through a descriptor: K-major,
 * as TF32 requires (B is passed transposed, N x K), in 8 x 4 core matrices of 128 bytes, no
 * swizzle. Two warpgroups of 64 x 128 each. The descriptor's two byte offsets (between core
 * matrices along K and along N) are set one way or, with SWAP, the other: the error column says
 * which the hardware means. ---- */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FNQ_WGMMA 1
#endif

/* K-major, no swizzle: the leading byte offset is between core matrices along K, the stride
 * byte offset between those along M or N (session 47: the other way round is wrong) */
__device__ __forceinline__ uint64_t smem_desc(const void *p, uint32_t k_bytes, uint32_t n_bytes)
{
    const uint32_t addr = (uint32_t)__cvta_generic_to_shared(p);
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)((k_bytes >> 4) & 0x3FFF) << 16 |
           (uint64_t)((n_bytes >> 4) & 0x3FFF) << 32; /* base offset 0, no swizzle */
}

/* d (+)= a b, m64n128k8, a: this thread's 4 TF32 values of A, b: B's descriptor */
__device__ __forceinline__ void wgmma_n128(float (&d)[64], const uint32_t a[4], uint64_t b,
                                           int accumulate)
{
#ifdef FNQ_WGMMA
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
#endif
}

__device__ __forceinline__ void wgmma_fence()
{
#ifdef FNQ_WGMMA
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}

__device__ __forceinline__ void wgmma_commit_and_wait()
{
#ifdef FNQ_WGMMA
    asm volatile("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;" ::
                     : "memory");
#endif
}

/* shared-memory writes made visible to the tensor cores' (async proxy) reads */
__device__ __forceinline__ void fence_proxy_async()
{
#ifdef FNQ_WGMMA
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

/* a warp's 16 rows of its warpgroup's m64n128 accumulator: rows g and g + 8, columns 8j + 2t
 * and 8j + 2t + 1 */
__device__ __forceinline__ void store_wgmma_tile(const float (&acc)[64], float *C, int M, int N,
                                                 int row0, int n0, int lane)
{
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int q = 0; q < 64; q++) {
        const int r = row0 + g + 8 * ((q / 2) % 2), c = n0 + 8 * (q / 4) + 2 * t + q % 2;
        if (r < M && c < N)
            C[(int64_t)r * N + c] = acc[q];
    }
}

__global__ void __launch_bounds__(THREADS)
    gemm_3xtf32_wgmma_kernel(const float *A, const float *Bt, float *C, int M, int N, int K)
{
    __shared__ __align__(128) uint32_t Ah[BM * A_STRIDE], Al[BM * A_STRIDE];
    __shared__ __align__(128) uint32_t Bh[BN * BK], Bl[BN * BK]; /* core-matrix order */
    constexpr int KB = BK / 4; /* core matrices along K in a stage */
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int row0 = (warp / 4) * 64 + (warp % 4) * 16; /* this warp's 16 of its group's 64 */
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float4 ra[2], rb[2];
    auto load = [&](int k0) {
        for (int h = 0; h < 2; h++) {
            const int q = threadIdx.x + h * THREADS, r = q / KB, c = (q % KB) * 4;
            ra[h] = m0 + r < M && k0 + c < K
                        ? *reinterpret_cast<const float4 *>(A + (int64_t)(m0 + r) * K + k0 + c)
                        : make_float4(0.f, 0.f, 0.f, 0.f);
            rb[h] = n0 + r < N && k0 + c < K
                        ? *reinterpret_cast<const float4 *>(Bt + (int64_t)(n0 + r) * K + k0 + c)
                        : make_float4(0.f, 0.f, 0.f, 0.f);
        }
    };
    auto store = [&]() {
        for (int h = 0; h < 2; h++) {
            const int q = threadIdx.x + h * THREADS, r = q / KB, c = (q % KB) * 4;
            uint4 hi, lo;
            split4(ra[h], hi, lo);
            int at = r * A_STRIDE + c;
            *reinterpret_cast<uint4 *>(Ah + at) = hi, *reinterpret_cast<uint4 *>(Al + at) = lo;
            split4(rb[h], hi, lo);
            at = ((r / 8) * KB + c / 4) * 32 + (r % 8) * 4; /* n = r, k = c .. c + 3 */
            *reinterpret_cast<uint4 *>(Bh + at) = hi, *reinterpret_cast<uint4 *>(Bl + at) = lo;
        }
        fence_proxy_async();
    };
    float d[64] = {}, acc[64] = {};
    run_stages(K, load, store, [&](int s) {
#pragma unroll
        for (int kk = 0; kk < BK; kk += 8) {
            uint32_t ah[4], al[4];
            a_fragment(Ah, Al, row0 + g, kk + t, ah, al);
            const uint64_t bh = smem_desc(Bh + (kk / 4) * 32, 128, KB * 128);
            const uint64_t bl = smem_desc(Bl + (kk / 4) * 32, 128, KB * 128);
            const int keep = kk > 0;
            wgmma_fence();
            wgmma_n128(d, al, bh, keep);
            wgmma_n128(d, ah, bl, 1);
            wgmma_n128(d, ah, bh, 1);
        }
        wgmma_commit_and_wait();
#pragma unroll
        for (int q = 0; q < 64; q++)
            acc[q] += d[q];
    });
    store_wgmma_tile(acc, C, M, N, m0 + row0, n0, lane);
}

static void gemm_wgmma(const float *A, const float *Bt, float *C, int M, int N, int K)
{
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    gemm_3xtf32_wgmma_kernel<<<grid, THREADS>>>(A, Bt, C, M, N, K);
}

/* keeps the compiler from moving reads of the accumulators across wgmma's wait */
__device__ __forceinline__ void fence_operands(float (&d)[64])
{
#pragma unroll
    for (int q = 0; q < 64; q++)
        asm volatile("" : "+f"(d[q])::"memory");
}

__device__ __forceinline__ void wgmma_commit()
{
#ifdef FNQ_WGMMA
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}

__device__ __forceinline__ void wgmma_wait_one() /* all but the newest group done */
{
#ifdef FNQ_WGMMA
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
#endif
}

__device__ __forceinline__ void wgmma_wait_all()
{
#ifdef FNQ_WGMMA
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif
}

/* ---- The ring form: a ring of raw stages filled by cp.async three stages ahead, in the
 * tensor cores' core-matrix order for A as for B (both K-major: a 16-byte copy is one core-matrix
 * row), and hi = the raw values themselves (truncation: 6e-7). Only
 * lo is computed, by each thread from the chunks it copied, into a double buffer while the
 * tensor cores work on the previous stage. A_SMEM: A through a descriptor too (no fragment
 * loads, fewer registers); otherwise A's fragments from shared memory into registers. ---- */
constexpr int RING = 4, RBK = 32, RKB = RBK / 4;
constexpr int TILE_WORDS = BM * RBK; /* A's or B's stage (BM = BN) */
constexpr int LO = 3;           /* lo's buffers */
constexpr int RING_SMEM_BYTES = (RING + LO) * 2 * TILE_WORDS * 4; /* raw ring, lo's */
constexpr int RING_CHUNKS = TILE_WORDS / 4 / THREADS; /* 16-byte chunks of A (and of B) a thread */

/* d (+)= a b, m64n128k8, both operands by descriptor */
__device__ __forceinline__ void wgmma_n128_ss(float (&d)[64], uint64_t a, uint64_t b, int accumulate)
{
#ifdef FNQ_WGMMA
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(a), "l"(b), "r"(accumulate));
#endif
}

/* chunk h of this thread: row r of the tile (a quarter-warp takes one core matrix's 8 rows, so
 * its 16-byte writes are 128 contiguous bytes) and k offset c */
__device__ __forceinline__ void ring_chunk(int h, int &r, int &c, int &at)
{
    const int q = threadIdx.x + h * THREADS;
    const int cm = q / 8; /* core matrix: (r / 8) * RKB + c / 4 */
    r = (cm / RKB) * 8 + q % 8, c = (cm % RKB) * 4, at = cm * 32 + (q % 8) * 4;
}

__device__ __forceinline__ void copy16(uint32_t *smem, const float *gmem, bool in)
{
    const uint32_t s = (uint32_t)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(gmem),
                 "r"(in ? 16 : 0));
}

template <int PRODUCTS, int PROMOTE>
__global__ void __launch_bounds__(THREADS, 1)
    gemm_3xtf32_ring_kernel(const float *A, const float *Bt, float *C, int M, int N, int K)
{
    extern __shared__ __align__(128) uint32_t smem[];
    uint32_t *raw = smem, *lo = smem + RING * 2 * TILE_WORDS; /* [slot][A, B] */
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wg = warp / 4, row0 = wg * 64 + (warp % 4) * 16;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int steps = (K + RBK - 1) / RBK;
    const int a_off = wg * 8 * RKB * 32; /* this warpgroup's 64 rows: 8 core-matrix rows */
    auto issue = [&](int s) {
        if (s < steps) {
            uint32_t *a = raw + (s % RING) * 2 * TILE_WORDS, *b = a + TILE_WORDS;
            const int k0 = s * RBK;
#pragma unroll
            for (int h = 0; h < RING_CHUNKS; h++) {
                int r, c, at;
                ring_chunk(h, r, c, at);
                const bool ka = k0 + c < K, ina = ka && m0 + r < M, inb = ka && n0 + r < N;
                copy16(a + at, ina ? A + (int64_t)(m0 + r) * K + k0 + c : A, ina);
                copy16(b + at, inb ? Bt + (int64_t)(n0 + r) * K + k0 + c : Bt, inb);
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    };
    auto make_lo = [&](int s) { /* from this thread's own chunks of stage s */
        const uint32_t *a = raw + (s % RING) * 2 * TILE_WORDS;
        uint32_t *l = lo + (s % LO) * 2 * TILE_WORDS;
#pragma unroll
        for (int h = 0; h < RING_CHUNKS; h++) {
            int r, c, at;
            ring_chunk(h, r, c, at);
#pragma unroll
            for (int ab = 0; ab < 2; ab++) {
                const uint4 x = *reinterpret_cast<const uint4 *>(a + ab * TILE_WORDS + at);
                *reinterpret_cast<uint4 *>(l + ab * TILE_WORDS + at) =
                    make_uint4(lo_part<false>(x.x), lo_part<false>(x.y), lo_part<false>(x.z),
                               lo_part<false>(x.w));
            }
        }
        fence_proxy_async();
    };
    /* stage s's products into d, issued and left running; fresh: d starts from zero */
    float d[64] = {}, acc[64] = {};
    auto products = [&](int s, bool fresh) {
        const uint32_t *ah = raw + (s % RING) * 2 * TILE_WORDS, *bh = ah + TILE_WORDS;
        const uint32_t *al = lo + (s % LO) * 2 * TILE_WORDS, *bl = al + TILE_WORDS;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < RKB / 2; kk++) {
            const int keep = kk > 0 || !fresh;
            const uint64_t dah = smem_desc(ah + a_off + 2 * kk * 32, 128, RKB * 128);
            const uint64_t dbh = smem_desc(bh + 2 * kk * 32, 128, RKB * 128);
            if (PRODUCTS == 3) {
                const uint64_t dal = smem_desc(al + a_off + 2 * kk * 32, 128, RKB * 128);
                const uint64_t dbl = smem_desc(bl + 2 * kk * 32, 128, RKB * 128);
                wgmma_n128_ss(d, dal, dbh, keep);
                wgmma_n128_ss(d, dah, dbl, 1);
                wgmma_n128_ss(d, dah, dbh, 1);
            } else {
                wgmma_n128_ss(d, dah, dbh, keep);
            }
        }
        wgmma_commit();
    };
    for (int s = 0; s < RING - 1; s++)
        issue(s);
    asm volatile("cp.async.wait_group %0;" ::"n"(RING - 2) : "memory");
    make_lo(0);
    __syncthreads();
    /* a stage: s's products issued while s - 1's may still run (the same accumulator: the
     * tensor cores chain them); s + 1's lo made meanwhile; then only s - 1's awaited, which
     * frees its slot. Every PROMOTE stages the tensor-core sum is added to acc in float32
     * (the run that keeps float32's accuracy) after waiting for all: the one bubble, once per
     * PROMOTE * 32 values of k. lo has three buffers: the other warpgroup may still read
     * s - 1's while this one writes s + 1's. */
    for (int s = 0; s < steps; s++) {
        products(s, s % PROMOTE == 0);
        if (s + 1 < steps) {
            asm volatile("cp.async.wait_group 1;" ::: "memory");
            make_lo(s + 1);
        }
        if ((s + 1) % PROMOTE == 0 || s + 1 == steps) {
            wgmma_wait_all();
            fence_operands(d);
#pragma unroll
            for (int q = 0; q < 64; q++)
                acc[q] += d[q];
        } else {
            wgmma_wait_one();
        }
        __syncthreads(); /* s - 1's slot free everywhere, s + 1's lo visible */
        issue(s + RING - 1);
    }
    store_wgmma_tile(acc, C, M, N, m0 + row0, n0, lane);
}

template <int PRODUCTS, int PROMOTE>
static void gemm_ring(const float *A, const float *Bt, float *C, int M, int N, int K)
{
    auto kernel = gemm_3xtf32_ring_kernel<PRODUCTS, PROMOTE>;
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               RING_SMEM_BYTES));
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    kernel<<<grid, THREADS, RING_SMEM_BYTES>>>(A, Bt, C, M, N, K);
}

/* ---- The TMA form: the ring filled by the tensor memory accelerator (TMA): one thread
 * issues a stage's two tiles (128 rows x 32 values, the 128-byte swizzle that wgmma reads
 * natively) and every thread waits on the stage's mbarrier; otherwise as the ring form. lo is
 * made at the same offsets as its raw values, so the swizzle does not concern it. ---- */
constexpr int TMA_STAGE_BYTES = 2 * TILE_WORDS * 4;
constexpr int TMA_SMEM_BYTES = (RING + LO) * TMA_STAGE_BYTES + 1024 + RING * 8;

__device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* K-major, 128-byte swizzle: 8 rows of 128 bytes a swizzle atom (stride byte offset 1,024) */
__device__ __forceinline__ uint64_t smem_desc_sw128(const void *p)
{
    return (uint64_t)((smem_addr(p) & 0x3FFFF) >> 4) | (uint64_t)1 << 16 |
           (uint64_t)(1024 >> 4) << 32 | (uint64_t)1 << 62;
}

__device__ __forceinline__ void tma_load(void *dst, const CUtensorMap *map, int k, int row,
                                         uint64_t *bar)
{
#ifdef FNQ_WGMMA
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_addr(dst)),
                 "l"(reinterpret_cast<uint64_t>(map)), "r"(k), "r"(row), "r"(smem_addr(bar))
                 : "memory");
#endif
}

__device__ __forceinline__ void bar_expect(uint64_t *bar, uint32_t bytes)
{
#ifdef FNQ_WGMMA
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
                 "r"(bytes)
                 : "memory");
#endif
}

__device__ __forceinline__ void bar_wait(uint64_t *bar, uint32_t parity)
{
#ifdef FNQ_WGMMA
    asm volatile("{\n.reg .pred P;\nWAIT_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 P, [%0], %1;\n"
                 "@!P bra WAIT_%=;\n}" ::"r"(smem_addr(bar)),
                 "r"(parity)
                 : "memory");
#endif
}

template <int PRODUCTS, bool ROUND>
__global__ void __launch_bounds__(THREADS, 1)
    gemm_3xtf32_tma_kernel(const __grid_constant__ CUtensorMap map_a,
                           const __grid_constant__ CUtensorMap map_b, float *C, int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    /* the 128-byte swizzle wants 1,024-byte aligned tiles */
    uint8_t *base = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    float *raw = (float *)base, *lo = raw + RING * 2 * TILE_WORDS; /* [slot][A, B] */
    uint64_t *full = (uint64_t *)(base + (RING + LO) * TMA_STAGE_BYTES);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wg = warp / 4, row0 = wg * 64 + (warp % 4) * 16;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int steps = (K + RBK - 1) / RBK;
    if (threadIdx.x == 0) {
        for (int i = 0; i < RING; i++)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(full + i)));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    auto issue = [&](int s) {
        if (threadIdx.x == 0 && s < steps) {
            float *a = raw + (s % RING) * 2 * TILE_WORDS;
            fence_proxy_async(); /* the threads' reads of the slot before TMA's writes */
            bar_expect(full + s % RING, TMA_STAGE_BYTES);
            tma_load(a, &map_a, s * RBK, m0, full + s % RING);
            tma_load(a + TILE_WORDS, &map_b, s * RBK, n0, full + s % RING);
        }
    };
    auto make_lo = [&](int s) { /* the whole stage, elementwise */
        bar_wait(full + s % RING, (s / RING) & 1);
        const uint4 *a = reinterpret_cast<const uint4 *>(raw + (s % RING) * 2 * TILE_WORDS);
        uint4 *l = reinterpret_cast<uint4 *>(lo + (s % LO) * 2 * TILE_WORDS);
#pragma unroll
        for (int h = 0; h < 2 * TILE_WORDS / 4 / THREADS; h++) {
            const int q = threadIdx.x + h * THREADS;
            const uint4 x = a[q];
            l[q] = make_uint4(lo_part<ROUND>(x.x), lo_part<ROUND>(x.y), lo_part<ROUND>(x.z),
                              lo_part<ROUND>(x.w));
        }
        fence_proxy_async();
    };
    float d[64] = {}, acc[64] = {};
    auto products = [&](int s) {
        const float *ah = raw + (s % RING) * 2 * TILE_WORDS + wg * 64 * RBK, *bh = ah - wg * 64 * RBK + TILE_WORDS;
        const float *al = lo + (s % LO) * 2 * TILE_WORDS + wg * 64 * RBK, *bl = al - wg * 64 * RBK + TILE_WORDS;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < RKB / 2; kk++) { /* 8 values of k: 32 bytes along the row */
            const uint64_t dah = smem_desc_sw128(ah + 8 * kk), dbh = smem_desc_sw128(bh + 8 * kk);
            if (PRODUCTS == 3) {
                const uint64_t dal = smem_desc_sw128(al + 8 * kk), dbl = smem_desc_sw128(bl + 8 * kk);
                wgmma_n128_ss(d, dal, dbh, kk > 0);
                wgmma_n128_ss(d, dah, dbl, 1);
                wgmma_n128_ss(d, dah, dbh, 1);
            } else {
                wgmma_n128_ss(d, dah, dbh, kk > 0);
            }
        }
        wgmma_commit();
    };
    for (int s = 0; s < RING - 1; s++)
        issue(s);
    make_lo(0);
    __syncthreads();
    for (int s = 0; s < steps; s++) { /* as the ring form, runs of 32 */
        products(s);
        if (s + 1 < steps)
            make_lo(s + 1);
        wgmma_wait_all();
        fence_operands(d);
#pragma unroll
        for (int q = 0; q < 64; q++)
            acc[q] += d[q];
        __syncthreads();
        issue(s + RING - 1);
    }
    store_wgmma_tile(acc, C, M, N, m0 + row0, n0, lane);
}

/* a row-major rows x K float32 matrix as 128 x 32 tiles with the 128-byte swizzle */
static CUtensorMap tile_map(const float *p, int rows, int K)
{
    static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
    if (!encode) {
        cudaDriverEntryPointQueryResult q;
        CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void **)&encode, 12000,
                                               cudaEnableDefault, &q));
    }
    CUtensorMap map;
    const cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)K * sizeof(float)};
    const cuuint32_t box[2] = {RBK, BM}, one[2] = {1, 1};
    if (encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)p, dims, strides, box, one,
               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
        fprintf(stderr, "cuTensorMapEncodeTiled failed\n");
        exit(1);
    }
    return map;
}

template <int PRODUCTS, bool ROUND>
static void gemm_tma(const float *A, const float *Bt, float *C, int M, int N, int K)
{
    auto kernel = gemm_3xtf32_tma_kernel<PRODUCTS, ROUND>;
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               TMA_SMEM_BYTES));
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    kernel<<<grid, THREADS, TMA_SMEM_BYTES>>>(tile_map(A, M, K), tile_map(Bt, N, K), C, M, N, K);
}

/* ---- The specialized form (written in session 47, not yet run): the TMA form with a producer
 * warp of its own and warpgroups that never wait for each other. The producer (a ninth warp)
 * refills a slot as soon as both warpgroups have released it (an "empty" mbarrier each slot,
 * two arrivals); each warpgroup makes the lo of its own 64 rows of A and of all of Bt into a
 * double buffer of its own (Bt's lo made twice: the price of independence) and synchronizes
 * only its 128 threads (a named barrier), so while one adds a run to its float32 sums or makes
 * lo, the other's products keep the tensor cores busy. RUN16: runs of 16 values of k, two a
 * stage (half the accumulation's shrink, at the cost of a wait in mid-stage). ---- */
constexpr int WS_THREADS = THREADS + 32;
constexpr int WS_LO_WORDS = 64 * RBK + TILE_WORDS; /* a warpgroup's lo: its rows of A, all of Bt */
constexpr int WS_SMEM_BYTES = RING * TMA_STAGE_BYTES + 2 * 2 * WS_LO_WORDS * 4 + 1024 + 2 * RING * 8;

__device__ __forceinline__ void bar_arrive(uint64_t *bar)
{
#ifdef FNQ_WGMMA
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
#endif
}

/* the 128 threads of warpgroup wg, and no others */
__device__ __forceinline__ void warpgroup_sync(int wg)
{
    asm volatile("bar.sync %0, 128;" ::"r"(1 + wg) : "memory");
}

template <bool RUN16>
__global__ void __launch_bounds__(WS_THREADS, 1)
    gemm_3xtf32_ws_kernel(const __grid_constant__ CUtensorMap map_a,
                          const __grid_constant__ CUtensorMap map_b, float *C, int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    uint8_t *base = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    float *raw = (float *)base; /* [slot][A, Bt] */
    float *lo_all = raw + RING * 2 * TILE_WORDS; /* [warpgroup][buffer][A rows, Bt] */
    uint64_t *full = (uint64_t *)(lo_all + 2 * 2 * WS_LO_WORDS), *empty = full + RING;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int steps = (K + RBK - 1) / RBK;
    if (threadIdx.x == 0) {
        for (int i = 0; i < RING; i++) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(full + i)));
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 2;" ::"r"(smem_addr(empty + i)));
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (warp == THREADS / 32) { /* the producer */
        if (lane == 0)
            for (int s = 0; s < steps; s++) {
                const int slot = s % RING;
                if (s >= RING) /* both warpgroups done with stage s - RING */
                    bar_wait(empty + slot, (s / RING - 1) & 1);
                float *a = raw + slot * 2 * TILE_WORDS;
                bar_expect(full + slot, TMA_STAGE_BYTES);
                tma_load(a, &map_a, s * RBK, m0, full + slot);
                tma_load(a + TILE_WORDS, &map_b, s * RBK, n0, full + slot);
            }
        return;
    }
    const int wg = warp / 4, t128 = threadIdx.x % 128;
    float *lo = lo_all + wg * 2 * WS_LO_WORDS;
    auto make_lo = [&](int s) { /* this warpgroup's rows of A and all of Bt */
        bar_wait(full + s % RING, (s / RING) & 1);
        const float *a = raw + (s % RING) * 2 * TILE_WORDS;
        const uint4 *ra = reinterpret_cast<const uint4 *>(a + wg * 64 * RBK);
        const uint4 *rb = reinterpret_cast<const uint4 *>(a + TILE_WORDS);
        uint4 *la = reinterpret_cast<uint4 *>(lo + (s % 2) * WS_LO_WORDS);
        uint4 *lb = reinterpret_cast<uint4 *>(lo + (s % 2) * WS_LO_WORDS + 64 * RBK);
        auto split = [](uint4 x) {
            return make_uint4(lo_part<true>(x.x), lo_part<true>(x.y), lo_part<true>(x.z),
                              lo_part<true>(x.w));
        };
#pragma unroll
        for (int h = 0; h < 64 * RBK / 4 / 128; h++)
            la[t128 + h * 128] = split(ra[t128 + h * 128]);
#pragma unroll
        for (int h = 0; h < TILE_WORDS / 4 / 128; h++)
            lb[t128 + h * 128] = split(rb[t128 + h * 128]);
        fence_proxy_async();
    };
    float d[64] = {}, acc[64] = {};
    /* k-steps [k0, k1) of stage s, issued and committed */
    auto products = [&](int s, int k0, int k1) {
        const float *ah = raw + (s % RING) * 2 * TILE_WORDS + wg * 64 * RBK;
        const float *bh = raw + (s % RING) * 2 * TILE_WORDS + TILE_WORDS;
        const float *al = lo + (s % 2) * WS_LO_WORDS, *bl = al + 64 * RBK;
        wgmma_fence();
#pragma unroll
        for (int kk = k0; kk < k1; kk++) {
            const uint64_t dah = smem_desc_sw128(ah + 8 * kk), dbh = smem_desc_sw128(bh + 8 * kk);
            const uint64_t dal = smem_desc_sw128(al + 8 * kk), dbl = smem_desc_sw128(bl + 8 * kk);
            wgmma_n128_ss(d, dal, dbh, kk > k0);
            wgmma_n128_ss(d, dah, dbl, 1);
            wgmma_n128_ss(d, dah, dbh, 1);
        }
        wgmma_commit();
    };
    auto add_run = [&]() {
        wgmma_wait_all();
        fence_operands(d);
#pragma unroll
        for (int q = 0; q < 64; q++)
            acc[q] += d[q];
    };
    make_lo(0);
    warpgroup_sync(wg);
    for (int s = 0; s < steps; s++) {
        if (RUN16) {
            products(s, 0, RKB / 4);
            if (s + 1 < steps)
                make_lo(s + 1);
            add_run();
            products(s, RKB / 4, RKB / 2);
            add_run();
        } else {
            products(s, 0, RKB / 2);
            if (s + 1 < steps)
                make_lo(s + 1);
            add_run();
        }
        warpgroup_sync(wg); /* s + 1's lo visible to this warpgroup's products */
        if (t128 == 0) {    /* stage s's slot released by this warpgroup */
            fence_proxy_async();
            bar_arrive(empty + s % RING);
        }
    }
    store_wgmma_tile(acc, C, M, N, m0 + wg * 64 + (warp % 4) * 16, n0, lane);
}

template <bool RUN16>
static void gemm_ws(const float *A, const float *Bt, float *C, int M, int N, int K)
{
    auto kernel = gemm_3xtf32_ws_kernel<RUN16>;
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               WS_SMEM_BYTES));
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    kernel<<<grid, WS_THREADS, WS_SMEM_BYTES>>>(tile_map(A, M, K), tile_map(Bt, N, K), C, M, N, K);
}

/* row-major C = A B through column-major cuBLAS: C^T = B^T A^T */
static void gemm_cublas(cublasHandle_t h, const float *A, const float *B, float *C, int M, int N,
                        int K)
{
    const float one = 1.f, zero = 0.f;
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, C, N);
}

template <typename F> static double time_ms(F f)
{
    cudaEvent_t a, b;
    cudaEventCreate(&a), cudaEventCreate(&b);
    f();
    CHECK(cudaDeviceSynchronize());
    const int reps = 10;
    cudaEventRecord(a);
    for (int r = 0; r < reps; r++)
        f();
    cudaEventRecord(b);
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    return ms / reps;
}

/* largest |C - ref| / max |ref| over sampled rows, ref in double; *shrink: the mean of
 * (C - ref) sign(ref) over the mean |ref|, a systematic error (< 0: C shrunk toward zero) that
 * the largest error hides and a network's layers compound */
static double error(const std::vector<float> &A, const std::vector<float> &B,
                    const std::vector<float> &C, int M, int N, int K, double *shrink)
{
    double worst = 0, scale = 0, signed_sum = 0, abs_sum = 0;
    for (int r = 0; r < M; r += M / 61 + 1)
        for (int c = 0; c < N; c++) {
            double ref = 0;
            for (int k = 0; k < K; k++)
                ref += (double)A[(size_t)r * K + k] * B[(size_t)k * N + c];
            const double e = C[(size_t)r * N + c] - ref;
            worst = fmax(worst, fabs(e));
            scale = fmax(scale, fabs(ref));
            signed_sum += ref < 0 ? -e : e, abs_sum += fabs(ref);
        }
    *shrink = signed_sum / abs_sum;
    return worst / scale;
}

int main(int argc, char **argv)
{
    const int M = argc > 1 ? atoi(argv[1]) : 303742; /* 4,096 atoms' active edges */
    const int shapes[][2] = {{576, 1024}, {1024, 1024}, {1024, 512}, {256, 1024}};
    cublasHandle_t h;
    cublasCreate(&h);
    cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH);
    cublasHandle_t h_ex; /* the emulations', eager: used wherever cuBLAS can */
    cublasCreate(&h_ex);
    cublasSetEmulationStrategy(h_ex, CUBLAS_EMULATION_STRATEGY_EAGER);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    printf("%s, M = %d rows\n", prop.name, M);
    printf("| K | N | GEMM | ms | TFLOPS | speed-up over cuBLAS | error | shrink |\n"
           "|---|---|---|---|---|---|---|---|\n");
    for (auto &sh : shapes) {
        const int K = sh[0], N = sh[1];
        std::vector<float> A((size_t)M * K), B((size_t)K * N), Cv((size_t)M * N);
        srand(1);
        /* activations ~ silu outputs, weights ~ 1/sqrt(K): mixed signs and magnitudes */
        for (auto &v : A)
            v = (float)(rand() / (double)RAND_MAX * 2 - 0.5);
        for (auto &v : B)
            v = (float)((rand() / (double)RAND_MAX * 2 - 1) / sqrt((double)K));
        std::vector<float> Bt((size_t)N * K); /* B transposed: the wgmma form's K-major B */
        for (int k = 0; k < K; k++)
            for (int n = 0; n < N; n++)
                Bt[(size_t)n * K + k] = B[(size_t)k * N + n];
        float *dA, *dB, *dBt, *dC;
        CHECK(cudaMalloc(&dA, sizeof(float) * A.size()));
        CHECK(cudaMalloc(&dB, sizeof(float) * B.size()));
        CHECK(cudaMalloc(&dBt, sizeof(float) * Bt.size()));
        CHECK(cudaMalloc(&dC, sizeof(float) * Cv.size()));
        CHECK(cudaMemcpy(dA, A.data(), sizeof(float) * A.size(), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(dB, B.data(), sizeof(float) * B.size(), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(dBt, Bt.data(), sizeof(float) * Bt.size(), cudaMemcpyHostToDevice));
        const double flop = 2.0 * M * N * K;
        double t_cublas = 0;
        /* cuBLAS' emulations: one TF32 pass (the tensor cores' speed, not float32's
         * accuracy) and BF16x9 (float32 from nine BF16 products; cuBLAS decides where) */
        auto gemm_ex = [&](cublasComputeType_t compute) {
            const float one = 1.f, zero = 0.f;
            if (cublasGemmEx(h_ex, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, dB, CUDA_R_32F, N, dA,
                             CUDA_R_32F, K, &zero, dC, CUDA_R_32F, N, compute,
                             CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
                fprintf(stderr, "cublasGemmEx(compute %d) failed\n", (int)compute);
        };
        const struct {
            const char *name;
            std::function<void()> run;
        } forms[] = {
            {"cuBLAS float32", [&] { gemm_cublas(h, dA, dB, dC, M, N, K); }},
            {"cuBLAS TF32 (one pass)", [&] { gemm_ex(CUBLAS_COMPUTE_32F_FAST_TF32); }},
            {"cuBLAS BF16x9", [&] { gemm_ex(CUBLAS_COMPUTE_32F_EMULATED_16BFX9); }},
            {"3xTF32 mma.sync presplit, k16", [&] { gemm_presplit<16>(dA, dB, dC, M, N, K); }},
            {"3xTF32 wgmma, k16 runs", [&] { gemm_wgmma(dA, dBt, dC, M, N, K); }},
            {"3xTF32 wgmma ring, runs of 32", [&] { gemm_ring<3, 1>(dA, dBt, dC, M, N, K); }},
            {"3xTF32 wgmma ring, runs of 128", [&] { gemm_ring<3, 4>(dA, dBt, dC, M, N, K); }},
            {"1xTF32 wgmma ring, runs of 32 (speed only)", [&] { gemm_ring<1, 1>(dA, dBt, dC, M, N, K); }},
            {"3xTF32 wgmma TMA ring, runs of 32, lo truncated", [&] { gemm_tma<3, false>(dA, dBt, dC, M, N, K); }},
            {"3xTF32 wgmma TMA ring, runs of 32, lo rounded", [&] { gemm_tma<3, true>(dA, dBt, dC, M, N, K); }},
            {"1xTF32 wgmma TMA ring (speed only)", [&] { gemm_tma<1, false>(dA, dBt, dC, M, N, K); }},
            {"3xTF32 specialized, runs of 32, lo rounded", [&] { gemm_ws<false>(dA, dBt, dC, M, N, K); }},
            {"3xTF32 specialized, runs of 16, lo rounded", [&] { gemm_ws<true>(dA, dBt, dC, M, N, K); }},
        };
        for (const auto &form : forms) {
            const double ms = time_ms(form.run);
            CHECK(cudaGetLastError());
            CHECK(cudaMemcpy(Cv.data(), dC, sizeof(float) * Cv.size(), cudaMemcpyDeviceToHost));
            if (t_cublas == 0)
                t_cublas = ms;
            double shrink;
            const double worst = error(A, B, Cv, M, N, K, &shrink);
            printf("| %d | %d | %s | %.3f | %.1f | %.2fx | %.2e | %+.1e |\n", K, N, form.name, ms,
                   flop / ms / 1e9, t_cublas / ms, worst, shrink);
            fflush(stdout);
        }
        cudaFree(dA), cudaFree(dB), cudaFree(dBt), cudaFree(dC);
    }
    cublasDestroy(h);
    cublasDestroy(h_ex);
    return 0;
}
