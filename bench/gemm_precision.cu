/*
 * gemm_precision.cu: how accurate are the block GEMM variants the kernels could use, on random
 * data, against a double reference (64 x 64 output, K = 272, as in the radial-MLP gradient)?
 *   wmma3x  : WMMA tf32 fragments, 3-product split of the loaded fragment elements
 *   mma3x   : mma.sync m16n8k8 tf32 with explicit fragment layouts, split from the raw floats
 *   wmma3x-c1, wmma3x-c4 : wmma3x, but each chunk of 8 (or 32) k starts from a zero tensor-core
 *             accumulator and is added to the running sum with float32 adds
 *   wmma1x  : WMMA tf32, one product
 *   fp32    : FMA loops
 * Build: nvcc -arch=sm_90 -O3 bench/gemm_precision.cu -o gemm_precision
 */
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mma.h>
#include <vector>

using namespace nvcuda;

constexpr int M = 64, N = 64, K = 272;

__device__ __forceinline__ unsigned to_tf32(float v)
{
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

__global__ void gemm_wmma(const float *A, const float *B, float *C, int split, int chunk)
{
    const int warp = threadIdx.x / 32;
    for (int t = warp; t < (M / 16) * (N / 16); t += blockDim.x / 32) {
        const int m0 = (t / (N / 16)) * 16, n0 = (t % (N / 16)) * 16;
        wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc, total;
        wmma::fill_fragment(acc, 0.0f);
        wmma::fill_fragment(total, 0.0f);
        for (int k0 = 0; k0 < K; k0 += 8) {
            if (chunk && k0 % (8 * chunk) == 0 && k0 > 0) {
                for (int q = 0; q < acc.num_elements; q++)
                    total.x[q] += acc.x[q];
                wmma::fill_fragment(acc, 0.0f);
            }
            wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> ah, al;
            wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> bh, bl;
            wmma::load_matrix_sync(ah, A + m0 * K + k0, K);
            wmma::load_matrix_sync(bh, B + k0 * N + n0, N);
            for (int q = 0; q < ah.num_elements; q++) {
                float v = ah.x[q];
                ah.x[q] = wmma::__float_to_tf32(v);
                al.x[q] = wmma::__float_to_tf32(v - ah.x[q]);
            }
            for (int q = 0; q < bh.num_elements; q++) {
                float v = bh.x[q];
                bh.x[q] = wmma::__float_to_tf32(v);
                bl.x[q] = wmma::__float_to_tf32(v - bh.x[q]);
            }
            if (split) {
                wmma::mma_sync(acc, al, bh, acc);
                wmma::mma_sync(acc, ah, bl, acc);
            }
            wmma::mma_sync(acc, ah, bh, acc);
        }
        for (int q = 0; q < acc.num_elements; q++)
            total.x[q] += acc.x[q];
        wmma::store_matrix_sync(C + m0 * N + n0, total, N, wmma::mem_row_major);
    }
}

__device__ __forceinline__ void mma_tf32(float *d, const unsigned *a, const unsigned *b)
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__global__ void gemm_mma(const float *A, const float *B, float *C)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane >> 2, tg = lane & 3;
    for (int t = warp; t < (M / 16) * (N / 8); t += blockDim.x / 32) {
        const int m0 = (t / (N / 8)) * 16, n0 = (t % (N / 8)) * 8;
        float d[4] = {0, 0, 0, 0};
        for (int k0 = 0; k0 < K; k0 += 8) {
            const float av[4] = {A[(m0 + g) * K + k0 + tg], A[(m0 + g + 8) * K + k0 + tg],
                                 A[(m0 + g) * K + k0 + tg + 4], A[(m0 + g + 8) * K + k0 + tg + 4]};
            const float bv[2] = {B[(k0 + tg) * N + n0 + g], B[(k0 + tg + 4) * N + n0 + g]};
            unsigned ah[4], al[4], bh[2], bl[2];
            for (int q = 0; q < 4; q++) {
                ah[q] = to_tf32(av[q]);
                al[q] = to_tf32(av[q] - __uint_as_float(ah[q]));
            }
            for (int q = 0; q < 2; q++) {
                bh[q] = to_tf32(bv[q]);
                bl[q] = to_tf32(bv[q] - __uint_as_float(bh[q]));
            }
            mma_tf32(d, al, bh);
            mma_tf32(d, ah, bl);
            mma_tf32(d, ah, bh);
        }
        C[(m0 + g) * N + n0 + 2 * tg] = d[0];
        C[(m0 + g) * N + n0 + 2 * tg + 1] = d[1];
        C[(m0 + g + 8) * N + n0 + 2 * tg] = d[2];
        C[(m0 + g + 8) * N + n0 + 2 * tg + 1] = d[3];
    }
}

__global__ void gemm_fp32(const float *A, const float *B, float *C)
{
    for (int idx = threadIdx.x; idx < M * N; idx += blockDim.x) {
        const int m = idx / N, n = idx % N;
        float s = 0;
        for (int k = 0; k < K; k++)
            s += A[m * K + k] * B[k * N + n];
        C[idx] = s;
    }
}

int main()
{
    std::vector<float> A(M * K), B(K * N), C(M * N);
    std::vector<double> ref(M * N, 0.0);
    srand(1);
    for (auto &v : A)
        v = (float)(rand() / (double)RAND_MAX - 0.5) * 3.0f;
    for (auto &v : B)
        v = (float)(rand() / (double)RAND_MAX - 0.5) * 0.2f;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++)
            for (int k = 0; k < K; k++)
                ref[m * N + n] += (double)A[m * K + k] * (double)B[k * N + n];
    float *dA, *dB, *dC;
    cudaMalloc(&dA, A.size() * 4);
    cudaMalloc(&dB, B.size() * 4);
    cudaMalloc(&dC, C.size() * 4);
    cudaMemcpy(dA, A.data(), A.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dB, B.data(), B.size() * 4, cudaMemcpyHostToDevice);
    const char *names[6] = {"wmma3x", "mma3x", "wmma1x", "fp32", "wmma3x-c1", "wmma3x-c4"};
    for (int v = 0; v < 6; v++) {
        cudaMemset(dC, 0xff, C.size() * 4);
        if (v == 0) gemm_wmma<<<1, 256>>>(dA, dB, dC, 1, 0);
        if (v == 1) gemm_mma<<<1, 256>>>(dA, dB, dC);
        if (v == 2) gemm_wmma<<<1, 256>>>(dA, dB, dC, 0, 0);
        if (v == 3) gemm_fp32<<<1, 256>>>(dA, dB, dC);
        if (v == 4) gemm_wmma<<<1, 256>>>(dA, dB, dC, 1, 1);
        if (v == 5) gemm_wmma<<<1, 256>>>(dA, dB, dC, 1, 4);
        cudaError_t e = cudaDeviceSynchronize();
        cudaMemcpy(C.data(), dC, C.size() * 4, cudaMemcpyDeviceToHost);
        double num = 0, den = 0, mx = 0;
        for (int i = 0; i < M * N; i++) {
            num += (C[i] - ref[i]) * (C[i] - ref[i]);
            den += ref[i] * ref[i];
            mx = fmax(mx, fabs(C[i] - ref[i]));
        }
        printf("%-9s %s  rel l2 error %.3e  max abs error %.3e\n", names[v],
               e == cudaSuccess ? "ok " : cudaGetErrorString(e), sqrt(num / den), mx);
    }
    return 0;
}
