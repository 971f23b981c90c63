/*
 * halo_device.cu: the halo's rows on the GPU: the plan's lists uploaded once per routing, the
 * message buffers, and the four row operations of halo_rows.h as kernels (pack and unpack of
 * a forward exchange, pack and fixed-order sum of a reverse one) around the transport's move.
 */
#include <algorithm>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "halo.h"

namespace {

constexpr int kThreads = 256, kRowsPerBlock = kThreads / 32;

/* A warp per row, its lanes along the row: coalesced, and no division per element (the
 * element-wise kernels these replace spent most of their time in 64-bit divisions and ran at
 * about a third of the memory's speed; bench/results/2026-11-26-h100x4-halo.jsonl) */
int row_blocks(int64_t rows)
{
    return (int)std::min<int64_t>((rows + kRowsPerBlock - 1) / kRowsPerBlock, 1 << 20);
}

/* dst row (dst_index ? dst_index[s] : s) = src row (src_index ? src_index[s] : s): the pack
 * (gather into message slots) and the unpack (scatter into ghost rows), in units T of 4, 8 or
 * 16 bytes, w of them per row */
template <typename T>
__global__ void copy_rows_kernel(const T *__restrict__ src, const int64_t *__restrict__ src_index,
                                 T *__restrict__ dst, const int64_t *__restrict__ dst_index,
                                 int64_t n, int w)
{
    const int lane = threadIdx.x % 32;
    for (int64_t s = blockIdx.x * (int64_t)kRowsPerBlock + threadIdx.x / 32; s < n;
         s += (int64_t)gridDim.x * kRowsPerBlock) {
        const T *from = src + (src_index ? src_index[s] : s) * w;
        T *to = dst + (dst_index ? dst_index[s] : s) * w;
        for (int c = lane; c < w; c += 32)
            to[c] = from[c];
    }
}

/* the widest unit (16, 8 or 4 bytes) that a row's bytes and both base addresses allow */
int copy_unit(const void *a, const void *b, size_t row_bytes)
{
    const uintptr_t bits = (uintptr_t)a | (uintptr_t)b | (uintptr_t)row_bytes;
    return bits % 16 == 0 ? 16 : bits % 8 == 0 ? 8 : 4;
}

void copy_rows(const void *src, const int64_t *src_index, void *dst, const int64_t *dst_index,
               int64_t n, size_t row_bytes, cudaStream_t st)
{
    if (n <= 0)
        return;
    const int unit = copy_unit(src, dst, row_bytes), w = (int)(row_bytes / unit);
    if (unit == 16)
        copy_rows_kernel<<<row_blocks(n), kThreads, 0, st>>>(
            static_cast<const uint4 *>(src), src_index, static_cast<uint4 *>(dst), dst_index, n, w);
    else if (unit == 8)
        copy_rows_kernel<<<row_blocks(n), kThreads, 0, st>>>(
            static_cast<const uint2 *>(src), src_index, static_cast<uint2 *>(dst), dst_index, n, w);
    else
        copy_rows_kernel<<<row_blocks(n), kThreads, 0, st>>>(
            static_cast<const uint32_t *>(src), src_index, static_cast<uint32_t *>(dst),
            dst_index, n, w);
}

/* owned row sum_atom[k] += its slots, one after the other in the plan's order: each value has
 * one thread and one order of additions, so the sums are the same in every run */
template <typename REAL>
__global__ void sum_rows_kernel(const REAL *__restrict__ buf, int width,
                                const int64_t *__restrict__ atom, const int64_t *__restrict__ start,
                                const int64_t *__restrict__ slot, int64_t n, REAL *__restrict__ rows)
{
    const int lane = threadIdx.x % 32;
    for (int64_t k = blockIdx.x * (int64_t)kRowsPerBlock + threadIdx.x / 32; k < n;
         k += (int64_t)gridDim.x * kRowsPerBlock) {
        REAL *to = rows + atom[k] * width;
        const int64_t q0 = start[k], q1 = start[k + 1];
        for (int c = lane; c < width; c += 32) {
            REAL v = to[c];
            for (int64_t q = q0; q < q1; q++)
                v += buf[slot[q] * width + c];
            to[c] = v;
        }
    }
}

enum fnq_status cuda_failed(cudaError_t e, const char *what)
{
    cudaGetLastError();
    return halo_fail(e == cudaErrorMemoryAllocation ? FNQ_STATUS_OUT_OF_MEMORY : FNQ_STATUS_DEVICE,
                     "ghost exchange: %s: %s", what, cudaGetErrorString(e));
}

#define HALO_CUDA(expr, what)                                                                   \
    do {                                                                                        \
        cudaError_t halo_err_ = (expr);                                                         \
        if (halo_err_ != cudaSuccess)                                                           \
            return cuda_failed(halo_err_, what);                                                \
    } while (0)

/* 0 when the kernels just enqueued launched, else 1 with the message */
int launched(const char *what)
{
    const cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        return 0;
    cuda_failed(e, what);
    return 1;
}

enum fnq_status grow(void **p, size_t *cap, size_t bytes, const char *what)
{
    if (bytes <= *cap && *p)
        return FNQ_STATUS_OK;
    if (*p)
        cudaFree(*p);
    *p = nullptr;
    *cap = 0;
    const size_t want = std::max<size_t>(bytes + bytes / 8, 256);
    cudaError_t e = cudaMalloc(p, want);
    if (e != cudaSuccess) {
        *p = nullptr;
        size_t free_b = 0, total_b = 0;
        cudaGetLastError();
        cudaMemGetInfo(&free_b, &total_b);
        return halo_fail(FNQ_STATUS_OUT_OF_MEMORY,
                         "GPU out of memory: %.3g MB needed for %s, %.3g MB free of %.3g MB",
                         want / 1e6, what, free_b / 1e6, total_b / 1e6);
    }
    *cap = want;
    return FNQ_STATUS_OK;
}

template <typename REAL>
int forward_rows(struct fnq_halo *h, REAL *rows, int width, cudaStream_t st)
{
    const struct fnq_halo_plan *p = &h->plan;
    const struct halo_device *d = &h->dev;
    const int64_t n_send = fnq_halo_plan_n_send(p), n_recv = fnq_halo_plan_n_recv(p);
    REAL *send = static_cast<REAL *>(d->fwd_buf), *recv = static_cast<REAL *>(d->bwd_buf);
    halo_lap(h, st, nullptr);
    copy_rows(rows, d->send_index, send, nullptr, n_send, sizeof(REAL) * width, st);
    halo_lap(h, st, &h->stats.t_pack);
    if (h->transport->move(h, send, p->send_start, recv, p->recv_start, sizeof(REAL) * width,
                           st) != FNQ_STATUS_OK)
        return 1;
    halo_lap(h, st, &h->stats.t_move);
    copy_rows(recv, nullptr, rows, d->recv_index, n_recv, sizeof(REAL) * width, st);
    halo_lap(h, st, &h->stats.t_unpack);
    return launched("unpacking received ghost rows");
}

template <typename REAL>
int reverse_rows(struct fnq_halo *h, REAL *rows, int width, cudaStream_t st)
{
    const struct fnq_halo_plan *p = &h->plan;
    const struct halo_device *d = &h->dev;
    const int64_t n_recv = fnq_halo_plan_n_recv(p);
    REAL *ghosts = static_cast<REAL *>(d->bwd_buf), *owned = static_cast<REAL *>(d->fwd_buf);
    halo_lap(h, st, nullptr);
    copy_rows(rows, d->recv_index, ghosts, nullptr, n_recv, sizeof(REAL) * width, st);
    halo_lap(h, st, &h->stats.t_pack);
    if (h->transport->move(h, ghosts, p->recv_start, owned, p->send_start, sizeof(REAL) * width,
                           st) != FNQ_STATUS_OK)
        return 1;
    halo_lap(h, st, &h->stats.t_move);
    if (p->n_sum > 0)
        sum_rows_kernel<REAL><<<row_blocks(p->n_sum), kThreads, 0, st>>>(
            owned, width, d->sum_atom, d->sum_start, d->sum_slot, p->n_sum, rows);
    halo_lap(h, st, &h->stats.t_unpack);
    return launched("summing ghost rows into their owners");
}

int check_width(struct fnq_halo *h, int32_t width, enum fnq_dtype dtype)
{
    const size_t bytes = (size_t)width * (dtype == FNQ_DTYPE_F64 ? 8 : 4);
    if (dtype != FNQ_DTYPE_F32 && dtype != FNQ_DTYPE_F64) {
        halo_fail(FNQ_STATUS_INVALID_ARG, "ghost exchange: rows of unknown dtype %d", (int)dtype);
        return 1;
    }
    if (bytes > h->dev.row_bytes) {
        halo_fail(FNQ_STATUS_INVALID_ARG,
                  "ghost exchange: rows of %zu bytes, but the routing was set for at most %zu "
                  "(fnq_halo_set_routing's row_bytes)",
                  bytes, h->dev.row_bytes);
        return 1;
    }
    return 0;
}

} // namespace

extern "C" enum fnq_status halo_device_upload(struct fnq_halo *h, size_t row_bytes)
{
    struct halo_device *d = &h->dev;
    const struct fnq_halo_plan *p = &h->plan;
    const int64_t n_send = fnq_halo_plan_n_send(p), n_recv = fnq_halo_plan_n_recv(p);
    HALO_CUDA(cudaSetDevice(h->device), "cudaSetDevice");
    /* the five lists in one allocation: send, recv, sum atoms, sum starts, sum slots */
    const size_t count = (size_t)(n_send + n_recv + p->n_sum + (p->n_sum + 1) + n_send);
    void *block = d->send_index;
    HALO_CHECK(grow(&block, &d->index_cap, sizeof(int64_t) * count, "the ghost exchange's lists"));
    d->send_index = static_cast<int64_t *>(block);
    d->recv_index = d->send_index + n_send;
    d->sum_atom = d->recv_index + n_recv;
    d->sum_start = d->sum_atom + p->n_sum;
    d->sum_slot = d->sum_start + p->n_sum + 1;
    const cudaMemcpyKind h2d = cudaMemcpyHostToDevice;
    HALO_CUDA(cudaMemcpy(d->send_index, p->send_index, sizeof(int64_t) * n_send, h2d), "lists");
    HALO_CUDA(cudaMemcpy(d->recv_index, p->recv_index, sizeof(int64_t) * n_recv, h2d), "lists");
    HALO_CUDA(cudaMemcpy(d->sum_atom, p->sum_atom, sizeof(int64_t) * p->n_sum, h2d), "lists");
    HALO_CUDA(cudaMemcpy(d->sum_start, p->sum_start, sizeof(int64_t) * (p->n_sum + 1), h2d),
              "lists");
    HALO_CUDA(cudaMemcpy(d->sum_slot, p->sum_slot, sizeof(int64_t) * n_send, h2d), "lists");
    HALO_CHECK(grow(&d->fwd_buf, &d->fwd_cap, row_bytes * (size_t)n_send, "ghost rows to send"));
    HALO_CHECK(grow(&d->bwd_buf, &d->bwd_cap, row_bytes * (size_t)n_recv, "ghost rows received"));
    d->row_bytes = row_bytes;
    return FNQ_STATUS_OK;
}

extern "C" void halo_device_free(struct halo_device *d)
{
    cudaFree(d->send_index);
    cudaFree(d->fwd_buf);
    cudaFree(d->bwd_buf);
    memset(d, 0, sizeof(*d));
}

extern "C" int halo_device_forward(struct fnq_halo *h, void *rows, int32_t width,
                                   enum fnq_dtype dtype, cudaStream_t stream)
{
    if (check_width(h, width, dtype))
        return 1;
    return dtype == FNQ_DTYPE_F64 ? forward_rows(h, static_cast<double *>(rows), width, stream)
                                  : forward_rows(h, static_cast<float *>(rows), width, stream);
}

extern "C" int halo_device_reverse(struct fnq_halo *h, void *rows, int32_t width,
                                   enum fnq_dtype dtype, cudaStream_t stream)
{
    if (check_width(h, width, dtype))
        return 1;
    return dtype == FNQ_DTYPE_F64 ? reverse_rows(h, static_cast<double *>(rows), width, stream)
                                  : reverse_rows(h, static_cast<float *>(rows), width, stream);
}
