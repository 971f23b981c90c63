/*
 * allegro_mlp.cu: Allegro's scalar MLPs as cuBLAS GEMMs over a chunk's rows (allegro_mlp.cuh).
 * Row-major arrays are column-major transposes to cuBLAS: Y = X W is Y^T = W^T X^T, and the
 * backward G W^T is W G^T; a block of W (a range of its rows and columns) is W's pointer moved
 * to the block's corner with W's own leading dimension.
 */
#include <vector>

#include "allegro_mlp.cuh"

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

/* out ranges (beta 0) = in ranges x W (ldw columns), each (in, out) pair its block of W */
template <typename REAL>
enum fnq_status forward_blocks(cublasHandle_t h, int rows, const Cols<REAL> *in, int n_in,
                               const REAL *W, int ldw, const Cols<REAL> *out, int n_out)
{
    int r0 = 0;
    for (int a = 0; a < n_in; a++) {
        int c0 = 0;
        for (int b = 0; b < n_out; b++) {
            FNQ_CHECK(blas_check(gemm(h, CUBLAS_OP_N, out[b].cols, rows, in[a].cols,
                                      W + (int64_t)r0 * ldw + c0, ldw, in[a].p, in[a].ld,
                                      REAL(a > 0 ? 1 : 0), out[b].p, out[b].ld),
                                 rows, out[b].cols, in[a].cols));
            c0 += out[b].cols;
        }
        r0 += in[a].cols;
    }
    return FNQ_STATUS_OK;
}

/* target ranges (rows of W) (+)= g ranges (columns of W) x W^T */
template <typename REAL>
enum fnq_status backward_blocks(cublasHandle_t h, int rows, const Cols<REAL> *g, int n_g,
                                const REAL *W, int ldw, const Cols<REAL> *t, const int *add,
                                int n_t)
{
    int r0 = 0;
    for (int a = 0; a < n_t; a++) {
        int c0 = 0;
        for (int b = 0; b < n_g; b++) {
            const REAL beta = (b > 0 || (add && add[a])) ? REAL(1) : REAL(0);
            FNQ_CHECK(blas_check(gemm(h, CUBLAS_OP_T, t[a].cols, rows, g[b].cols,
                                      W + (int64_t)r0 * ldw + c0, ldw, g[b].p, g[b].ld, beta,
                                      t[a].p, t[a].ld),
                                 rows, t[a].cols, g[b].cols));
            c0 += g[b].cols;
        }
        r0 += t[a].cols;
    }
    return FNQ_STATUS_OK;
}

template <typename REAL>
__global__ void act_forward_kernel(int64_t rows, int cols, const REAL *pre, int ld_pre, REAL *h,
                                   int kind, REAL scale)
{
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= rows * cols)
        return;
    const int64_t r = idx / cols;
    const int c = (int)(idx % cols);
    h[idx] = act_apply<REAL>(kind, scale, pre[r * ld_pre + c]);
}

template <typename REAL>
__global__ void act_backward_kernel(int64_t rows, int cols, REAL *g, const REAL *pre, int ld_pre,
                                    int kind, REAL scale)
{
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= rows * cols)
        return;
    const int64_t r = idx / cols;
    const int c = (int)(idx % cols);
    g[idx] *= act_deriv<REAL>(kind, scale, pre[r * ld_pre + c]);
}

unsigned blocks_for(int64_t n) { return (unsigned)((n + kBlock - 1) / kBlock); }

} // namespace

template <typename REAL>
enum fnq_status mlp_upload(const struct fnq_allegro_mlp *src, Mlp<REAL> *dst)
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
        const size_t n = (size_t)src->dim[k] * src->dim[k + 1];
        std::vector<REAL> host(n);
        for (size_t q = 0; q < n; q++)
            host[q] = (REAL)src->w[k][q];
        FNQ_CUDA_CHECK(cudaMalloc(&dst->w[k], sizeof(REAL) * (n ? n : 1)));
        FNQ_CUDA_CHECK(cudaMemcpy(dst->w[k], host.data(), sizeof(REAL) * n,
                                  cudaMemcpyHostToDevice));
    }
    return FNQ_STATUS_OK;
}

template <typename REAL> void mlp_release(Mlp<REAL> *m)
{
    for (int k = 0; k < FNQ_ALLEGRO_MAX_MLP; k++) {
        cudaFree(m->w[k]);
        m->w[k] = nullptr;
    }
}

template <typename REAL>
enum fnq_status mlp_forward(cublasHandle_t h, cudaStream_t s, const Mlp<REAL> &m, int rows,
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
            return forward_blocks(h, rows, x, nx, m.w[k], no, out, n_out);
        const Cols<REAL> p = {pre + off, m.n_pre, no};
        FNQ_CHECK(forward_blocks(h, rows, x, nx, m.w[k], no, &p, 1));
        act_forward_kernel<<<blocks_for((int64_t)rows * no), kBlock, 0, s>>>(
            rows, no, p.p, m.n_pre, work, m.act_kind, m.act_scale);
        FNQ_CUDA_LAUNCHED();
        hidden = {work, no, no};
        x = &hidden, nx = 1, off += no;
    }
    return FNQ_STATUS_OK;
}

template <typename REAL>
enum fnq_status mlp_backward(cublasHandle_t h, cudaStream_t s, const Mlp<REAL> &m, int rows,
                             const Cols<REAL> *gout, int n_g, const Cols<REAL> *gin,
                             const int *add, int n_gin, const REAL *pre, REAL *work, int width)
{
    if (rows == 0)
        return FNQ_STATUS_OK;
    const Cols<REAL> *g = gout;
    int ng = n_g, off = m.n_pre;
    Cols<REAL> hidden[2];
    for (int k = m.K - 1; k >= 0; k--) {
        const int ni = m.dim[k], no = m.dim[k + 1];
        if (k == 0)
            return backward_blocks(h, rows, g, ng, m.w[0], no, gin, add, n_gin);
        Cols<REAL> &t = hidden[k & 1];
        t = {work + (int64_t)(k & 1) * rows * width, ni, ni};
        FNQ_CHECK(backward_blocks(h, rows, g, ng, m.w[k], no, &t, nullptr, 1));
        off -= ni; /* layer k's input is act(the pre-activations of hidden layer k) */
        act_backward_kernel<<<blocks_for((int64_t)rows * ni), kBlock, 0, s>>>(
            rows, ni, t.p, pre + off, m.n_pre, m.act_kind, m.act_scale);
        FNQ_CUDA_LAUNCHED();
        g = &t, ng = 1;
    }
    return FNQ_STATUS_OK;
}

#define FNQ_ALLEGRO_MLP(REAL)                                                                   \
    template enum fnq_status mlp_upload(const struct fnq_allegro_mlp *, Mlp<REAL> *);           \
    template void mlp_release(Mlp<REAL> *);                                                     \
    template enum fnq_status mlp_forward(cublasHandle_t, cudaStream_t, const Mlp<REAL> &, int,  \
                                         const Cols<REAL> *, int, const Cols<REAL> *, int,      \
                                         REAL *, REAL *);                                       \
    template enum fnq_status mlp_backward(cublasHandle_t, cudaStream_t, const Mlp<REAL> &, int, \
                                          const Cols<REAL> *, int, const Cols<REAL> *,          \
                                          const int *, int, const REAL *, REAL *, int);
FNQ_ALLEGRO_MLP(float)
FNQ_ALLEGRO_MLP(double)

} // namespace allegro
} // namespace fnqcu
