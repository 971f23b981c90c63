/*
 * device_buffer.cuh: device arrays that grow on demand and free themselves. A context's
 * buffers are reused from call to call; an allocation that moves bumps the context's epoch,
 * which makes a recorded CUDA graph (which holds the old addresses) stale.
 */
#pragma once

#include <algorithm>

#include "runtime/common.cuh"

namespace fnqcu {

template <typename T> struct DevBuf {
    T *p = nullptr;
    size_t cap = 0;

    DevBuf() = default;
    DevBuf(const DevBuf &) = delete;
    DevBuf &operator=(const DevBuf &) = delete;
    DevBuf(DevBuf &&o) noexcept : p(o.p), cap(o.cap) { o.p = nullptr, o.cap = 0; }
    ~DevBuf() { release(); }
    size_t bytes() const { return cap * sizeof(T); }
    void release()
    {
        if (p)
            cudaFree(p);
        p = nullptr, cap = 0;
    }
};

/* Host memory the GPU copies into asynchronously (cudaMallocHost), freed with its owner. */
template <typename T> struct PinnedBuf {
    T *p = nullptr;
    size_t cap = 0;

    PinnedBuf() = default;
    PinnedBuf(const PinnedBuf &) = delete;
    PinnedBuf &operator=(const PinnedBuf &) = delete;
    ~PinnedBuf()
    {
        if (p)
            cudaFreeHost(p);
    }
};

/* The message of a failed allocation: what was needed, and what the device has free. */
enum fnq_status out_of_memory(size_t bytes, const char *what);

/* The elements a buffer for n gets: headroom, so that MD with changing atom or edge counts
 * does not reallocate (and re-record the graph) every step. 1/64 at the first allocation, so
 * that the largest systems fit (a one-off evaluation, or an MD run whose counts stay within
 * it); 1/8 once a buffer had to grow, as MD with growing counts needs. */
static inline size_t grown_size(size_t n, bool regrow)
{
    return std::max<size_t>(n + (regrow ? n / 8 : n / 64), 16);
}

/* At least n elements in b (zeroed when newly allocated), or an out-of-memory message naming
 * `what`. */
template <typename T>
static enum fnq_status ensure(DevBuf<T> &b, size_t n, const char *what, int *epoch)
{
    if (n <= b.cap && b.p)
        return FNQ_STATUS_OK;
    const size_t want = grown_size(n, b.p != nullptr);
    b.release();
    (*epoch)++;
    cudaError_t err = cudaMalloc(&b.p, want * sizeof(T));
    if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        b.p = nullptr;
        return out_of_memory(want * sizeof(T), what);
    }
    FNQ_CUDA_CHECK(err);
    /* zeros: the padding of tiled rows (model_dev.cuh) is read but never written. The memset
     * runs on the legacy stream, which the context's non-blocking stream does not wait for:
     * finished here (allocations are rare) */
    FNQ_CUDA_CHECK(cudaMemset(b.p, 0, want * sizeof(T)));
    FNQ_CUDA_CHECK(cudaDeviceSynchronize());
    b.cap = want;
    return FNQ_STATUS_OK;
}

template <typename T> static enum fnq_status ensure(PinnedBuf<T> &b, size_t n, const char *what)
{
    if (n <= b.cap && b.p)
        return FNQ_STATUS_OK;
    const size_t want = grown_size(n, b.p != nullptr);
    if (b.p)
        cudaFreeHost(b.p);
    b.p = nullptr, b.cap = 0;
    cudaError_t err = cudaMallocHost(&b.p, want * sizeof(T));
    if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        b.p = nullptr;
        return fnq__fail(FNQ_STATUS_OUT_OF_MEMORY,
                         "out of pinned host memory: %.3g MB needed for %s",
                         want * sizeof(T) / 1e6, what);
    }
    FNQ_CUDA_CHECK(err);
    b.cap = want;
    return FNQ_STATUS_OK;
}

} // namespace fnqcu
