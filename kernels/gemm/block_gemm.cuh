/*
 * block_gemm.cuh: C = A . B (or C += A . B) for one thread block: A and C in shared memory
 * (row-major, leading dimensions multiples of 8), B row-major in global memory (the radial
 * MLP's weights, padded on upload so every dimension is a multiple of 16).
 * M, N multiples of 16, K a multiple of 8. Every output has one owner and a fixed summation
 * order, so results are reproducible.
 *
 * Default: FMA loops. float32: each thread an 8 x 4 (or 4 x 4) register tile, k in steps of 4
 * (four 16-byte global loads of B feed 128 FMAs, so the loads of B, which come from L2 because
 * shared memory leaves little L1, are few and issued together); where that gives too few
 * tiles for the block, K is split between thread groups and the partial sums are added in a
 * fixed order through `scratch` (when the caller has some). float64: each thread a 4 x 4 tile.
 * float32 with tensor cores (FNQ_TF32=1, block_gemm_tf32x3: TF32 with the 3-product split
 * a.b ~ a_lo.b_hi + a_hi.b_lo + a_hi.b_hi) is opt-in: chained over all of K its error was
 * ~2e-6 relative (the tensor cores' accumulation truncates), so each k step of 8 now starts
 * from zero and is added in float32: 1.4e-7 relative l2 (FMA float32: 2.8e-7;
 * bench/gemm_precision.cu, H200), but hardly faster end to end (bench/NOTES.md, "Numbers
 * behind comments"), as the GEMMs are not what bounds the kernels.
 */
#pragma once

#include <mma.h>

namespace fnqcu {

__device__ __forceinline__ void block_gemm_tf32x3(int M, int N, int K, const float *A, int lda,
                                                  const float *B, int ldb, float *C, int ldc,
                                                  bool accumulate)
{
    using namespace nvcuda;
    const int warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    const int tiles_n = N / 16, tiles = (M / 16) * tiles_n;
    for (int t = warp; t < tiles; t += n_warps) {
        const int m0 = (t / tiles_n) * 16, n0 = (t % tiles_n) * 16;
        /* each k step of 8 starts from a zero tensor-core accumulator and is added to `total`
         * with float32 adds: the tensor cores' truncating accumulation never sees the large
         * running sum (bench/gemm_precision.cu, wmma3x-c1) */
        wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc, total;
        if (accumulate)
            wmma::load_matrix_sync(total, C + m0 * ldc + n0, ldc, wmma::mem_row_major);
        else
            wmma::fill_fragment(total, 0.0f);
        for (int k0 = 0; k0 < K; k0 += 8) {
            wmma::fill_fragment(acc, 0.0f);
            wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> ah, al;
            wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> bh, bl;
            wmma::load_matrix_sync(ah, A + m0 * lda + k0, lda);
            wmma::load_matrix_sync(bh, B + (int64_t)k0 * ldb + n0, ldb);
#pragma unroll
            for (int q = 0; q < ah.num_elements; q++) {
                const float v = ah.x[q];
                ah.x[q] = wmma::__float_to_tf32(v);
                al.x[q] = wmma::__float_to_tf32(v - ah.x[q]);
            }
#pragma unroll
            for (int q = 0; q < bh.num_elements; q++) {
                const float v = bh.x[q];
                bh.x[q] = wmma::__float_to_tf32(v);
                bl.x[q] = wmma::__float_to_tf32(v - bh.x[q]);
            }
            wmma::mma_sync(acc, al, bh, acc);
            wmma::mma_sync(acc, ah, bl, acc);
            wmma::mma_sync(acc, ah, bh, acc);
#pragma unroll
            for (int q = 0; q < acc.num_elements; q++)
                total.x[q] += acc.x[q];
        }
        wmma::store_matrix_sync(C + m0 * ldc + n0, total, ldc, wmma::mem_row_major);
    }
}

template <typename REAL>
__device__ __forceinline__ void block_gemm_fma(int M, int N, int K, const REAL *A, int lda,
                                               const REAL *B, int ldb, REAL *C, int ldc,
                                               bool accumulate)
{
    const int tn = N / 4, tiles = (M / 4) * tn;
    for (int t = threadIdx.x; t < tiles; t += blockDim.x) {
        const int m0 = (t / tn) * 4, n0 = (t % tn) * 4;
        REAL acc[4][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                acc[i][j] = accumulate ? C[(m0 + i) * ldc + n0 + j] : REAL(0);
        const REAL *a = A + m0 * lda;
        const REAL *b = B + n0;
#pragma unroll 4
        for (int k = 0; k < K; k++) {
            REAL bv[4];
            if constexpr (sizeof(REAL) == 4) {
                const float4 v = *reinterpret_cast<const float4 *>(b + (int64_t)k * ldb);
                bv[0] = v.x, bv[1] = v.y, bv[2] = v.z, bv[3] = v.w;
            } else {
#pragma unroll
                for (int j = 0; j < 4; j++)
                    bv[j] = b[(int64_t)k * ldb + j];
            }
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const REAL av = a[i * lda + k];
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[i][j] += av * bv[j];
            }
        }
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                C[(m0 + i) * ldc + n0 + j] = acc[i][j];
    }
}

/* acc += A[m0..m0+TM, k0..k1) . B[k0..k1, n0..n0+4); k0, k1 multiples of 4, k increasing.
 * B comes from L2: the four 16-byte loads for k+4..k+7 are issued before the FMAs of k..k+3,
 * so a warp always has the next group in flight while it computes (one group at a time left
 * the warps waiting on L2 for most of the GEMM: bench/NOTES.md v2.3). A is read one column at
 * a time (broadcast within a warp) so the tile needs few registers besides its accumulators. */
template <int TM>
__device__ __forceinline__ void tile_f32(const float *A, int lda, const float *B, int ldb,
                                         int m0, int n0, int k0, int k1, float acc[TM][4])
{
    if (k0 >= k1)
        return;
    float4 b[4], nb[4];
#pragma unroll
    for (int q = 0; q < 4; q++)
        b[q] = __ldg(reinterpret_cast<const float4 *>(B + (int64_t)(k0 + q) * ldb + n0));
#pragma unroll 1
    for (int k = k0; k < k1; k += 4) {
        /* the last group re-reads itself rather than branch */
        const int kn = k + 4 < k1 ? k + 4 : k;
#pragma unroll
        for (int q = 0; q < 4; q++)
            nb[q] = __ldg(reinterpret_cast<const float4 *>(B + (int64_t)(kn + q) * ldb + n0));
#pragma unroll
        for (int q = 0; q < 4; q++) {
            float a[TM];
#pragma unroll
            for (int i = 0; i < TM; i++)
                a[i] = A[(m0 + i) * lda + k + q];
#pragma unroll
            for (int i = 0; i < TM; i++) {
                acc[i][0] += a[i] * b[q].x;
                acc[i][1] += a[i] * b[q].y;
                acc[i][2] += a[i] * b[q].z;
                acc[i][3] += a[i] * b[q].w;
            }
        }
#pragma unroll
        for (int q = 0; q < 4; q++)
            b[q] = nb[q];
    }
}

/* One TM x 4 tiling of the block GEMM, K split `split` ways (see block_gemm_f32). */
template <int TM>
__device__ __forceinline__ void block_gemm_f32_tiles(int M, int N, int K, const float *A, int lda,
                                                     const float *B, int ldb, float *C, int ldc,
                                                     bool accumulate, int split, float *scratch)
{
    const int tn = N / 4, tiles = (M / TM) * tn, nt = blockDim.x;
    if (split == 1) {
        for (int t = threadIdx.x; t < tiles; t += nt) {
            const int m0 = (t / tn) * TM, n0 = (t % tn) * 4;
            float acc[TM][4];
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[i][j] = accumulate ? C[(m0 + i) * ldc + n0 + j] : 0.0f;
            tile_f32<TM>(A, lda, B, ldb, m0, n0, 0, K, acc);
#pragma unroll
            for (int i = 0; i < TM; i++)
                *reinterpret_cast<float4 *>(C + (m0 + i) * ldc + n0) =
                    make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        }
        return;
    }
    /* split K: group g sums k in [g K/split, (g+1) K/split); groups 1.. park their partial
     * sums in scratch; group 0 adds them in group order */
    const int t = threadIdx.x % tiles, g = threadIdx.x / tiles, kq = K / split;
    const int m0 = (t / tn) * TM, n0 = (t % tn) * 4;
    float acc[TM][4];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            acc[i][j] = 0.0f;
    if (g < split) {
        tile_f32<TM>(A, lda, B, ldb, m0, n0, g * kq, (g + 1) * kq, acc);
        if (g > 0)
#pragma unroll
            for (int i = 0; i < TM; i++)
                *reinterpret_cast<float4 *>(scratch + (size_t)(g - 1) * M * N + (m0 + i) * N +
                                            n0) =
                    make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    }
    __syncthreads();
    if (g == 0) {
        for (int h = 1; h < split; h++)
#pragma unroll
            for (int i = 0; i < TM; i++) {
                const float4 v = *reinterpret_cast<const float4 *>(
                    scratch + (size_t)(h - 1) * M * N + (m0 + i) * N + n0);
                acc[i][0] += v.x, acc[i][1] += v.y, acc[i][2] += v.z, acc[i][3] += v.w;
            }
#pragma unroll
        for (int i = 0; i < TM; i++) {
            float *c = C + (m0 + i) * ldc + n0;
            const float4 old = accumulate ? *reinterpret_cast<const float4 *>(c)
                                          : make_float4(0.f, 0.f, 0.f, 0.f);
            *reinterpret_cast<float4 *>(c) = make_float4(old.x + acc[i][0], old.y + acc[i][1],
                                                         old.z + acc[i][2], old.w + acc[i][3]);
        }
    }
}

/* float32 FMA GEMM: 8 x 4 tiles when there are enough of them for the block, else 4 x 4; K is
 * split between thread groups while that keeps more threads busy and the partial sums fit in
 * `scratch` (scratch_len floats). False if the shape does not suit (caller falls back). */
__device__ __forceinline__ bool block_gemm_f32(int M, int N, int K, const float *A, int lda,
                                               const float *B, int ldb, float *C, int ldc,
                                               bool accumulate, float *scratch, int scratch_len)
{
    if (M % 8 || N % 4 || K % 4)
        return false;
    const int nt = blockDim.x;
    const int tm = (M / 8) * (N / 4) * 2 > nt ? 8 : 4;
    const int tiles = (M / tm) * (N / 4);
    int split = 1;
    if (scratch)
        for (int s = nt / tiles; s > 1; s--)
            if (K % (4 * s) == 0 && (s - 1) * M * N <= scratch_len) {
                split = s;
                break;
            }
    if (tm == 8)
        block_gemm_f32_tiles<8>(M, N, K, A, lda, B, ldb, C, ldc, accumulate, split, scratch);
    else
        block_gemm_f32_tiles<4>(M, N, K, A, lda, B, ldb, C, ldc, accumulate, split, scratch);
    return true;
}

/* C = A . B or C += A . B; see the file comment. scratch/scratch_len: optional shared memory
 * (floats) for split-K; the block must not touch it until its next __syncthreads(). */
template <typename REAL>
__device__ __forceinline__ void block_gemm(int M, int N, int K, const REAL *A, int lda,
                                           const REAL *B, int ldb, REAL *C, int ldc,
                                           bool accumulate, bool tensor_cores,
                                           REAL *scratch = nullptr, int scratch_len = 0)
{
    if constexpr (sizeof(REAL) == 4) {
        if (tensor_cores) {
            block_gemm_tf32x3(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
            return;
        }
        if (block_gemm_f32(M, N, K, A, lda, B, ldb, C, ldc, accumulate, scratch, scratch_len))
            return;
    }
    block_gemm_fma<REAL>(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

} // namespace fnqcu
