/*
 * allegro_mlp.cu: Allegro's scalar MLPs as cuBLAS GEMMs over a chunk's rows (allegro_mlp.cuh).
 * Row-major arrays are column-major transposes to cuBLAS: Y = X W is Y^T = W^T X^T, and the
 * backward G W^T is W G^T; a block of W (a range of its rows and columns) is W's pointer moved
 * to the block's corner with W's own leading dimension. With FNQ_TF32=1 a float32 GEMM is one
 * TF32 GEMM of split operands over three times the contraction (allegro_mlp.cuh, Gemm); on
 * Hopper, float32 GEMMs are gemm_3xtf32's (float32-accurate, ~1.8x cuBLAS) where the operands
 * suit the TMA, cuBLAS' elsewhere.
 */
#include <mma.h>
#include <stdint.h>
#include <string.h>

#include <vector>

#include "allegro/allegro_mlp.cuh"
#include "gemm/gemm_3xtf32.cuh"

namespace fnqcu {
namespace allegro {
namespace {

constexpr int kBlock = 256;

const char *blas_status_name(cublasStatus_t st)
{
    switch (st) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "cuBLAS error";
    }
}

enum fnq_status blas_check(cublasStatus_t st, int rows, int m, int k)
{
    if (st == CUBLAS_STATUS_SUCCESS)
        return FNQ_STATUS_OK;
    return fnq__fail(st == CUBLAS_STATUS_ALLOC_FAILED ? FNQ_STATUS_OUT_OF_MEMORY
                                                      : FNQ_STATUS_DEVICE,
                     "cuBLAS GEMM of an Allegro MLP (%d rows, %d x %d) failed: %s", rows, k, m,
                     blas_status_name(st));
}

cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, int m, int n, int k, const float *A,
                    int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    const float one = 1.0f;
    return cublasSgemm(h, ta, CUBLAS_OP_N, m, n, k, &one, A, lda, B, ldb, &beta, C, ldc);
}
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, int m, int n, int k, const double *A,
                    int lda, const double *B, int ldb, double beta, double *C, int ldc)
{
    const double one = 1.0;
    return cublasDgemm(h, ta, CUBLAS_OP_N, m, n, k, &one, A, lda, B, ldb, &beta, C, ldc);
}
/* one TF32 product (the operands are rounded to TF32, the sums float32) */
cublasStatus_t gemm_tf32(cublasHandle_t h, cublasOperation_t ta, int m, int n, int k,
                         const float *A, int lda, const float *B, int ldb, float beta, float *C,
                         int ldc)
{
    const float one = 1.0f;
    return cublasGemmEx(h, ta, CUBLAS_OP_N, m, n, k, &one, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb,
                        &beta, C, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F_FAST_TF32,
                        CUBLAS_GEMM_DEFAULT);
}

/* v as the (hi, lo, hi) triple at t: hi = v rounded to TF32 (nearest), lo = v - hi */
__device__ __forceinline__ void put_triple(float v, float *t)
{
    const float h = nvcuda::wmma::__float_to_tf32(v);
    t[0] = h, t[1] = v - h, t[2] = h;
}

/* x's values as triples: rows x cols values at x (leading ld) into t (3 cols values a row) */
__global__ void split_kernel(int cols, const float *x, int ld, float *t)
{
    const float *xr = x + (int64_t)blockIdx.x * ld;
    float *tr = t + (int64_t)blockIdx.x * 3 * cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        put_triple(xr[c], tr + 3 * c);
}

/* gemm_3xtf32's operand Bt: op(W block) as m x k row-major (leading dimension ldb) and its lo */
template <typename REAL> struct TensorCoreB {
    const REAL *bt = nullptr, *bt_lo = nullptr;
    int ldb = 0;
};

/* C (+)= op(W block) A for `rows` rows: exact, or (A3: A's triples, W3 its block's triples,
 * ldw3 their leading dimension) as the 3xTF32 sum in one TF32 GEMM, or by gemm_3xtf32 (tc.bt
 * set) where the operands suit it, A's lo and the block's from memory where they are there */
template <typename REAL>
enum fnq_status product(const Gemm<REAL> &g, cublasOperation_t ta, int m, int rows, int k,
                        const REAL *W, int ldw, const REAL *W3, int ldw3,
                        const TensorCoreB<REAL> &tc, const Cols<REAL> &A, const REAL *A3,
                        REAL beta, REAL *C, int ldc)
{
    if constexpr (sizeof(REAL) == sizeof(float)) {
        if (A3)
            return blas_check(gemm_tf32(g.h, ta, m, rows, 3 * k, W3, ldw3, A3, 3 * k, beta, C,
                                        ldc),
                              rows, m, k);
        if (tc.bt) {
            bool done;
            FNQ_CUDA_CHECK(gemm_3xtf32(g.s, rows, m, k, A.p, A.lo, A.ld, tc.bt, tc.bt_lo, tc.ldb,
                                       beta != 0, C, ldc, &done));
            if (done)
                return FNQ_STATUS_OK;
        }
    }
    (void)W3, (void)ldw3, (void)A3, (void)tc;
    return blas_check(gemm(g.h, ta, m, rows, k, W, ldw, A.p, A.ld, beta, C, ldc), rows, m, k);
}

/* An operand range's triples for the 3xTF32 product in g.split, or null */
template <typename REAL>
enum fnq_status split_range(const Gemm<REAL> &g, int rows, const Cols<REAL> &A, const REAL **a3)
{
    *a3 = nullptr;
    if constexpr (sizeof(REAL) == sizeof(float)) {
        if (g.tf32) {
            split_kernel<<<rows, kBlock, 0, g.s>>>(A.cols, A.p, A.ld, g.split);
            FNQ_CUDA_LAUNCHED();
            *a3 = g.split;
        }
    }
    return FNQ_STATUS_OK;
}

/* y ranges (+)= x ranges x op(W_k), each (x, y) pair of ranges its block of W_k:
 *   op N, forward: x the layer's inputs (rows of W_k), y its outputs (columns);
 *   op T, backward: x the outputs' gradients (columns), y the inputs' (rows).
 * The first x range sets y (beta 0) unless add[b] asks y range b to be added to. */
template <typename REAL>
enum fnq_status gemm_blocks(const Gemm<REAL> &g, const Mlp<REAL> &m, int k, cublasOperation_t op,
                            int rows, const Cols<REAL> *x, int nx, const Cols<REAL> *y,
                            const int *add, int ny)
{
    const int ldw = m.dim[k + 1];
    /* the triples' block: w3's rows are W's rows x 3 (forward), w3t's columns W's x 3 */
    const bool fwd = op == CUBLAS_OP_N;
    const int ldw3 = fwd ? ldw : 3 * ldw;
    const REAL *w3 = fwd ? m.w3[k] : m.w3t[k];
    int xo = 0;
    for (int a = 0; a < nx; a++) {
        const REAL *a3 = x[a].split;
        if (!a3)
            FNQ_CHECK(split_range(g, rows, x[a], &a3));
        int yo = 0;
        for (int b = 0; b < ny; b++) {
            const int64_t at = fwd ? (int64_t)xo * ldw + yo : (int64_t)yo * ldw + xo;
            const int64_t at3 = fwd ? 3 * (int64_t)xo * ldw + yo : (int64_t)yo * ldw3 + 3 * xo;
            const REAL beta = (a > 0 || (add && add[b])) ? REAL(1) : REAL(0);
            /* the block as gemm_3xtf32's Bt (y's columns x x's): W^T's (forward), W's own */
            TensorCoreB<REAL> tc;
            if (g.tensor_cores) {
                const int64_t at_t = (int64_t)yo * m.dim[k] + xo;
                tc = fwd ? TensorCoreB<REAL>{m.wt[k] + at_t, m.wt_lo[k] + at_t, m.dim[k]}
                         : TensorCoreB<REAL>{m.w[k] + at, m.w_lo[k] + at, ldw};
            }
            FNQ_CHECK(product(g, op, y[b].cols, rows, x[a].cols, m.w[k] + at, ldw,
                              w3 ? w3 + at3 : nullptr, ldw3, tc, x[a], a3, beta, y[b].p,
                              y[b].ld));
            yo += y[b].cols;
        }
        xo += x[a].cols;
    }
    return FNQ_STATUS_OK;
}

/* h = act(pre) (forward), or h *= act'(pre) where h holds the gradient (backward); a block a
 * row (blockIdx.x), so no thread divides a 64-bit index. With t3 (the 3xTF32 GEMMs) the
 * result goes to t3 as triples instead, the next GEMM's operand: h is not written. With lo
 * (gemm_3xtf32) the result's lo goes beside it, laid out as h, for the next GEMM to read.
 * Memory-bound: a thread loads its kActValues values before it computes and stores any, so
 * they are in flight together (one at a time, a 1,024-wide row ran at ~70 % of the memory's
 * rate); the arrays never overlap (__restrict__). */
constexpr int kActValues = 4;
template <typename REAL>
__global__ void act_kernel(int cols, REAL *__restrict__ h, const REAL *__restrict__ pre,
                           int ld_pre, int kind, REAL scale, int backward,
                           float *__restrict__ t3, float *__restrict__ lo)
{
    REAL *hr = h + (int64_t)blockIdx.x * cols;
    const REAL *pr = pre + (int64_t)blockIdx.x * ld_pre;
    float *tr = t3 ? t3 + (int64_t)blockIdx.x * 3 * cols : nullptr;
    float *lr = lo ? lo + (int64_t)blockIdx.x * cols : nullptr;
    for (int c0 = threadIdx.x; c0 < cols; c0 += kActValues * blockDim.x) {
        REAL x[kActValues], g[kActValues];
#pragma unroll
        for (int j = 0; j < kActValues; j++) {
            const int c = c0 + j * blockDim.x;
            x[j] = c < cols ? pr[c] : REAL(0);
            g[j] = backward && c < cols ? hr[c] : REAL(0);
        }
#pragma unroll
        for (int j = 0; j < kActValues; j++) {
            const int c = c0 + j * blockDim.x;
            if (c >= cols)
                break;
            const REAL v = backward ? g[j] * act_deriv<REAL>(kind, scale, x[j])
                                    : act_apply<REAL>(kind, scale, x[j]);
            if (tr) {
                put_triple((float)v, tr + 3 * c);
                continue;
            }
            hr[c] = v;
            if (lr)
                lr[c] = tf32_lo((float)v);
        }
    }
}

/* the activation over rows x cols (act_kernel); *x the result as the next GEMM's operand: h,
 * or with the 3xTF32 GEMMs its triples in g.split; lo (gemm_3xtf32, may be null): where h's
 * lo goes */
template <typename REAL>
enum fnq_status activation(const Gemm<REAL> &g, const Mlp<REAL> &m, int rows, int cols, REAL *h,
                           const REAL *pre, int backward, REAL *lo, Cols<REAL> *x)
{
    float *t3 = nullptr, *lo32 = nullptr;
    if constexpr (sizeof(REAL) == sizeof(float))
        t3 = g.tf32 ? g.split : nullptr, lo32 = lo;
    act_kernel<<<rows, cols < 256 ? 128 : 256, 0, g.s>>>(cols, h, pre, m.n_pre, m.act_kind,
                                                          m.act_scale, backward, t3, lo32);
    FNQ_CUDA_LAUNCHED();
    *x = {h, cols, cols, reinterpret_cast<const REAL *>(t3), lo32 ? lo : nullptr};
    return FNQ_STATUS_OK;
}

} // namespace

template <typename REAL> enum fnq_status to_device(const std::vector<REAL> &host, REAL **d)
{
    FNQ_CUDA_CHECK(cudaMalloc(d, sizeof(REAL) * (host.empty() ? 1 : host.size())));
    FNQ_CUDA_CHECK(cudaMemcpy(*d, host.data(), sizeof(REAL) * host.size(),
                              cudaMemcpyHostToDevice));
    return FNQ_STATUS_OK;
}

/* the TF32 part of x (round to nearest, ties away: PTX cvt.rna.tf32.f32), on the host */
float tf32_part(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) /* finite: round the 13 low mantissa bits away */
        u = (u + 0x1000u) & 0xffffe000u;
    float h;
    memcpy(&h, &u, 4);
    return h;
}

template <typename REAL>
enum fnq_status mlp_upload(const struct fnq_allegro_mlp *src, int with_split, int with_wt,
                           Mlp<REAL> *dst)
{
    dst->K = src->n_layers;
    dst->act_kind = (int)src->act.kind;
    dst->act_scale = (REAL)src->act.scale;
    dst->n_pre = 0;
    for (int k = 0; k <= src->n_layers; k++) {
        dst->dim[k] = src->dim[k];
        if (k > 0 && k < src->n_layers)
            dst->n_pre += src->dim[k];
    }
    for (int k = 0; k < src->n_layers; k++) {
        const int ni = src->dim[k], no = src->dim[k + 1];
        std::vector<REAL> host((size_t)ni * no), w3(3 * host.size()), w3t(3 * host.size());
        std::vector<REAL> wt(host.size()), w_lo(host.size()), wt_lo(host.size());
        for (int r = 0; r < ni; r++)
            for (int c = 0; c < no; c++) {
                const size_t q = (size_t)r * no + c;
                host[q] = (REAL)src->w[k][q];
                wt[(size_t)c * ni + r] = host[q];
                w_lo[q] = wt_lo[(size_t)c * ni + r] = (REAL)tf32_lo((float)host[q]);
                const REAL hi = (REAL)tf32_part((float)host[q]), part[3] = {host[q] - hi, hi, hi};
                for (int t = 0; t < 3; t++) {
                    w3[((size_t)r * 3 + t) * no + c] = part[t];
                    w3t[q * 3 + t] = part[t];
                }
            }
        FNQ_CHECK(to_device(host, &dst->w[k]));
        if (with_split && sizeof(REAL) == sizeof(float)) {
            FNQ_CHECK(to_device(w3, &dst->w3[k]));
            FNQ_CHECK(to_device(w3t, &dst->w3t[k]));
        }
        if (with_wt) {
            FNQ_CHECK(to_device(wt, &dst->wt[k]));
            FNQ_CHECK(to_device(w_lo, &dst->w_lo[k]));
            FNQ_CHECK(to_device(wt_lo, &dst->wt_lo[k]));
        }
    }
    return FNQ_STATUS_OK;
}

template <typename REAL> void mlp_release(Mlp<REAL> *m)
{
    for (int k = 0; k < FNQ_ALLEGRO_MAX_MLP; k++) {
        cudaFree(m->w[k]), cudaFree(m->w3[k]), cudaFree(m->w3t[k]), cudaFree(m->wt[k]);
        cudaFree(m->w_lo[k]), cudaFree(m->wt_lo[k]);
        m->w[k] = m->w3[k] = m->w3t[k] = m->wt[k] = m->w_lo[k] = m->wt_lo[k] = nullptr;
    }
}

template <typename REAL>
enum fnq_status mlp_forward(const Gemm<REAL> &g, const Mlp<REAL> &m, int rows,
                            const Cols<REAL> *in, int n_in, const Cols<REAL> *out, int n_out,
                            REAL *pre, REAL *work)
{
    if (rows == 0)
        return FNQ_STATUS_OK;
    const Cols<REAL> *x = in;
    int nx = n_in, off = 0;
    Cols<REAL> hidden;
    for (int k = 0; k < m.K; k++) {
        const int no = m.dim[k + 1];
        if (k == m.K - 1)
            return gemm_blocks(g, m, k, CUBLAS_OP_N, rows, x, nx, out, nullptr, n_out);
        const Cols<REAL> p = {pre + off, m.n_pre, no};
        FNQ_CHECK(gemm_blocks(g, m, k, CUBLAS_OP_N, rows, x, nx, &p, nullptr, 1));
        FNQ_CHECK(activation(g, m, rows, no, work, p.p, 0, g.lo, &hidden));
        x = &hidden, nx = 1, off += no;
    }
    return FNQ_STATUS_OK;
}

template <typename REAL>
enum fnq_status mlp_backward(const Gemm<REAL> &gm, const Mlp<REAL> &m, int rows,
                             const Cols<REAL> *gout, int n_g, const Cols<REAL> *gin,
                             const int *add, int n_gin, const REAL *pre, REAL *work, int width)
{
    if (rows == 0)
        return FNQ_STATUS_OK;
    const Cols<REAL> *g = gout;
    int ng = n_g, off = m.n_pre;
    Cols<REAL> hidden[2], next;
    for (int k = m.K - 1; k >= 0; k--) {
        const int ni = m.dim[k], no = m.dim[k + 1];
        if (k == 0)
            return gemm_blocks(gm, m, 0, CUBLAS_OP_T, rows, g, ng, gin, add, n_gin);
        Cols<REAL> &t = hidden[k & 1];
        t = {work + (int64_t)(k & 1) * rows * width, ni, ni};
        FNQ_CHECK(gemm_blocks(gm, m, k, CUBLAS_OP_T, rows, g, ng, &t, nullptr, 1));
        off -= ni; /* layer k's input is act(the pre-activations of hidden layer k) */
        REAL *lo = gm.lo ? gm.lo + (int64_t)(k & 1) * rows * width : nullptr;
        FNQ_CHECK(activation(gm, m, rows, ni, t.p, pre + off, 1, lo, &next));
        g = &next, ng = 1;
    }
    return FNQ_STATUS_OK;
}

#define FNQ_ALLEGRO_MLP(REAL)                                                                   \
    template enum fnq_status mlp_upload(const struct fnq_allegro_mlp *, int, int, Mlp<REAL> *); \
    template void mlp_release(Mlp<REAL> *);                                                     \
    template enum fnq_status mlp_forward(const Gemm<REAL> &, const Mlp<REAL> &, int,            \
                                         const Cols<REAL> *, int, const Cols<REAL> *, int,      \
                                         REAL *, REAL *);                                       \
    template enum fnq_status mlp_backward(const Gemm<REAL> &, const Mlp<REAL> &, int,           \
                                          const Cols<REAL> *, int, const Cols<REAL> *,          \
                                          const int *, int, const REAL *, REAL *, int);
FNQ_ALLEGRO_MLP(float)
FNQ_ALLEGRO_MLP(double)

} // namespace allegro
} // namespace fnqcu
