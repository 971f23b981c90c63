/*
 * block_gemm.cuh: C = A . B (or C += A . B) for one thread block: A and C in shared memory
 * (row-major, leading dimensions multiples of 8), B row-major in global memory (the radial
 * MLP's weights, padded on upload so every dimension is a multiple of 16).
 * M, N multiples of 16, K a multiple of 8. Every output has one owner and a fixed summation
 * order, so results are reproducible.
 *
 * Default: FMA loops, each thread a 4 x 4 register tile (4 shared loads and one 16-byte global
 * load feed 16 FMAs). float32 with tensor cores (block_gemm_tf32x3: TF32 with the 3-product
 * split a.b ~ a_lo.b_hi + a_hi.b_lo + a_hi.b_hi) is faster but measured at ~2e-6 relative error
 * per product (bench/gemm_precision.cu: the tensor cores' accumulation is not IEEE float32),
 * 10x float32's, which costs the float32 forces their 1e-4 eV/A margin; it is opt-in.
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
        wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
        if (accumulate)
            wmma::load_matrix_sync(acc, C + m0 * ldc + n0, ldc, wmma::mem_row_major);
        else
            wmma::fill_fragment(acc, 0.0f);
        for (int k0 = 0; k0 < K; k0 += 8) {
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
        }
        wmma::store_matrix_sync(C + m0 * ldc + n0, acc, ldc, wmma::mem_row_major);
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

template <typename REAL>
__device__ __forceinline__ void block_gemm(int M, int N, int K, const REAL *A, int lda,
                                           const REAL *B, int ldb, REAL *C, int ldc,
                                           bool accumulate, bool tensor_cores)
{
    if constexpr (sizeof(REAL) == 4)
        if (tensor_cores) {
            block_gemm_tf32x3(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
            return;
        }
    block_gemm_fma<REAL>(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

} // namespace fnqcu
