/*
 * gemm_3xtf32.cuh: a float32-accurate GEMM on Hopper's tensor cores, the Allegro engine's MLP
 * products (allegro_mlp.cu) where the GPU and the build allow it; cuBLAS' float32 GEMM
 * otherwise.
 *
 * Each operand value x is split into hi (x itself: the tensor core reads a TF32 operand's top
 * 19 bits) and lo = x - those bits (exact) rounded to TF32, and C = A_lo B_hi + A_hi B_lo +
 * A_hi B_hi is summed on the tensor cores in runs of 32 values of k, each run added to the
 * float32 sum outside them: largest error 4-5e-7 relative on the Allegro engine's shapes
 * against cuBLAS' float32 1e-6, at 1.45-1.8x its speed on an H200; but the tensor core's
 * accumulation truncates, so sums shrink toward zero by ~2.7e-7 on average (cuBLAS ~1e-9)
 * (bench/gemm_3xtf32.cu, bench/results/2026-11-29-h200-gemm-3xtf32-s47.md and -s48.md).
 * Deterministic: every value of C is summed in one order, whatever the launch.
 */
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

namespace fnqcu {

/* x's lo: x less its top 19 bits (what the tensor core reads of it; exact), rounded to TF32 to
 * nearest, ties away from zero (PTX cvt.rna.tf32.f32), for callers that keep an operand's lo */
__host__ __device__ __forceinline__ float tf32_lo(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    u &= 0xffffe000u;
    float part;
    memcpy(&part, &u, 4);
    part = x - part;
    memcpy(&u, &part, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) /* finite: round the 13 low mantissa bits away */
        u = (u + 0x1000u) & 0xffffe000u;
    memcpy(&part, &u, 4);
    return part;
}

/* whether gemm_3xtf32 runs on the current device: a build with sm_90a code (CMake's
 * architectures include 90) on a GPU of compute capability 9.0 */
bool gemm_3xtf32_available();

/* C (+)= A Bt^T: A rows x k and Bt n x k row-major (leading dimensions lda, ldb), C rows x n
 * (ldc), added to when add. A_lo, Bt_lo (may be null, else laid out as A and Bt): the
 * operands' tf32_lo where the caller has it (the weights' made once, an activation kernel's
 * written beside its output), made here otherwise (bench/gemm_3xtf32.cu: 1.8x cuBLAS' float32
 * GEMM, both from memory 2.0x). *done is false, nothing launched, where the operands do not
 * suit the tensor memory accelerator (each pointer 16-byte aligned and each leading dimension
 * a multiple of 4) or rows exceed what one launch covers: the caller then uses cuBLAS. A CUDA
 * error is returned, not recorded: the file stands alone (its test links it without the
 * library). */
cudaError_t gemm_3xtf32(cudaStream_t s, int rows, int n, int k, const float *A,
                        const float *A_lo, int lda, const float *Bt, const float *Bt_lo, int ldb,
                        bool add, float *C, int ldc, bool *done);

} // namespace fnqcu
