/*
 * gemm_3xtf32.cu: the float32-accurate tensor-core GEMM (gemm_3xtf32.cuh) for Hopper: warpgroup
 * MMA (wgmma) and the tensor memory accelerator (TMA), which exist only in sm_90a code; built
 * for other architectures the kernel is empty and gemm_3xtf32_available() says no.
 *
 * A block computes 128 x 128 of C with three warpgroups: a producer and two consumers of 64 x
 * 128 each. Stages of 32 values of k flow through a ring of four shared-memory slots, filled
 * by the producer's thread 0 with TMA copies of A's and Bt's 128 x 32 tiles (128-byte swizzle,
 * the layout wgmma reads) three stages ahead; each stage's lo goes into a ring of three more
 * slots ahead of the consumers, copied by TMA where the caller has it in memory (the weights',
 * an activation's) and made by the producer's 128 threads otherwise. The consumers only wait
 * for a stage, issue lo hi + hi lo + hi hi, drain and add the run into their float32 sums;
 * they never wait for each other or for lo, so one's drain overlaps the other's products
 * (1.8x cuBLAS' float32 GEMM with lo made here, 2.0x with both from memory, against 1.6x with
 * lo made by the consumers between their stages: bench/gemm_3xtf32.cu,
 * bench/results/2026-11-29-h200-gemm-3xtf32-s48.md). The order of every sum is fixed, so
 * results are bitwise reproducible, wherever lo comes from.
 */
#include <cuda.h>
#include <cudaTypedefs.h>

#include "gemm/gemm_3xtf32.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FNQ_SM90A 1
#endif

namespace fnqcu {
namespace {

constexpr int kTile = 128;        /* rows of A and of Bt a block takes (C's tile: 128 x 128) */
constexpr int kStageK = 32;       /* values of k a stage: 128 bytes, the swizzle's row */
constexpr int kRing = 4;          /* raw stages (A's and Bt's tiles as loaded) */
constexpr int kLo = 3;            /* lo stages */
constexpr int kThreads = 3 * 128; /* the producer warpgroup, two consumers */
constexpr int kTileWords = kTile * kStageK;
constexpr int kStageBytes = 2 * kTileWords * 4; /* A's and Bt's tiles */
constexpr int kChunks = 2 * kTileWords / 4 / 128; /* 16-byte chunks of a stage a producer thread */
constexpr int kBars = 2 * (kRing + kLo);
constexpr int kSmemBytes = (kRing + kLo) * kStageBytes + 1024 + kBars * 8; /* + alignment */

/* The tile maps of a launch: A's and Bt's, and their lo's where they come from memory */
struct Maps {
    CUtensorMap a, bt, a_lo, bt_lo;
};

__device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

#ifdef FNQ_SM90A
/* K-major, 128-byte swizzle: atoms of 8 rows x 128 bytes (stride byte offset 1,024) */
__device__ __forceinline__ uint64_t desc_sw128(const void *p)
{
    return (uint64_t)((smem_addr(p) & 0x3FFFF) >> 4) | (uint64_t)1 << 16 |
           (uint64_t)(1024 >> 4) << 32 | (uint64_t)1 << 62;
}

/* d (+)= a b, m64n128k8 TF32, both operands by descriptor */
__device__ __forceinline__ void mma_64x128x8(float (&d)[64], uint64_t a, uint64_t b, int keep)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
                 "%64, %65, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                   "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
                   "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
                   "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
                   "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
                   "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(a), "l"(b), "r"(keep));
}

/* the threads' shared-memory traffic ordered with the tensor cores' and TMA's (async proxy) */
__device__ __forceinline__ void fence_proxy_async()
{
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/* keeps the compiler from moving reads of the accumulators across wgmma's wait */
__device__ __forceinline__ void fence_operands(float (&d)[64])
{
#pragma unroll
    for (int q = 0; q < 64; q++)
        asm volatile("" : "+f"(d[q])::"memory");
}

__device__ __forceinline__ void tma_load(void *dst, const CUtensorMap *map, int k, int row,
                                         uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_addr(dst)),
                 "l"(reinterpret_cast<uint64_t>(map)), "r"(k), "r"(row), "r"(smem_addr(bar))
                 : "memory");
}

__device__ __forceinline__ void bar_wait(uint64_t *bar, uint32_t parity)
{
    asm volatile("{\n.reg .pred P;\nWAIT_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 P, [%0], %1;\n"
                 "@!P bra WAIT_%=;\n}" ::"r"(smem_addr(bar)),
                 "r"(parity)
                 : "memory");
}

__device__ __forceinline__ void bar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

__device__ __forceinline__ void bar_init(uint64_t *bar, int arrivals)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(arrivals));
}

/* tf32_lo (gemm_3xtf32.cuh) in one instruction, the same bits: x - (x's top 19 bits), what
 * the tensor core does not read of x (exact), rounded to TF32 to nearest. Left to the tensor
 * core's truncation instead, every lo would lose ~2^-11 of itself toward zero, a bias of
 * ~2.4e-7 on every operand that the layers compound (session 47: 1e-6 on the model's energy
 * against cuBLAS' 7e-8) */
__device__ __forceinline__ uint32_t lo_part(uint32_t x)
{
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;"
        : "=r"(r)
        : "f"(__uint_as_float(x) - __uint_as_float(x & 0xFFFFE000u)));
    return r;
}

/* The producer: stage s's TMA copies issued kRing - 1 stages ahead (thread 0); its lo into lo
 * slot s % kLo once the consumers are done with stage s - kLo: copied from memory (A_LO,
 * BT_LO: the bytes expected on lo_full before the copies) or made by all 128 threads */
template <bool A_LO, bool BT_LO>
__device__ __forceinline__ void produce(const Maps &maps, float *raw, float *lo, uint64_t *full,
                                       uint64_t *raw_empty, uint64_t *lo_full,
                                       uint64_t *lo_empty, int m0, int n0, int steps)
{
    auto issue = [&](int s) {
        float *a = raw + (s % kRing) * 2 * kTileWords;
        uint64_t *bar = full + s % kRing;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
                         smem_addr(bar)),
                     "r"(kStageBytes)
                     : "memory");
        tma_load(a, &maps.a, s * kStageK, m0, bar);
        tma_load(a + kTileWords, &maps.bt, s * kStageK, n0, bar);
    };
    /* lo of chunks [from, from + kChunks / 2) of raw stage a into l */
    auto make = [](const uint4 *a, uint4 *l, int from) {
        uint4 x[kChunks / 2]; /* every load in flight at once: one warp a scheduler */
#pragma unroll
        for (int h = 0; h < kChunks / 2; h++)
            x[h] = a[threadIdx.x + (from + h) * 128];
#pragma unroll
        for (int h = 0; h < kChunks / 2; h++)
            l[threadIdx.x + (from + h) * 128] = make_uint4(lo_part(x[h].x), lo_part(x[h].y),
                                                           lo_part(x[h].z), lo_part(x[h].w));
    };
    if (threadIdx.x == 0)
        for (int s = 0; s < kRing - 1 && s < steps; s++)
            issue(s);
    for (int s = 0; s < steps; s++) {
        if (s >= kLo)
            bar_wait(lo_empty + s % kLo, ((s - kLo) / kLo) & 1);
        float *l = lo + (s % kLo) * 2 * kTileWords;
        if ((A_LO || BT_LO) && threadIdx.x == 0) {
            uint64_t *bar = lo_full + s % kLo;
            asm volatile("mbarrier.expect_tx.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)),
                         "r"((A_LO + BT_LO) * kStageBytes / 2)
                         : "memory");
            if (A_LO)
                tma_load(l, &maps.a_lo, s * kStageK, m0, bar);
            if (BT_LO)
                tma_load(l + kTileWords, &maps.bt_lo, s * kStageK, n0, bar);
        }
        if (!A_LO || !BT_LO) {
            bar_wait(full + s % kRing, (s / kRing) & 1);
            const uint4 *a = reinterpret_cast<const uint4 *>(raw + (s % kRing) * 2 * kTileWords);
            if (!A_LO)
                make(a, reinterpret_cast<uint4 *>(l), 0);
            if (!BT_LO)
                make(a, reinterpret_cast<uint4 *>(l), kChunks / 2);
            fence_proxy_async();
        }
        bar_arrive(lo_full + s % kLo);
        /* then, off lo's path: the copy kRing - 1 stages ahead, into stage s - 1's slot once
         * the consumers are done with it */
        if (threadIdx.x == 0 && s + kRing - 1 < steps) {
            if (s >= 1)
                bar_wait(raw_empty + (s - 1) % kRing, ((s - 1) / kRing) & 1);
            issue(s + kRing - 1);
        }
    }
}

/* C (+)= the tile: acc is a warp's 16 rows of its warpgroup's m64n128 accumulator, rows g and
 * g + 8, columns 8j + 2t and 8j + 2t + 1 */
__device__ __forceinline__ void store(const float (&acc)[64], int r0, int n0, int rows, int n,
                                     bool add, float *C, int ldc)
{
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
    for (int q = 0; q < 64; q++) {
        const int r = r0 + g + 8 * ((q / 2) % 2), c = n0 + 8 * (q / 4) + 2 * t + q % 2;
        if (r < rows && c < n) {
            float *out = C + (int64_t)r * ldc + c;
            *out = add ? *out + acc[q] : acc[q];
        }
    }
}
#endif

template <bool A_LO, bool BT_LO>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_3xtf32_kernel(const __grid_constant__ Maps maps, int rows, int n, int k, int add,
                       float *C, int ldc)
{
#ifdef FNQ_SM90A
    extern __shared__ uint8_t smem[];
    uint8_t *base = (uint8_t *)(((uintptr_t)smem + 1023) & ~(uintptr_t)1023); /* swizzle atoms */
    float *raw = (float *)base, *lo = raw + kRing * 2 * kTileWords; /* [slot][A, Bt] */
    uint64_t *full = (uint64_t *)(lo + kLo * 2 * kTileWords), *raw_empty = full + kRing;
    uint64_t *lo_full = raw_empty + kRing, *lo_empty = lo_full + kLo;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int m0 = blockIdx.y * kTile, n0 = blockIdx.x * kTile;
    const int steps = (k + kStageK - 1) / kStageK;
    if (threadIdx.x == 0) { /* the empties: one arrival from each of the 8 consumer warps */
        for (int i = 0; i < kRing; i++)
            bar_init(full + i, 1), bar_init(raw_empty + i, 8);
        for (int i = 0; i < kLo; i++)
            bar_init(lo_full + i, 128), bar_init(lo_empty + i, 8);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (warp < 4) {
        produce<A_LO, BT_LO>(maps, raw, lo, full, raw_empty, lo_full, lo_empty, m0, n0, steps);
        return;
    }
    const int row0 = ((warp - 4) / 4) * 64; /* this consumer's 64 rows of the tile */
    float d[64], acc[64] = {};
    for (int s = 0; s < steps; s++) {
        bar_wait(full + s % kRing, (s / kRing) & 1);
        bar_wait(lo_full + s % kLo, (s / kLo) & 1);
        const float *ah = raw + (s % kRing) * 2 * kTileWords, *bh = ah + kTileWords;
        const float *al = lo + (s % kLo) * 2 * kTileWords, *bl = al + kTileWords;
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < kStageK / 8; kk++) { /* 8 values of k: 32 bytes along a row */
            const int a_at = row0 * kStageK + 8 * kk;
            const uint64_t a_hi = desc_sw128(ah + a_at), b_hi = desc_sw128(bh + 8 * kk);
            const uint64_t a_lo = desc_sw128(al + a_at), b_lo = desc_sw128(bl + 8 * kk);
            mma_64x128x8(d, a_lo, b_hi, kk > 0);
            mma_64x128x8(d, a_hi, b_lo, 1);
            mma_64x128x8(d, a_hi, b_hi, 1);
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        fence_operands(d);
        if (lane == 0) { /* this warp's reads of both slots are done */
            bar_arrive(raw_empty + s % kRing);
            bar_arrive(lo_empty + s % kLo);
        }
#pragma unroll
        for (int q = 0; q < 64; q++)
            acc[q] += d[q];
    }
    store(acc, m0 + row0 + (warp % 4) * 16, n0, rows, n, add, C, ldc);
#endif
}

/* a row-major rows x k float32 matrix (leading dimension ld) as 128 x 32 tiles, 128-byte
 * swizzle; false where the driver refuses it */
bool tile_map(const float *p, int rows, int k, int ld, CUtensorMap *map)
{
    static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
    if (!encode) {
        cudaDriverEntryPointQueryResult found;
#if CUDART_VERSION >= 12050
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void **)&encode, 12000,
                                             cudaEnableDefault, &found) != cudaSuccess)
#else
        if (cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", (void **)&encode, cudaEnableDefault,
                                    &found) != cudaSuccess)
#endif
            encode = nullptr;
        if (!encode || found != cudaDriverEntryPointSuccess) {
            encode = nullptr;
            return false;
        }
    }
    const cuuint64_t dims[2] = {(cuuint64_t)k, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)ld * sizeof(float)};
    const cuuint32_t box[2] = {kStageK, kTile}, unit[2] = {1, 1};
    return encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)p, dims, strides, box, unit,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

} // namespace

bool gemm_3xtf32_available()
{
#ifdef FNQ_GEMM_SM90A
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
        return false;
    return major == 9 && minor == 0;
#else
    return false;
#endif
}

cudaError_t gemm_3xtf32(cudaStream_t s, int rows, int n, int k, const float *A,
                        const float *A_lo, int lda, const float *Bt, const float *Bt_lo, int ldb,
                        bool add, float *C, int ldc, bool *done)
{
    *done = false;
    const int row_tiles = (rows + kTile - 1) / kTile;
    if (rows <= 0 || n <= 0 || k <= 0 || row_tiles > 65535 || lda % 4 || ldb % 4 ||
        !aligned16(A) || !aligned16(Bt) || !aligned16(A_lo) || !aligned16(Bt_lo))
        return cudaSuccess;
    Maps maps;
    if (!tile_map(A, rows, k, lda, &maps.a) || !tile_map(Bt, n, k, ldb, &maps.bt) ||
        (A_lo && !tile_map(A_lo, rows, k, lda, &maps.a_lo)) ||
        (Bt_lo && !tile_map(Bt_lo, n, k, ldb, &maps.bt_lo)))
        return cudaSuccess;
    const auto kernel = A_lo ? (Bt_lo ? gemm_3xtf32_kernel<true, true>
                                      : gemm_3xtf32_kernel<true, false>)
                             : (Bt_lo ? gemm_3xtf32_kernel<false, true>
                                      : gemm_3xtf32_kernel<false, false>);
    /* the shared memory beyond 48 KB (per device: asked for at every launch) */
    cudaError_t err =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
    if (err != cudaSuccess)
        return err;
    const dim3 grid((n + kTile - 1) / kTile, row_tiles);
    kernel<<<grid, kThreads, kSmemBytes, s>>>(maps, rows, n, k, add, C, ldc);
    err = cudaGetLastError();
    *done = err == cudaSuccess;
    return err;
}

} // namespace fnqcu
