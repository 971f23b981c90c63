/*
 * block_gemm.cuh: C = A . B (or C += A . B) for one thread block: A and C in shared memory
 * (row-major, leading dimensions multiples of 8), B row-major in global memory (the radial
 * MLP's weights, padded on upload so every dimension is a multiple of 16).
 *
 * float: tensor cores, TF32 with the 3-product split (a = a_hi + a_lo, b = b_hi + b_lo;
 *        a.b ~ a_lo.b_hi + a_hi.b_lo + a_hi.b_hi) which keeps float32 accuracy; each warp owns
 *        16x16 output tiles and sums over K in a fixed order, so results are reproducible.
 * double: plain FMA loops, one output per thread and step.
 * M, N multiples of 16, K a multiple of 8.
 */
#pragma once

#include <mma.h>

namespace fnqcu {

template <typename REAL>
__device__ void block_gemm(int M, int N, int K, const REAL *A, int lda, const REAL *B, int ldb,
                           REAL *C, int ldc, bool accumulate);

template <>
__device__ __forceinline__ void block_gemm<float>(int M, int N, int K, const float *A, int lda,
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

template <>
__device__ __forceinline__ void block_gemm<double>(int M, int N, int K, const double *A, int lda,
                                                   const double *B, int ldb, double *C, int ldc,
                                                   bool accumulate)
{
    for (int idx = threadIdx.x; idx < M * N; idx += blockDim.x) {
        const int m = idx / N, n = idx % N;
        const double *a = A + m * lda;
        double s = 0.0;
        for (int k = 0; k < K; k++)
            s += a[k] * B[(int64_t)k * ldb + n];
        C[m * ldc + n] = accumulate ? C[m * ldc + n] + s : s;
    }
}

} // namespace fnqcu
