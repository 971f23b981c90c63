/*
 * allegro_kernels.cu: the CUDA Allegro engine's per-edge and per-centre kernels
 * (allegro_kernels.cuh says what each computes). They follow the CPU engine
 * (core/src/allegro/allegro_eval.inc) operation for operation where it sums in REAL, so float64 results
 * agree to rounding; the geometry is computed in double, as there.
 */
#include <type_traits>

#include "allegro/allegro_kernels.cuh"
#include "geometry/edge_ops.cuh"
#include "tp_code.inc"

namespace fnqcu {
namespace allegro {
namespace {

constexpr int kBlock = 128;
constexpr double kPi = 3.14159265358979323846;

inline unsigned blocks_for(int64_t n) { return (unsigned)((n + kBlock - 1) / kBlock); }

/* A thread's vector of the tensor products in shared memory: value q of the block's thread t
 * at [q * blockDim.x + t], so a warp reading the same q (the coupling terms are the same for
 * every thread) hits 32 banks. The terms are data, so their indices are not constants, and
 * arrays in registers would live in local memory: at Allegro-OAM-L's widths a block's ~50 KB
 * of it pushed L1 out to L2 (bench/NOTES.md, issue 50). */
template <typename REAL> struct SharedVec {
    REAL *p;
    __device__ __forceinline__ explicit SharedVec(int first_slot)
    {
        extern __shared__ __align__(16) unsigned char allegro_tp_smem[];
        p = reinterpret_cast<REAL *>(allegro_tp_smem) + first_slot * blockDim.x + threadIdx.x;
    }
    __device__ __forceinline__ REAL &operator[](int q) const { return p[q * blockDim.x]; }
};

/* f(std::integral_constant<int, L>()) for the model's l_max L (0 .. kMaxLmax): the kernels
 * that evaluate the spherical harmonics take L as a template argument (sh_code.inc) */
template <typename F> void with_lmax(int lmax, F f)
{
    static_assert(kMaxLmax == 3 && kMaxLmax <= FNQ_SH_LMAX, "one case per l_max below");
    switch (lmax) {
    case 0: f(std::integral_constant<int, 0>()); break;
    case 1: f(std::integral_constant<int, 1>()); break;
    case 2: f(std::integral_constant<int, 2>()); break;
    default: f(std::integral_constant<int, 3>()); break;
    }
}

/* threads a block for a tensor-product kernel whose threads keep `slots` values each in
 * shared memory: 64, or 32 where 64 would need more than the 48 KB a launch gets unasked */
template <typename REAL> inline int tp_threads(int slots)
{
    return (size_t)slots * 64 * sizeof(REAL) <= 48 * 1024 ? 64 : 32;
}

__device__ __forceinline__ int64_t thread_index()
{
    return (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
}

/* The tensor features (V, G and their gradients) are stored component-major: value q of
 * channel u of row r (an edge; a centre for G) at (r dim + q) U + u. The tensor-product
 * threads are (row, channel) pairs, channels fastest, so a warp's loads and stores of one q
 * are consecutive addresses (channel-fastest within a component was 8x the memory
 * transactions of this). */
__device__ __forceinline__ int64_t feat(int64_t r, int q, int u, int dim, int U)
{
    return (r * dim + q) * U + u;
}

/* l of spherical-harmonic component q (block l holds q = l^2 .. (l+1)^2 - 1) */
__device__ __forceinline__ int degree_of(int q)
{
    int l = 0;
    while ((l + 1) * (l + 1) <= q)
        l++;
    return l;
}

/* a centre's first edge and an edge's centre, chunk-local */
__device__ __forceinline__ int64_t first_edge(const Chunk &c, int64_t i)
{
    return c.start[i] - c.edge0;
}
__device__ __forceinline__ int64_t centre_of(const Chunk &c, int64_t e)
{
    return c.centre[e] - c.centre0;
}

template <typename REAL> __device__ __forceinline__ double edge_cutoff(const Params<REAL> &p,
                                                                       const Chunk &c, int64_t e)
{
    return p.cut ? p.cut[c.ti[e] * p.T + c.tj[e]] : p.r_max;
}

template <typename REAL, int L>
__global__ void geometry_kernel(Params<REAL> p, Chunk c, REAL *Y, REAL *basis, REAL *dbasis)
{
    const int64_t e = thread_index();
    if (e >= c.n)
        return;
    const double *v = c.vec + 3 * e;
    const double d = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    const double x = d / edge_cutoff(p, c, e);
    const double n[3] = {v[0] / d, v[1] / d, v[2] / d};
    double y[(L + 1) * (L + 1)];
    sh_eval_fixed<L>(n, y);
    for (int q = 0; q < (L + 1) * (L + 1); q++)
        Y[e * p.nsh + q] = (REAL)y[q];
    double f, df;
    poly_envelope(p.poly_p, x, &f, &df);
    for (int k = 0; k < p.N; k++) {
        const double a = kPi * p.bessel_w[k];
        double sn, cs;
        sincos(a * x, &sn, &cs);
        const double b = sn / (kPi * x);
        basis[e * p.N + k] = (REAL)(b * f);
        dbasis[e * p.N + k] = (REAL)(((a * cs) / (kPi * x) - b / x) * f + b * df);
    }
}

/* a block an edge (blockIdx.x) in these two: no thread divides a 64-bit index */
template <typename REAL> __global__ void embed_scale_kernel(Params<REAL> p, Chunk c, REAL *z0)
{
    const int64_t e = blockIdx.x;
    const REAL *ce = p.cemb + c.ti[e] * p.H, *ne = p.nemb + c.tj[e] * p.H;
    for (int k = threadIdx.x; k < 2 * p.H; k += blockDim.x)
        z0[e * 2 * p.H + k] *= k < p.H ? ce[k] : ne[k - p.H];
}

template <typename REAL>
__global__ void tensor_embed_kernel(Params<REAL> p, Chunk c, const REAL *w, const REAL *Y,
                                    REAL *V0)
{
    const int64_t e = blockIdx.x;
    for (int k = threadIdx.x; k < p.U * p.nsh; k += blockDim.x) {
        const int q = k / p.U, u = k % p.U; /* k = feat(0, q, u) */
        V0[e * p.U * p.nsh + k] = w[(e * p.U + u) * p.nl + degree_of(q)] * Y[e * p.nsh + q];
    }
}

template <typename REAL>
__global__ void env_sum_kernel(Params<REAL> p, Chunk c, const REAL *omega, const REAL *Y, REAL *G)
{
    const int64_t idx = thread_index(), per = (int64_t)p.U * p.nsh;
    if (idx >= c.nc * per)
        return;
    const int64_t i = idx / per; /* idx = feat(i, q, u) */
    const int q = (int)(idx % per) / p.U, u = (int)(idx % p.U), l = degree_of(q);
    REAL sum = 0;
    for (int64_t e = first_edge(c, i); e < first_edge(c, i + 1); e++)
        sum += omega[(e * p.U + u) * p.nl + l] * Y[e * p.nsh + q];
    G[idx] = sum * (REAL)p.env_norm[c.ctype[i]];
}

template <typename REAL>
__global__ void tp_forward_kernel(Params<REAL> p, Chunk c, TpLayer<REAL> tp, const REAL *Vin,
                                  const REAL *G, REAL *Vout, REAL *scal, int ld_scal)
{
    const int64_t idx = thread_index();
    if (idx >= c.n * p.U)
        return;
    const int64_t e = idx / p.U;
    const int u = (int)(idx % p.U);
    const SharedVec<REAL> a(0), b(tp.din), out(tp.din + p.nsh);
    for (int q = 0; q < tp.din; q++)
        a[q] = Vin[feat(e, q, u, tp.din, p.U)];
    for (int q = 0; q < p.nsh; q++)
        b[q] = G[feat(centre_of(c, e), q, u, p.nsh, p.U)];
    for (int q = 0; q < tp.dout; q++)
        out[q] = 0;
    const REAL *w = tp.w + (tp.coupled ? u : 0) * tp.n_paths;
    for (int t = 0; t < tp.n_terms; t++) {
        const TpTerm T = tp.terms[t];
        out[T.i3] += w[T.path] * (REAL)T.coef * a[T.i1] * b[T.i2];
    }
    for (int q = 0; q < tp.dout; q++)
        Vout[feat(e, q, u, tp.dout, p.U)] = out[q];
    scal[e * ld_scal + u] = out[0];
}

/* The tensor products with the coupling as generated code (TpLayer::code): a thread's
 * vectors are registers, every index a constant once the path's case is chosen. The paths'
 * Clebsch-Gordan coefficients times sqrt(2 l3 + 1) are the model's terms (allegro_load.c);
 * the generated code sums the terms of one output with equal |c| first (tp_code.inc), so the
 * results differ from the terms' kernels by rounding only. */
template <int L1, int L2, int L3, typename REAL, int D>
__device__ __forceinline__ void tp_path_forward(const REAL (&a)[D], const REAL (&b)[D],
                                                REAL (&out)[D], REAL w)
{
    using P = tpgen::Path<L1, L2, L3>;
    REAL t[P::D3];
#pragma unroll
    for (int m = 0; m < P::D3; m++)
        t[m] = 0;
    P::fwd(a + L1 * L1, b + L2 * L2, t);
#pragma unroll
    for (int m = 0; m < P::D3; m++)
        out[L3 * L3 + m] += w * t[m];
}

template <int L1, int L2, int L3, typename REAL, int D>
__device__ __forceinline__ void tp_path_backward(const REAL (&a)[D], const REAL (&b)[D],
                                                 const REAL (&gc)[D], REAL (&ga)[D],
                                                 REAL (&gb)[D], REAL w)
{
    using P = tpgen::Path<L1, L2, L3>;
    REAL g[P::D3];
#pragma unroll
    for (int m = 0; m < P::D3; m++)
        g[m] = w * gc[L3 * L3 + m];
    P::bwd(a + L1 * L1, b + L2 * L2, g, g, gb + L2 * L2, ga + L1 * L1);
}

/* f<l1, l2, l3>() for the path of this code (one case per path with every l <= L) */
#define FNQ_ALLEGRO_PATH_CASE(l1, l2, l3)                                                     \
    case FNQ_TP_CODE(l1, l2, l3):                                                            \
        if constexpr (l1 <= L && l2 <= L && l3 <= L)                                          \
            FNQ_ALLEGRO_PATH_CALL(l1, l2, l3);                                                \
        break;

template <typename REAL, int L>
__global__ void tp_forward_gen_kernel(Params<REAL> p, Chunk c, TpLayer<REAL> tp,
                                      const REAL *Vin, const REAL *G, REAL *Vout, REAL *scal,
                                      int ld_scal)
{
    constexpr int D = (L + 1) * (L + 1);
    const int64_t idx = thread_index();
    if (idx >= c.n * p.U)
        return;
    const int64_t e = idx / p.U;
    const int u = (int)(idx % p.U);
    const int64_t i = centre_of(c, e);
    REAL a[D], b[D], out[D];
#pragma unroll
    for (int q = 0; q < D; q++) {
        a[q] = q < tp.din ? Vin[feat(e, q, u, tp.din, p.U)] : REAL(0);
        b[q] = G[feat(i, q, u, D, p.U)]; /* nsh = D */
        out[q] = 0;
    }
    const REAL *w = tp.w + (tp.coupled ? u : 0) * tp.n_paths;
#pragma unroll 1
    for (int k = 0; k < tp.n_paths; k++) {
        const REAL wk = w[k];
        switch (tp.code[k]) {
#define FNQ_ALLEGRO_PATH_CALL(l1, l2, l3) tp_path_forward<l1, l2, l3>(a, b, out, wk)
            FNQ_TP_PATHS(FNQ_ALLEGRO_PATH_CASE)
#undef FNQ_ALLEGRO_PATH_CALL
        }
    }
#pragma unroll
    for (int q = 0; q < D; q++)
        if (q < tp.dout)
            Vout[feat(e, q, u, tp.dout, p.U)] = out[q];
    scal[e * ld_scal + u] = out[0];
}

template <typename REAL, int L>
__global__ void tp_backward_gen_kernel(Params<REAL> p, Chunk c, TpLayer<REAL> tp,
                                       const REAL *Vin, const REAL *G, const REAL *gVout,
                                       const REAL *gscal, REAL *gVin, REAL *gG)
{
    constexpr int D = (L + 1) * (L + 1);
    const int64_t idx = thread_index();
    if (idx >= (int64_t)c.nc * p.U)
        return;
    const int64_t i = idx / p.U;
    const int u = (int)(idx % p.U);
    REAL b[D], gb[D];
#pragma unroll
    for (int q = 0; q < D; q++)
        b[q] = G[feat(i, q, u, D, p.U)], gb[q] = 0;
    const REAL *w = tp.w + (tp.coupled ? u : 0) * tp.n_paths;
    for (int64_t e = first_edge(c, i); e < first_edge(c, i + 1); e++) {
        const int64_t eu = e * p.U + u;
        REAL a[D], ga[D], gc[D];
#pragma unroll
        for (int q = 0; q < D; q++) {
            a[q] = q < tp.din ? Vin[feat(e, q, u, tp.din, p.U)] : REAL(0);
            ga[q] = 0;
            gc[q] = gVout && q < tp.dout ? gVout[feat(e, q, u, tp.dout, p.U)] : REAL(0);
        }
        gc[0] += gscal[eu];
#pragma unroll 1
        for (int k = 0; k < tp.n_paths; k++) {
            const REAL wk = w[k];
            switch (tp.code[k]) {
#define FNQ_ALLEGRO_PATH_CALL(l1, l2, l3) tp_path_backward<l1, l2, l3>(a, b, gc, ga, gb, wk)
                FNQ_TP_PATHS(FNQ_ALLEGRO_PATH_CASE)
#undef FNQ_ALLEGRO_PATH_CALL
            }
        }
#pragma unroll
        for (int q = 0; q < D; q++)
            if (q < tp.din)
                gVin[feat(e, q, u, tp.din, p.U)] = ga[q];
    }
#pragma unroll
    for (int q = 0; q < D; q++)
        gG[feat(i, q, u, D, p.U)] = gb[q];
}
#undef FNQ_ALLEGRO_PATH_CASE

template <typename REAL>
__global__ void centre_energy_kernel(Params<REAL> p, Chunk c, const REAL *eps, double *energy)
{
    const int64_t i = thread_index();
    if (i >= c.nc)
        return;
    double sum = 0.0;
    for (int64_t e = first_edge(c, i); e < first_edge(c, i + 1); e++)
        sum += (double)eps[e];
    const int t = c.ctype[i];
    energy[i] = p.edge_scale[t] * sum + p.shift[t];
}

template <typename REAL> __global__ void readout_seed_kernel(Params<REAL> p, Chunk c, REAL *g)
{
    const int64_t e = thread_index();
    if (e < c.n)
        g[e] = (REAL)p.edge_scale[c.ctype[centre_of(c, e)]];
}

template <typename REAL>
__global__ void tp_backward_kernel(Params<REAL> p, Chunk c, TpLayer<REAL> tp, const REAL *Vin,
                                   const REAL *G, const REAL *gVout, const REAL *gscal,
                                   REAL *gVin, REAL *gG)
{
    const int64_t idx = thread_index();
    if (idx >= (int64_t)c.nc * p.U)
        return;
    const int64_t i = idx / p.U;
    const int u = (int)(idx % p.U);
    const SharedVec<REAL> b(0), gb(p.nsh), a(2 * p.nsh), ga(2 * p.nsh + tp.din),
        gc(2 * p.nsh + 2 * tp.din);
    for (int q = 0; q < p.nsh; q++)
        b[q] = G[feat(i, q, u, p.nsh, p.U)], gb[q] = 0;
    const REAL *w = tp.w + (tp.coupled ? u : 0) * tp.n_paths;
    for (int64_t e = first_edge(c, i); e < first_edge(c, i + 1); e++) {
        const int64_t eu = e * p.U + u;
        for (int q = 0; q < tp.din; q++)
            a[q] = Vin[feat(e, q, u, tp.din, p.U)], ga[q] = 0;
        for (int q = 0; q < tp.dout; q++)
            gc[q] = gVout ? gVout[feat(e, q, u, tp.dout, p.U)] : REAL(0);
        gc[0] += gscal[eu];
        for (int t = 0; t < tp.n_terms; t++) {
            const TpTerm T = tp.terms[t];
            const REAL wc = w[T.path] * (REAL)T.coef * gc[T.i3];
            ga[T.i1] += wc * b[T.i2];
            gb[T.i2] += wc * a[T.i1];
        }
        for (int q = 0; q < tp.din; q++)
            gVin[feat(e, q, u, tp.din, p.U)] = ga[q];
    }
    for (int q = 0; q < p.nsh; q++)
        gG[feat(i, q, u, p.nsh, p.U)] = gb[q];
}

/* The backward of the two products of the spherical harmonics with per-edge weights of
 * (channel, l): the tensor embedding V0[e] = w[e] Y[e] (g: gV0, its row the edge) and the
 * environment G[i] = c_i sum_e omega[e] Y[e] (g: gG, its row the edge's centre, scale c_i).
 * A block an edge: gw one (l, u) a thread, channels fastest (feat's order); gY's sums over the
 * channels one component a warp, lanes over channels, added in a fixed tree (bitwise
 * repeatable). gw's row e at gw + e ld_gw; gY[e] is added to where add_gY, else written. */
template <typename REAL>
__global__ void sh_weights_backward_kernel(Params<REAL> p, Chunk c, const REAL *g, int by_centre,
                                           const REAL *Y, const REAL *w, REAL *gw, int ld_gw,
                                           REAL *gY, int add_gY)
{
    const int64_t e = blockIdx.x, r = by_centre ? centre_of(c, e) : e;
    const REAL scale = by_centre ? (REAL)p.env_norm[c.ctype[r]] : REAL(1);
    const REAL *y = Y + e * p.nsh;
    for (int t = threadIdx.x; t < p.U * p.nl; t += blockDim.x) {
        const int l = t / p.U, u = t % p.U;
        REAL s = 0;
        for (int q = l * l; q < (l + 1) * (l + 1); q++)
            s += scale * g[feat(r, q, u, p.nsh, p.U)] * y[q];
        gw[e * ld_gw + u * p.nl + l] = s;
    }
    const int lane = threadIdx.x % 32;
    for (int q = threadIdx.x / 32; q < p.nsh; q += blockDim.x / 32) {
        const int l = degree_of(q);
        REAL s = 0;
        for (int u = lane; u < p.U; u += 32)
            s += scale * g[feat(r, q, u, p.nsh, p.U)] * w[(e * p.U + u) * p.nl + l];
        for (int o = 16; o > 0; o /= 2)
            s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0)
            gY[e * p.nsh + q] = add_gY ? gY[e * p.nsh + q] + s : s;
    }
}

template <typename REAL, int L>
__global__ void edge_gradient_kernel(Params<REAL> p, Chunk c, const REAL *gbasis,
                                     const REAL *dbasis, const REAL *gY, double *grad)
{
    const int64_t e = thread_index();
    if (e >= c.n)
        return;
    double gd = 0.0;
    for (int k = 0; k < p.N; k++)
        gd += (double)gbasis[e * p.N + k] * (double)dbasis[e * p.N + k];
    gd /= edge_cutoff(p, c, e);
    const double *v = c.vec + 3 * e;
    const double d = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    const double n[3] = {v[0] / d, v[1] / d, v[2] / d};
    double y[(L + 1) * (L + 1)], a[(L + 1) * (L + 1)], t[3];
    sh_eval_fixed<L>(n, y);
    for (int q = 0; q < (L + 1) * (L + 1); q++)
        a[q] = (double)gY[e * p.nsh + q];
    sh_grad_fixed<L>(y, a, t);
    const double tn = t[0] * n[0] + t[1] * n[1] + t[2] * n[2];
    for (int k = 0; k < 3; k++)
        grad[3 * e + k] = gd * n[k] + (t[k] - tn * n[k]) / d;
}

} // namespace

template <typename REAL>
cudaError_t geometry(const Params<REAL> &p, const Chunk &c, REAL *Y, REAL *basis, REAL *dbasis,
                     cudaStream_t s)
{
    if (c.n == 0) /* a launch of no blocks is an error */
        return cudaSuccess;
    with_lmax(p.lmax, [&](auto L) {
        geometry_kernel<REAL, decltype(L)::value><<<blocks_for(c.n), kBlock, 0, s>>>(p, c, Y, basis,
                                                                                   dbasis);
    });
    return cudaGetLastError();
}

template <typename REAL>
cudaError_t embed_scale(const Params<REAL> &p, const Chunk &c, REAL *z0, cudaStream_t s)
{
    if (c.n == 0) /* a launch of no blocks is an error */
        return cudaSuccess;
    embed_scale_kernel<<<(unsigned)c.n, kBlock, 0, s>>>(p, c, z0);
    return cudaGetLastError();
}

template <typename REAL>
cudaError_t tensor_embed(const Params<REAL> &p, const Chunk &c, const REAL *w, const REAL *Y,
                         REAL *V0, cudaStream_t s)
{
    if (c.n == 0) /* a launch of no blocks is an error */
        return cudaSuccess;
    tensor_embed_kernel<<<(unsigned)c.n, kBlock, 0, s>>>(p, c, w, Y, V0);
    return cudaGetLastError();
}

template <typename REAL>
cudaError_t env_sum(const Params<REAL> &p, const Chunk &c, const REAL *omega, const REAL *Y,
                    REAL *G, cudaStream_t s)
{
    if (c.nc == 0) /* a launch of no blocks is an error */
        return cudaSuccess;
    env_sum_kernel<<<blocks_for((int64_t)c.nc * p.U * p.nsh), kBlock, 0, s>>>(p, c, omega, Y, G);
    return cudaGetLastError();
}

template <typename REAL>
cudaError_t tp_forward(const Params<REAL> &p, const Chunk &c, const TpLayer<REAL> &tp,
                       const REAL *Vin, const REAL *G, REAL *Vout, REAL *scal, int ld_scal,
                       cudaStream_t s)
{
    if (c.n == 0) /* a launch of no blocks is an error */
        return cudaSuccess;
    if (tp.code) {
        with_lmax(p.lmax, [&](auto L) {
            tp_forward_gen_kernel<REAL, decltype(L)::value>
                <<<blocks_for(c.n * p.U), kBlock, 0, s>>>(p, c, tp, Vin, G, Vout, scal, ld_scal);
        });
        return cudaGetLastError();
    }
    const int slots = tp.din + p.nsh + tp.dout, nt = tp_threads<REAL>(slots);
    tp_forward_kernel<<<(unsigned)((c.n * p.U + nt - 1) / nt), nt, slots * nt * sizeof(REAL),
                        s>>>(p, c, tp, Vin, G, Vout, scal, ld_scal);
    return cudaGetLastError();
}

template <typename REAL>
cudaError_t centre_energy(const Params<REAL> &p, const Chunk &c, const REAL *eps, double *energy,
                          cudaStream_t s)
{
    if (c.nc == 0) /* a launch of no blocks is an error */
        return cudaSuccess;
    centre_energy_kernel<<<blocks_for(c.nc), kBlock, 0, s>>>(p, c, eps, energy);
    return cudaGetLastError();
}

template <typename REAL>
cudaError_t readout_seed(const Params<REAL> &p, const Chunk &c, REAL *g, cudaStream_t s)
{
    if (c.n == 0) /* a launch of no blocks is an error */
        return cudaSuccess;
    readout_seed_kernel<<<blocks_for(c.n), kBlock, 0, s>>>(p, c, g);
    return cudaGetLastError();
}

template <typename REAL>
cudaError_t tp_backward(const Params<REAL> &p, const Chunk &c, const TpLayer<REAL> &tp,
                        const REAL *Vin, const REAL *G, const REAL *gVout, const REAL *gscal,
                        REAL *gVin, REAL *gG, cudaStream_t s)
{
    if (c.nc == 0) /* a launch of no blocks is an error */
        return cudaSuccess;
    if (tp.code) {
        with_lmax(p.lmax, [&](auto L) {
            tp_backward_gen_kernel<REAL, decltype(L)::value>
                <<<blocks_for((int64_t)c.nc * p.U), kBlock, 0, s>>>(p, c, tp, Vin, G, gVout,
                                                                   gscal, gVin, gG);
        });
        return cudaGetLastError();
    }
    const int slots = 2 * p.nsh + 2 * tp.din + tp.dout, nt = tp_threads<REAL>(slots);
    tp_backward_kernel<<<(unsigned)(((int64_t)c.nc * p.U + nt - 1) / nt), nt,
                         slots * nt * sizeof(REAL), s>>>(p, c, tp, Vin, G, gVout, gscal, gVin,
                                                         gG);
    return cudaGetLastError();
}

template <typename REAL>
cudaError_t env_backward(const Params<REAL> &p, const Chunk &c, const REAL *gG, const REAL *omega,
                         const REAL *Y, REAL *gomega, int ld_gomega, REAL *gY, int add_gY,
                         cudaStream_t s)
{
    if (c.n == 0) /* a launch of no blocks is an error */
        return cudaSuccess;
    sh_weights_backward_kernel<<<(unsigned)c.n, kBlock, 0, s>>>(p, c, gG, 1, Y, omega, gomega,
                                                                 ld_gomega, gY, add_gY);
    return cudaGetLastError();
}

template <typename REAL>
cudaError_t tensor_embed_backward(const Params<REAL> &p, const Chunk &c, const REAL *gV0,
                                  const REAL *Y, const REAL *w, REAL *gw, REAL *gY,
                                  cudaStream_t s)
{
    if (c.n == 0) /* a launch of no blocks is an error */
        return cudaSuccess;
    sh_weights_backward_kernel<<<(unsigned)c.n, kBlock, 0, s>>>(p, c, gV0, 0, Y, w, gw,
                                                                 p.U * p.nl, gY, 1);
    return cudaGetLastError();
}

template <typename REAL>
cudaError_t edge_gradient(const Params<REAL> &p, const Chunk &c, const REAL *gbasis,
                          const REAL *dbasis, const REAL *gY, double *grad, cudaStream_t s)
{
    if (c.n == 0) /* a launch of no blocks is an error */
        return cudaSuccess;
    with_lmax(p.lmax, [&](auto L) {
        edge_gradient_kernel<REAL, decltype(L)::value><<<blocks_for(c.n), kBlock, 0, s>>>(
            p, c, gbasis, dbasis, gY, grad);
    });
    return cudaGetLastError();
}

#define FNQ_ALLEGRO_KERNELS(REAL)                                                               \
    template cudaError_t geometry(const Params<REAL> &, const Chunk &, REAL *, REAL *, REAL *,  \
                                  cudaStream_t);                                                \
    template cudaError_t embed_scale(const Params<REAL> &, const Chunk &, REAL *, cudaStream_t); \
    template cudaError_t tensor_embed(const Params<REAL> &, const Chunk &, const REAL *,        \
                                      const REAL *, REAL *, cudaStream_t);                      \
    template cudaError_t env_sum(const Params<REAL> &, const Chunk &, const REAL *,             \
                                 const REAL *, REAL *, cudaStream_t);                           \
    template cudaError_t tp_forward(const Params<REAL> &, const Chunk &, const TpLayer<REAL> &, \
                                    const REAL *, const REAL *, REAL *, REAL *, int,            \
                                    cudaStream_t);                                              \
    template cudaError_t centre_energy(const Params<REAL> &, const Chunk &, const REAL *,       \
                                       double *, cudaStream_t);                                 \
    template cudaError_t readout_seed(const Params<REAL> &, const Chunk &, REAL *, cudaStream_t); \
    template cudaError_t tp_backward(const Params<REAL> &, const Chunk &, const TpLayer<REAL> &, \
                                     const REAL *, const REAL *, const REAL *, const REAL *,    \
                                     REAL *, REAL *, cudaStream_t);                             \
    template cudaError_t env_backward(const Params<REAL> &, const Chunk &, const REAL *,        \
                                      const REAL *, const REAL *, REAL *, int, REAL *, int,     \
                                      cudaStream_t);                                            \
    template cudaError_t tensor_embed_backward(const Params<REAL> &, const Chunk &,             \
                                               const REAL *, const REAL *, const REAL *,        \
                                               REAL *, REAL *, cudaStream_t);                   \
    template cudaError_t edge_gradient(const Params<REAL> &, const Chunk &, const REAL *,       \
                                       const REAL *, const REAL *, double *, cudaStream_t);
FNQ_ALLEGRO_KERNELS(float)
FNQ_ALLEGRO_KERNELS(double)

} // namespace allegro
} // namespace fnqcu
