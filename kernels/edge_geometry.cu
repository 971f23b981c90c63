/*
 * edge_geometry.cu: spherical harmonics and radial basis of every edge before the layers, and
 * the edge gradients dE/dr_e after them (see edge_geometry.cuh). One thread per edge, double
 * precision throughout (edge_ops.cuh).
 */
#include "common.cuh"
#include "edge_geometry.cuh"
#include "edge_ops.cuh"

namespace fnqcu {

/* |r| of the edge vector r[3], and its direction nv = r / |r| */
__device__ __forceinline__ double edge_direction(const double *r, double nv[3])
{
    const double d = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
    for (int c = 0; c < 3; c++)
        nv[c] = r[c] / d;
    return d;
}

template <typename REAL>
__global__ void edge_features_kernel(Geometry g, const double *edge_vec, int64_t n_edges,
                                     REAL *feat)
{
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n_edges)
        return;
    double nv[3];
    const double d = edge_direction(edge_vec + 3 * e, nv);
    double y[kMaxSh];
    sh_eval(g, nv, y, nullptr);
    REAL *row = feat + e * (g.nsh + g.n_rfeat);
    for (int q = 0; q < g.nsh; q++)
        row[q] = REAL(y[q]);
    if (g.table) {
        /* |r| = (k + t) h: the knot interval and where in it (t in double, then rounded) */
        const double u = d * g.inv_h;
        const int k = min((int)u, g.n_intervals - 1);
        row[g.nsh] = REAL(k);
        row[g.nsh + 1] = REAL(u - k);
        return;
    }
    double basis[kMaxBasis];
    radial_basis(g, d, basis, nullptr);
    for (int q = 0; q < g.n_basis; q++)
        row[g.nsh + q] = REAL(basis[q]);
}

__global__ void edge_grad_kernel(Geometry g, const double *edge_vec, int64_t n_edges,
                                 const double *ggeo, double *edge_grad)
{
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n_edges)
        return;
    double nv[3];
    const double d = edge_direction(edge_vec + 3 * e, nv);
    double y[kMaxSh], dyn[kMaxSh * 3];
    sh_eval(g, nv, y, dyn);
    const double *gy = ggeo + e * (g.nsh + g.n_rfeat), *gb = gy + g.nsh;
    double dd = 0.0, dn[3] = {0.0, 0.0, 0.0};
    if (g.table) {
        dd = gb[0] * g.inv_h; /* gb[0] = dE/dt, t = |r| / h - k */
    } else {
        double basis[kMaxBasis], dbasis[kMaxBasis];
        radial_basis(g, d, basis, dbasis);
        for (int q = 0; q < g.n_basis; q++)
            dd += gb[q] * dbasis[q];
    }
    for (int q = 0; q < g.nsh; q++) {
        dn[0] += gy[q] * dyn[3 * q];
        dn[1] += gy[q] * dyn[3 * q + 1];
        dn[2] += gy[q] * dyn[3 * q + 2];
    }
    /* Y depends on the direction only: project out the radial part, then d n / d r = 1/|r| */
    const double proj = dn[0] * nv[0] + dn[1] * nv[1] + dn[2] * nv[2];
    for (int c = 0; c < 3; c++)
        edge_grad[3 * e + c] = (dn[c] - proj * nv[c]) / d + dd * nv[c];
}

template <typename REAL>
cudaError_t edge_features_launch(const Geometry &g, const double *edge_vec, int64_t n_edges,
                                 REAL *feat, cudaStream_t stream)
{
    if (n_edges == 0)
        return cudaSuccess;
    const int threads = 128;
    edge_features_kernel<REAL><<<(unsigned)((n_edges + threads - 1) / threads), threads, 0,
                                 stream>>>(g, edge_vec, n_edges, feat);
    return cudaGetLastError();
}

cudaError_t edge_grad_launch(const Geometry &g, const double *edge_vec, int64_t n_edges,
                             const double *ggeo, double *edge_grad, cudaStream_t stream)
{
    if (n_edges == 0)
        return cudaSuccess;
    const int threads = 128;
    edge_grad_kernel<<<(unsigned)((n_edges + threads - 1) / threads), threads, 0, stream>>>(
        g, edge_vec, n_edges, ggeo, edge_grad);
    return cudaGetLastError();
}

template cudaError_t edge_features_launch<float>(const Geometry &, const double *, int64_t,
                                                 float *, cudaStream_t);
template cudaError_t edge_features_launch<double>(const Geometry &, const double *, int64_t,
                                                  double *, cudaStream_t);

} // namespace fnqcu
