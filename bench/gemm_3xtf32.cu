/*
 * gemm_3xtf32.cu: how fast can a float32-accurate tensor-core GEMM of our own be against cuBLAS'
 * float32 (SIMT) GEMM at the Allegro engine's shapes (rows = edges, K and N = 1024 or so)? The
 * way to kernels/gemm/gemm_3xtf32.cu, the engine's GEMM on Hopper (issue 50, docs/allegro.md).
 *
 * C = A B, row-major float32. Each operand value x is split into hi (x itself: the tensor core
 * reads a TF32 operand's top 19 bits) and lo (the rest), and a run of 32 values of k sums
 * lo*hi + hi*lo + hi*hi in a tensor-core accumulator started from zero, which is then added to
 * the running sum in float32 (one sum over all of k loses ~5e-6: session 46). Block tile 128 x
 * 128, Hopper's warpgroup MMA (m64n128k8, both operands by descriptor) fed by TMA (128-byte
 * swizzle, mbarriers), stages of 32 values of k. Forms:
 *   gemm_3xtf32_tma_kernel  two warpgroups; every thread makes an eighth of each stage's lo
 *                           between its products, a __syncthreads a stage; lo truncated or
 *                           rounded to nearest (the engine's form in session 47)
 *   gemm_3xtf32_lop_kernel  a producer warpgroup makes lo ahead of two consumer warpgroups that
 *                           never wait for each other (the engine's form from session 48);
 *                           or Bt's lo (the engine's weights), or both, read from memory; runs
 *                           of 32 or 16
 * Session 46's mma.sync and register-fed wgmma forms, session 47's cp.async ring and its
 * specialized form (a producer warp, each warpgroup making its own lo) are in git history and
 * their results files. The wgmma forms need sm_90a; built for plain sm_90 they compute nothing.
 * Also timed: cuBLAS' one-pass TF32 GEMM (the tensor cores' speed, not float32's accuracy) and
 * its BF16x9 emulation. Prints, per shape: ms, TFLOPS, the speed-up over cublasSgemm (pedantic
 * float32), the largest error relative to a double-precision reference on sampled rows, and
 * the shrink (a systematic error toward zero, which a network's layers compound):
 * bench/results/2026-11-28-h200-gemm-3xtf32-s46.md, 2026-11-29-h200-gemm-3xtf32-s47.md and
 * 2026-11-29-h200-gemm-3xtf32-s48.md; at the node GEMMs' shapes of a NequIP model (a shape list
 * with rows of its own), 2026-12-02-h200-occupancy-gemm-s55.md.
 * Build: nvcc -arch=sm_90a -O3 bench/gemm_3xtf32.cu -lcublas -o gemm_3xtf32; run: gemm_3xtf32
 * [rows [parts of forms' names, comma-separated ("": every form) [KxNxM,...]]] (default
 * 303,742 rows: 4,096 atoms' active edges; every form; the Allegro engine's K x N)
 */
#include <cublas_v2.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

constexpr int BM = 128, BN = 128, THREADS = 256; /* C's tile; two warpgroups */

/* v rounded to TF32, to nearest */
__device__ __forceinline__ uint32_t tf32(float v)
{
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

/* x - trunc(x) (exact), and with ROUND rounded to TF32 to nearest: left to the tensor core's
 * truncation, every lo loses ~2^-11 of itself toward zero, a bias of ~2^-22 on every operand
 * (the shrink column) */
template <bool ROUND> __device__ __forceinline__ uint32_t lo_part(uint32_t x)
{
    const float lo = __uint_as_float(x) - __uint_as_float(x & 0xFFFFE000u);
    return ROUND ? tf32(lo) : __float_as_uint(lo);
}

/* ---- Hopper's warpgroup MMA (wgmma) and TMA: sm_90a only. ---- */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FNQ_WGMMA 1
#endif

__device__ __forceinline__ void wgmma_fence()
{
#ifdef FNQ_WGMMA
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
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

__device__ __forceinline__ void wgmma_wait_all()
{
#ifdef FNQ_WGMMA
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif
}

/* Stages of 32 values of k (128 bytes: the swizzle's row), A's and Bt's 128 x 32 tiles */
constexpr int RING = 4, RBK = 32, RKB = RBK / 4;
constexpr int TILE_WORDS = BM * RBK; /* A's or B's stage (BM = BN) */
constexpr int LO = 3;           /* lo's buffers */

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

/* ---- The TMA form: a ring of RING raw stages, filled three ahead by one thread's TMA copies
 * of a stage's two tiles (128 rows x 32 values, the 128-byte swizzle wgmma reads natively),
 * every thread waiting on the stage's mbarrier; lo made by all threads at the same offsets as
 * its raw values (so the swizzle does not concern it) into LO buffers, between the warpgroups'
 * products; a __syncthreads a stage frees the slot for the next copy. ---- */
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
    for (int s = 0; s < steps; s++) { /* runs of 32 */
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

__device__ __forceinline__ void bar_arrive(uint64_t *bar)
{
#ifdef FNQ_WGMMA
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
#endif
}

/* ---- A warpgroup that makes lo (session 48): the consumers' critical path only waits, issues
 * the stage's products, drains them and adds the run; lo is made ahead by a producer
 * warpgroup (128 threads, 16 chunks of 16 bytes each a stage) whose thread 0 also issues the
 * TMA copies. Barriers: full (TMA landed), lo_full (128 producer arrivals, and the bytes of lo
 * copied from memory), raw_empty and lo_empty (one arrival from each consumer warp: 8). The
 * two consumer warpgroups never wait for each other, so one's drain and sums overlap the
 * other's products. RING raw stages, LOS lo stages. LO_MEMORY: 0 lo made here for both
 * operands; 1 Bt's lo read from memory (the engine's weights: made once per model); 2 A's too
 * (the kernel that writes A would write its lo beside it). ---- */
template <int PRODUCTS, int RING_, int LOS, int LO_MEMORY, int RUN = 32>
__global__ void __launch_bounds__(3 * 128, 1)
    gemm_3xtf32_lop_kernel(const __grid_constant__ CUtensorMap map_a,
                           const __grid_constant__ CUtensorMap map_b,
                           const __grid_constant__ CUtensorMap map_alo,
                           const __grid_constant__ CUtensorMap map_blo, float *C, int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    uint8_t *base = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    float *raw = (float *)base, *lo = raw + RING_ * 2 * TILE_WORDS;
    uint64_t *full = (uint64_t *)(lo + LOS * 2 * TILE_WORDS), *raw_empty = full + RING_;
    uint64_t *lo_full = raw_empty + RING_, *lo_empty = lo_full + LOS;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, wg = warp / 4;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int steps = (K + RBK - 1) / RBK;
    if (threadIdx.x == 0) {
        for (int i = 0; i < RING_; i++) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(full + i)));
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 8;" ::"r"(smem_addr(raw_empty + i)));
        }
        for (int i = 0; i < LOS; i++) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 128;" ::"r"(smem_addr(lo_full + i)));
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 8;" ::"r"(smem_addr(lo_empty + i)));
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (wg == 0) { /* the producer */
        auto issue = [&](int s) {
            float *a = raw + (s % RING_) * 2 * TILE_WORDS;
            bar_expect(full + s % RING_, TMA_STAGE_BYTES);
            tma_load(a, &map_a, s * RBK, m0, full + s % RING_);
            tma_load(a + TILE_WORDS, &map_b, s * RBK, n0, full + s % RING_);
        };
        if (threadIdx.x == 0)
            for (int s = 0; s < RING_ - 1 && s < steps; s++)
                issue(s);
        for (int s = 0; s < steps; s++) {
            if (s >= LOS) /* the consumers done with the lo stage s - LOS */
                bar_wait(lo_empty + s % LOS, ((s - LOS) / LOS) & 1);
            float *l = lo + (s % LOS) * 2 * TILE_WORDS;
            if (LO_MEMORY && threadIdx.x == 0) { /* lo's copies: their bytes before them */
                asm volatile("mbarrier.expect_tx.shared::cta.b64 [%0], %1;" ::"r"(
                                 smem_addr(lo_full + s % LOS)),
                             "r"(LO_MEMORY * TILE_WORDS * 4)
                             : "memory");
                if (LO_MEMORY == 2)
                    tma_load(l, &map_alo, s * RBK, m0, lo_full + s % LOS);
                tma_load(l + TILE_WORDS, &map_blo, s * RBK, n0, lo_full + s % LOS);
            }
            if (LO_MEMORY < 2) { /* A's lo (and Bt's) from the raw stage */
                bar_wait(full + s % RING_, (s / RING_) & 1);
                const uint4 *a = reinterpret_cast<const uint4 *>(raw + (s % RING_) * 2 * TILE_WORDS);
                uint4 *l4 = reinterpret_cast<uint4 *>(l);
                constexpr int chunks = (LO_MEMORY ? 1 : 2) * TILE_WORDS / 4 / 128;
                uint4 x[chunks]; /* every load in flight at once: one warp a scheduler */
#pragma unroll
                for (int h = 0; h < chunks; h++)
                    x[h] = a[threadIdx.x + h * 128];
#pragma unroll
                for (int h = 0; h < chunks; h++)
                    l4[threadIdx.x + h * 128] =
                        make_uint4(lo_part<true>(x[h].x), lo_part<true>(x[h].y),
                                   lo_part<true>(x[h].z), lo_part<true>(x[h].w));
                fence_proxy_async();
            }
            bar_arrive(lo_full + s % LOS);
            /* then, off lo's path: the copy RING_ - 1 stages ahead, into the slot of stage
             * s - 1 once the consumers are done with it */
            if (threadIdx.x == 0 && s + RING_ - 1 < steps) {
                if (s >= 1)
                    bar_wait(raw_empty + (s - 1) % RING_, ((s - 1) / RING_) & 1);
                issue(s + RING_ - 1);
            }
        }
        return;
    }
    const int cw = warp - 4, row0 = (cw / 4) * 64; /* this consumer's 64 rows of the tile */
    float d[64] = {}, acc[64] = {};
    for (int s = 0; s < steps; s++) {
        bar_wait(full + s % RING_, (s / RING_) & 1);
        bar_wait(lo_full + s % LOS, (s / LOS) & 1);
        const float *ah = raw + (s % RING_) * 2 * TILE_WORDS + row0 * RBK;
        const float *bh = raw + (s % RING_) * 2 * TILE_WORDS + TILE_WORDS;
        const float *al = lo + (s % LOS) * 2 * TILE_WORDS + row0 * RBK;
        const float *bl = lo + (s % LOS) * 2 * TILE_WORDS + TILE_WORDS;
#pragma unroll
        for (int r = 0; r < RBK / RUN; r++) { /* runs of RUN values of k */
            wgmma_fence();
#pragma unroll
            for (int kk = r * RUN / 8; kk < (r + 1) * RUN / 8; kk++) {
                const uint64_t dah = smem_desc_sw128(ah + 8 * kk), dbh = smem_desc_sw128(bh + 8 * kk);
                const bool keep = kk > r * RUN / 8;
                if (PRODUCTS == 3) {
                    const uint64_t dal = smem_desc_sw128(al + 8 * kk), dbl = smem_desc_sw128(bl + 8 * kk);
                    wgmma_n128_ss(d, dal, dbh, keep);
                    wgmma_n128_ss(d, dah, dbl, 1);
                    wgmma_n128_ss(d, dah, dbh, 1);
                } else {
                    wgmma_n128_ss(d, dah, dbh, keep);
                }
            }
            wgmma_commit();
            wgmma_wait_all();
            fence_operands(d);
            if (lane == 0 && r == RBK / RUN - 1) { /* this warp's reads of the stage are done */
                bar_arrive(raw_empty + s % RING_);
                bar_arrive(lo_empty + s % LOS);
            }
#pragma unroll
            for (int q = 0; q < 64; q++)
                acc[q] += d[q];
        }
    }
    store_wgmma_tile(acc, C, M, N, m0 + row0 + (cw % 4) * 16, n0, lane);
}

/* x's lo, elementwise: what the lo producer would otherwise make (lo_part, rounded) */
__global__ void lo_of(const float *x, float *lo, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        lo[i] = __uint_as_float(lo_part<true>(__float_as_uint(x[i])));
}

template <int PRODUCTS, int RING_, int LOS, int LO_MEMORY, int RUN = 32>
static void gemm_lop(const float *A, const float *Bt, const float *Alo, const float *Btlo, float *C,
                     int M, int N, int K)
{
    auto kernel = gemm_3xtf32_lop_kernel<PRODUCTS, RING_, LOS, LO_MEMORY, RUN>;
    const int bytes = (RING_ + LOS) * TMA_STAGE_BYTES + 1024 + 2 * (RING_ + LOS) * 8;
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    kernel<<<grid, 3 * 128, bytes>>>(tile_map(A, M, K), tile_map(Bt, N, K), tile_map(Alo, M, K),
                                     tile_map(Btlo, N, K), C, M, N, K);
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

/* whether name holds one of the comma-separated parts of list */
static bool names_match(const char *name, const char *list)
{
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        for (const char *q = name; *q; q++)
            if (strncmp(q, p, len) == 0)
                return true;
        p += len + (end ? 1 : 0);
    }
    return false;
}

int main(int argc, char **argv)
{
    const int M0 = argc > 1 ? atoi(argv[1]) : 303742; /* 4,096 atoms' active edges */
    const char *only = argc > 2 && argv[2][0] ? argv[2] : nullptr; /* forms to time (and cuBLAS') */
    /* shapes: K x N at M0 rows, or (argv[3]) a list "KxNxM,..." with rows of their own */
    std::vector<std::array<int, 3>> shapes = {
        {576, 1024, M0}, {1024, 1024, M0}, {1024, 512, M0}, {256, 1024, M0}};
    if (argc > 3) {
        shapes.clear();
        for (const char *q = argv[3]; *q;) {
            int k, n, m, used = 0;
            if (sscanf(q, "%dx%dx%d%n", &k, &n, &m, &used) != 3) {
                fprintf(stderr, "bad shape list at '%s' (KxNxM,...)\n", q);
                return 2;
            }
            shapes.push_back({k, n, m});
            q += used;
            if (*q == ',')
                q++;
        }
    }
    cublasHandle_t h;
    cublasCreate(&h);
    cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH);
    cublasHandle_t h_ex; /* the emulations', eager: used wherever cuBLAS can */
    cublasCreate(&h_ex);
    cublasSetEmulationStrategy(h_ex, CUBLAS_EMULATION_STRATEGY_EAGER);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    printf("%s\n", prop.name);
    printf("| M | K | N | GEMM | ms | TFLOPS | speed-up over cuBLAS | error | shrink |\n"
           "|---|---|---|---|---|---|---|---|---|\n");
    for (auto &sh : shapes) {
        const int K = sh[0], N = sh[1], M = sh[2];
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
        float *dAlo, *dBtlo; /* the operands' lo, for the forms that read it */
        CHECK(cudaMalloc(&dAlo, sizeof(float) * A.size()));
        CHECK(cudaMalloc(&dBtlo, sizeof(float) * Bt.size()));
        lo_of<<<1024, 256>>>(dA, dAlo, A.size());
        lo_of<<<1024, 256>>>(dBt, dBtlo, Bt.size());
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
            {"3xTF32 wgmma TMA ring, runs of 32, lo truncated", [&] { gemm_tma<3, false>(dA, dBt, dC, M, N, K); }},
            {"3xTF32 wgmma TMA ring, runs of 32, lo rounded", [&] { gemm_tma<3, true>(dA, dBt, dC, M, N, K); }},
            {"1xTF32 wgmma TMA ring (speed only)", [&] { gemm_tma<1, false>(dA, dBt, dC, M, N, K); }},
            {"3xTF32 lo producer", [&] { gemm_lop<3, 4, 3, 0>(dA, dBt, dAlo, dBtlo, dC, M, N, K); }},
            {"1xTF32 lo producer (speed only)", [&] { gemm_lop<1, 4, 3, 0>(dA, dBt, dAlo, dBtlo, dC, M, N, K); }},
            {"3xTF32 lo producer, Bt's lo from memory", [&] { gemm_lop<3, 4, 3, 1>(dA, dBt, dAlo, dBtlo, dC, M, N, K); }},
            {"3xTF32 lo producer, Bt's lo from memory, runs of 16", [&] { gemm_lop<3, 4, 3, 1, 16>(dA, dBt, dAlo, dBtlo, dC, M, N, K); }},
            {"3xTF32, both lo from memory (A's made before, not timed)", [&] { gemm_lop<3, 4, 3, 2>(dA, dBt, dAlo, dBtlo, dC, M, N, K); }},
        };
        for (const auto &form : forms) {
            if (only && form.name != forms[0].name && !names_match(form.name, only))
                continue;
            const double ms = time_ms(form.run);
            CHECK(cudaGetLastError());
            CHECK(cudaMemcpy(Cv.data(), dC, sizeof(float) * Cv.size(), cudaMemcpyDeviceToHost));
            if (t_cublas == 0)
                t_cublas = ms;
            double shrink;
            const double worst = error(A, B, Cv, M, N, K, &shrink);
            printf("| %d | %d | %d | %s | %.3f | %.1f | %.2fx | %.2e | %+.1e |\n", M, K, N,
                   form.name, ms, flop / ms / 1e9, t_cublas / ms, worst, shrink);
            fflush(stdout);
        }
        cudaFree(dA), cudaFree(dB), cudaFree(dBt), cudaFree(dC), cudaFree(dAlo), cudaFree(dBtlo);
    }
    cublasDestroy(h);
    cublasDestroy(h_ex);
    return 0;
}
