/*
 * common.cuh: what every CUDA file of the backend shares: the error macro (records the failing
 * statement, file:line and the CUDA error, returns a status; never exits), the core's private
 * headers, and small device helpers.
 */
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "backend/backend.h"
#include "model/model.h"
#include "api/status.h"
}

/* Evaluate a CUDA runtime call; on failure record the error and return a status. */
#define FNQ_CUDA_CHECK(expr)                                                                    \
    do {                                                                                        \
        cudaError_t fnq_err_ = (expr);                                                          \
        if (fnq_err_ != cudaSuccess) {                                                          \
            int fnq_dev_ = -1;                                                                  \
            cudaGetDevice(&fnq_dev_);                                                           \
            return fnq__fail(fnq_err_ == cudaErrorMemoryAllocation ? FNQ_STATUS_OUT_OF_MEMORY  \
                                                                    : FNQ_STATUS_DEVICE,       \
                             "CUDA error %s (%s) on device %d in %s at %s:%d",                  \
                             cudaGetErrorName(fnq_err_), cudaGetErrorString(fnq_err_),          \
                             fnq_dev_, #expr, __FILE__, __LINE__);                              \
        }                                                                                       \
    } while (0)

/* After a kernel launch: launch-configuration errors surface here. */
#define FNQ_CUDA_LAUNCHED() FNQ_CUDA_CHECK(cudaGetLastError())

/* One number per tensor-product path (l1, l2, l3), each l <= 7: the switch labels over the
 * generated paths (tp_code.inc's FNQ_TP_PATHS), for NequIP's and Allegro's kernels alike. */
#define FNQ_TP_CODE(l1, l2, l3) ((l1) * 64 + (l2) * 8 + (l3))

namespace fnqcu {

template <typename REAL> __device__ __forceinline__ REAL act_apply(int kind, REAL scale, REAL x);
template <typename REAL> __device__ __forceinline__ REAL act_deriv(int kind, REAL scale, REAL x);

__device__ __forceinline__ float dexp(float x) { return expf(x); }
__device__ __forceinline__ double dexp(double x) { return exp(x); }
__device__ __forceinline__ float dtanh(float x) { return tanhf(x); }
__device__ __forceinline__ double dtanh(double x) { return tanh(x); }
__device__ __forceinline__ float dlog1p(float x) { return log1pf(x); }
__device__ __forceinline__ double dlog1p(double x) { return log1p(x); }
__device__ __forceinline__ float derf(float x) { return erff(x); }
__device__ __forceinline__ double derf(double x) { return erf(x); }
/* log(1 + e^x), torch's threshold 20 */
template <typename REAL> __device__ __forceinline__ REAL softplus(REAL x)
{
    return x > REAL(20) ? x : dlog1p(dexp(x));
}

/* enum fnq_act: 0 identity, 1 silu, 2 tanh, 3 ssp, 4 abs, 5 sigmoid, 6 mish, 7 gelu (exact),
 * 8 softplus */
template <typename REAL> __device__ __forceinline__ REAL act_apply(int kind, REAL scale, REAL x)
{
    REAL v;
    switch (kind) {
    case 1: v = x / (REAL(1) + dexp(-x)); break;
    case 2: v = dtanh(x); break;
    case 3: v = softplus(x) - REAL(0.69314718055994530942); break;
    case 4: v = x < REAL(0) ? -x : x; break;
    case 5: v = REAL(1) / (REAL(1) + dexp(-x)); break;
    case 6: v = x * dtanh(softplus(x)); break;
    case 7: v = REAL(0.5) * x * (REAL(1) + derf(x * REAL(0.70710678118654752440))); break;
    case 8: v = softplus(x); break;
    default: v = x; break;
    }
    return v * scale;
}

template <typename REAL> __device__ __forceinline__ REAL act_deriv(int kind, REAL scale, REAL x)
{
    REAL d;
    switch (kind) {
    case 1: {
        REAL s = REAL(1) / (REAL(1) + dexp(-x));
        d = s * (REAL(1) + x * (REAL(1) - s));
        break;
    }
    case 2: {
        REAL t = dtanh(x);
        d = REAL(1) - t * t;
        break;
    }
    case 3: d = REAL(1) / (REAL(1) + dexp(-x)); break;
    case 4: d = x > REAL(0) ? REAL(1) : (x < REAL(0) ? REAL(-1) : REAL(0)); break;
    case 5: {
        REAL s = REAL(1) / (REAL(1) + dexp(-x));
        d = s * (REAL(1) - s);
        break;
    }
    case 6: {
        const REAL t = dtanh(softplus(x)), s = REAL(1) / (REAL(1) + dexp(-x));
        d = t + x * (REAL(1) - t * t) * s;
        break;
    }
    case 7:
        d = REAL(0.5) * (REAL(1) + derf(x * REAL(0.70710678118654752440))) +
            x * dexp(REAL(-0.5) * x * x) * REAL(0.39894228040143267794);
        break;
    case 8: d = REAL(1) / (REAL(1) + dexp(-x)); break;
    default: d = REAL(1); break;
    }
    return d * scale;
}

/* Four consecutive values (16-byte aligned in float32, 32 in float64): one vector load in
 * float32, two in float64 (table rows, weight quads of node_ops.cuh) */
__device__ __forceinline__ void load_quad(const float *p, float (&f)[4])
{
    const float4 v = __ldg(reinterpret_cast<const float4 *>(p));
    f[0] = v.x;
    f[1] = v.y;
    f[2] = v.z;
    f[3] = v.w;
}
__device__ __forceinline__ void load_quad(const double *p, double (&f)[4])
{
    const double2 a = __ldg(reinterpret_cast<const double2 *>(p));
    const double2 b = __ldg(reinterpret_cast<const double2 *>(p) + 1);
    f[0] = a.x;
    f[1] = a.y;
    f[2] = b.x;
    f[3] = b.y;
}

/* load_quad for data this kernel may have written (global rows written before a
 * __syncthreads, shared memory): coherent loads, not the read-only path */
__device__ __forceinline__ void load_quad_coherent(const float *p, float (&f)[4])
{
    const float4 v = *reinterpret_cast<const float4 *>(p);
    f[0] = v.x;
    f[1] = v.y;
    f[2] = v.z;
    f[3] = v.w;
}
__device__ __forceinline__ void load_quad_coherent(const double *p, double (&f)[4])
{
    const double2 a = reinterpret_cast<const double2 *>(p)[0];
    const double2 b = reinterpret_cast<const double2 *>(p)[1];
    f[0] = a.x;
    f[1] = a.y;
    f[2] = b.x;
    f[3] = b.y;
}

} // namespace fnqcu
