/*
 * edge_geometry.cu: spherical harmonics and radial basis of every edge before the layers, and
 * the edge gradients dE/dr_e after them (see edge_geometry.cuh). One thread per edge, double
 * precision throughout (edge_ops.cuh); dE/dY goes back through the harmonics' recursion in
 * reverse mode.
 */
#include <stdlib.h>
#include <string.h>
#include <type_traits>

#include "runtime/common.cuh"
#include "nequip/edge_geometry.cuh"
#include "geometry/edge_ops.cuh"

namespace fnqcu {

/* |r| of the edge vector r[3], and its direction nv = r / |r| */
__device__ __forceinline__ double edge_direction(const double *r, double nv[3])
{
    const double d = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
    for (int c = 0; c < 3; c++)
        nv[c] = r[c] / d;
    return d;
}

/* raw harmonics (g.sh_raw): v[q * stride] of degree l times d^l, l = 1..lmax */
__device__ __forceinline__ void sh_times_length_powers(const Geometry &g, double d, double *v,
                                                       int stride)
{
    double p = 1.0;
    for (int l = 1, q = 1; l <= g.lmax; l++) {
        p *= d;
        for (; q < (l + 1) * (l + 1); q++)
            v[q * stride] *= p;
    }
}

/* L >= 0: harmonics of degree <= L by the generated code, in registers; L < 0: any degree, by
 * the plan in g, each thread's values a column of a shared-memory tile [nsh][blockDim.x]. The
 * block's rows are staged in shared memory and written out together: one thread writing its
 * own row (nsh + n_rfeat values, 72 bytes in float32) left partly written sectors to L2 and
 * was several times slower (bench/NOTES.md v8.2). */
template <typename REAL, int L>
__global__ void edge_features_kernel(Geometry g, const double *edge_vec,
                                     const int64_t *n_edges_at, REAL *feat)
{
    const int64_t n_edges = *n_edges_at;
    extern __shared__ double tile[]; /* the rows [blockDim.x][nf], then L < 0's Y columns */
    const int T = blockDim.x, nf = g.nsh + g.n_rfeat;
    const int64_t e0 = (int64_t)blockIdx.x * T, e = e0 + threadIdx.x;
    REAL *rows = reinterpret_cast<REAL *>(tile);
    if (e < n_edges) {
        double nv[3];
        const double d = edge_direction(edge_vec + 3 * e, nv);
        REAL *row = rows + threadIdx.x * nf;
        if constexpr (L >= 0) {
            double y[(L + 1) * (L + 1)];
            sh_eval_fixed<L>(nv, y);
            if (g.sh_raw)
                sh_times_length_powers(g, d, y, 1);
#pragma unroll
            for (int q = 0; q < (L + 1) * (L + 1); q++)
                row[q] = REAL(y[q]);
        } else {
            double *y = tile + (sizeof(REAL) * T * nf + 7) / 8 + threadIdx.x;
            sh_eval_column(g, nv, y, T);
            if (g.sh_raw)
                sh_times_length_powers(g, d, y, T);
            for (int q = 0; q < g.nsh; q++)
                row[q] = REAL(y[q * T]);
        }
        if (g.table) {
            /* |r| = (k + t) h: the knot interval and where in it (t in double, then rounded) */
            const double u = d * g.inv_h;
            const int k = min((int)u, g.n_intervals - 1);
            row[g.nsh] = REAL(k);
            row[g.nsh + 1] = REAL(u - k);
        } else {
            double f, df;
            radial_envelope(g, d, &f, &df);
            for (int q = 0; q < g.n_basis; q++)
                row[g.nsh + q] = REAL(radial_basis_fn(g, d, q, f, df, nullptr));
        }
    }
    __syncthreads();
    const int64_t n_values = (int64_t)nf * min((int64_t)T, n_edges - e0);
    REAL *out = feat + e0 * nf;
    for (int64_t k = threadIdx.x; k < n_values; k += T)
        out[k] = rows[k];
}

/* L as in edge_features_kernel; the column version keeps Y and its adjoints: [2][nsh][T] */
template <int L>
__global__ void edge_grad_kernel(Geometry g, const double *edge_vec, const int64_t *n_edges_at,
                                 const double *ggeo, PairEdges pe, double *edge_grad)
{
    const int64_t n_edges = *n_edges_at;
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n_edges)
        return;
    double nv[3];
    const double d = edge_direction(edge_vec + 3 * e, nv);
    const double *gy = ggeo + e * (g.nsh + g.n_rfeat), *gb = gy + g.nsh;
    double dd = 0.0, dn[3];
    if (g.table) {
        dd = gb[0] * g.inv_h; /* gb[0] = dE/dt, t = |r| / h - k */
    } else {
        double f, df, db;
        radial_envelope(g, d, &f, &df);
        for (int q = 0; q < g.n_basis; q++) {
            radial_basis_fn(g, d, q, f, df, &db);
            dd += gb[q] * db;
        }
    }
    if constexpr (L >= 0) {
        constexpr int nsh = (L + 1) * (L + 1);
        double y[nsh], adj[nsh];
        sh_eval_fixed<L>(nv, y);
#pragma unroll
        for (int q = 0; q < nsh; q++)
            adj[q] = gy[q];
        if (g.sh_raw)
            sh_times_length_powers(g, d, adj, 1);
        sh_grad_fixed<L>(y, adj, dn);
    } else {
        extern __shared__ double tile[];
        const int T = blockDim.x;
        double *y = tile + threadIdx.x, *adj = y + g.nsh * T;
        sh_eval_column(g, nv, y, T);
        for (int q = 0; q < g.nsh; q++)
            adj[q * T] = gy[q];
        if (g.sh_raw)
            sh_times_length_powers(g, d, adj, T);
        sh_grad_column(g, y, adj, T, dn);
    }
    /* the pair term depends on |r| only */
    if (pe.term.on) {
        double e_pair, de_dr;
        pair_term_edge(pe.term, pe.species[pe.edge_recv[e]], pe.species[pe.edge_send[e]], d,
                       &e_pair, &de_dr);
        dd += de_dr;
    }
    /* normalised Y depend on the direction only: project out the radial part, then
     * d n / d r = 1/|r|. Raw ones are homogeneous polynomials of r: dY_l/dr = d^(l-1) dY_l/dn,
     * the adjoints already carried d^l */
    const double proj = g.sh_raw ? 0.0 : dn[0] * nv[0] + dn[1] * nv[1] + dn[2] * nv[2];
    for (int c = 0; c < 3; c++)
        edge_grad[3 * e + c] = (dn[c] - proj * nv[c]) / d + dd * nv[c];
}

/* Threads per block of the column versions: a thread's Y (and adjoints) in shared memory,
 * within the default 48 KB */
static int column_threads(const Geometry &g, int columns)
{
    int threads = 128;
    while (threads > 32 && (size_t)columns * g.nsh * threads * sizeof(double) > 48 * 1024)
        threads /= 2;
    return threads;
}

/* f(std::integral_constant<int, L>) for the model's degree where code is generated, else
 * f(std::integral_constant<int, -1>); g.sh_generic takes the latter always */
template <typename F> static cudaError_t with_sh_degree(const Geometry &g, F &&f)
{
    static_assert(FNQ_SH_LMAX == 3, "dispatch below covers l <= 3");
    switch (g.sh_generic ? -1 : g.lmax) {
    case 0: return f(std::integral_constant<int, 0>{});
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    default: return f(std::integral_constant<int, -1>{});
    }
}

/* Threads per block and shared memory of edge_features_kernel: the staged rows, and for the
 * column version the Y columns, within the default 48 KB */
template <typename REAL> static int features_threads(const Geometry &g, bool columns, size_t *smem)
{
    const int nf = g.nsh + g.n_rfeat;
    int threads = 128;
    for (;; threads /= 2) {
        *smem = (sizeof(REAL) * threads * nf + 7) / 8 * 8 +
                (columns ? sizeof(double) * g.nsh * threads : 0);
        if (*smem <= 48 * 1024 || threads == 32)
            return threads;
    }
}

template <typename REAL>
cudaError_t edge_features_launch(const Geometry &g, const double *edge_vec,
                                 const int64_t *n_edges, int64_t n_launch, REAL *feat,
                                 cudaStream_t stream)
{
    if (n_launch == 0)
        return cudaSuccess;
    return with_sh_degree(g, [&](auto deg) {
        constexpr int L = decltype(deg)::value;
        size_t smem = 0;
        const int threads = features_threads<REAL>(g, L < 0, &smem);
        edge_features_kernel<REAL, L><<<(unsigned)((n_launch + threads - 1) / threads), threads,
                                        smem, stream>>>(g, edge_vec, n_edges, feat);
        return cudaGetLastError();
    });
}

cudaError_t edge_grad_launch(const Geometry &g, const double *edge_vec, const int64_t *n_edges,
                             int64_t n_launch, const double *ggeo, const PairEdges &pe,
                             double *edge_grad, cudaStream_t stream)
{
    if (n_launch == 0)
        return cudaSuccess;
    return with_sh_degree(g, [&](auto deg) {
        constexpr int L = decltype(deg)::value;
        const int threads = L >= 0 ? 128 : column_threads(g, 2);
        const size_t smem = L >= 0 ? 0 : 2 * sizeof(double) * g.nsh * threads;
        edge_grad_kernel<L><<<(unsigned)((n_launch + threads - 1) / threads), threads, smem,
                              stream>>>(g, edge_vec, n_edges, ggeo, pe, edge_grad);
        return cudaGetLastError();
    });
}

template cudaError_t edge_features_launch<float>(const Geometry &, const double *,
                                                 const int64_t *, int64_t, float *, cudaStream_t);
template cudaError_t edge_features_launch<double>(const Geometry &, const double *,
                                                  const int64_t *, int64_t, double *,
                                                  cudaStream_t);

} // namespace fnqcu
