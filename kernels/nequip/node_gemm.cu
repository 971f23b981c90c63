/*
 * node_gemm.cu: the node-wise work of a layer over all its atoms (node_gemm.cuh): a tiled GEMM
 * kernel for e3nn linears, and the per-atom norm and gate between them (node_ops.cuh).
 */
#include <string.h>

#include <algorithm>

#include "nequip/node_gemm.cuh"
#include "nequip/node_ops.cuh"
#include "runtime/smem_config.cuh"

namespace fnqcu {

/* A tile is 128 rows (atom, m) x BN channels; each thread a 4 x TN register tile: TN = 4
 * (BN 32), or TN = 8 (BN 64: the columns 4 tx .. 4 tx + 3 and 32 + 4 tx .. 32 + 4 tx + 3) for
 * a float32 destination block of 64 channels or more (twice the products per tile for the
 * same row table, instruction walk and A tiles: the transposed linears have a K of 32 to 128,
 * so that fixed work was as large as the products; 0-2.5 % off a whole evaluation, the same
 * bits: bench/NOTES.md, session 52). */
constexpr int kGemmBM = 128, kGemmBK = 16;
constexpr int kGemmTerms = 2, kGemmJobs = 2;
static_assert(kThreads == (kGemmBM / 4) * 8, "a 4 x TN tile per thread, 8 threads a row");
static_assert(kThreads == 16 * (kGemmBM / 8), "A tile loads: 16 k by 16 rows, 8 times");

/* channels per tile of a destination block of N channels */
template <typename REAL> constexpr int gemm_bn(int N)
{
    return sizeof(REAL) == 4 && N >= 64 ? 64 : 32;
}

/* One linear applied to x: rows of x in `src`'s layout (ir_mul), row of atom a at
 * x + a * sx, or x + species[a] * sx (layer 0's input, a row per species). */
template <typename REAL> struct GemmTerm {
    Linear<REAL> lin;
    int transpose; /* y = linear^T(x): weights lin.wt, blocks matched by in_block */
    Irreps src;
    const REAL *x;
    int64_t sx;
    int x_by_species;
};

/* y (accumulate: +=) = row_scale[species] * (sum of the terms + bias), in dst's layout (tiled
 * or not) */
template <typename REAL> struct GemmJob {
    Irreps dst;
    REAL *y;
    int64_t sy;
    int y_tiled, accumulate;
    /* every 4 consecutive columns of a tile (from a multiple of 4) are 4 consecutive,
     * 16-byte aligned values of y: the 128 x 64 tiles' epilogue stores them as vectors
     * (gemm_launch checks) */
    int y_vec4;
    const REAL *row_scale; /* [n_species], or nullptr */
    /* added to the sum before row_scale, per value of dst's untiled layout (a modality's
     * bias), or nullptr; only where the job does not accumulate */
    const REAL *bias;
    int n_terms;
    GemmTerm<REAL> term[kGemmTerms];
    int tile_start[kMaxBlocks + 1]; /* first tile of each dst block, within the job */
};

template <typename REAL> struct GemmArgs {
    int64_t n_atoms;
    const int *species;
    /* rows (atom, m) run over the atoms in this order: sorted by species where a linear has
     * weights per species, so a tile holds one species or few (nullptr: atom order) */
    const int *order;
    int n_jobs;
    int job_start[kGemmJobs + 1];
    GemmJob<REAL> job[kGemmJobs];
};

__device__ __forceinline__ void load4(const float *p, float (&v)[4])
{
    const float4 q = *reinterpret_cast<const float4 *>(p);
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}
__device__ __forceinline__ void load4(const double *p, double (&v)[4])
{
    const double2 a = reinterpret_cast<const double2 *>(p)[0];
    const double2 b = reinterpret_cast<const double2 *>(p)[1];
    v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
}
__device__ __forceinline__ void store4(float *p, const float (&v)[4])
{
    *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
}
__device__ __forceinline__ void store4(double *p, const double (&v)[4])
{
    reinterpret_cast<double2 *>(p)[0] = make_double2(v[0], v[1]);
    reinterpret_cast<double2 *>(p)[1] = make_double2(v[2], v[3]);
}

/* the atom of row (atom, m): 32-bit division where the rows allow it (64-bit division is
 * a long software sequence, a noticeable part of a tile with a short K) */
__device__ __forceinline__ int64_t atom_of(int64_t row, int d, int64_t rows)
{
    return rows <= (int64_t)UINT32_MAX ? (int64_t)((uint32_t)row / (uint32_t)d) : row / d;
}

/* blocks per SM: float fits 4 in registers at TN = 4 (64 each, no spills), 3 at TN = 8;
 * double spills at 3 (the per-species passes) */
template <typename REAL, int TN>
constexpr int kGemmBlocksPerSM = sizeof(REAL) == 4 ? (TN == 4 ? 4 : 3) : 2;

/* The tiles of the blocks whose gemm_bn is 8 TN (the other blocks' tiles are in the other
 * launch; gemm_launch). */
template <typename REAL, int TN>
__global__ void __launch_bounds__(kThreads, (kGemmBlocksPerSM<REAL, TN>)) linear_gemm_kernel(const __grid_constant__ GemmArgs<REAL> g)
{
    constexpr int BN = 8 * TN, NH = TN / 4; /* column halves of 4 per thread */
    constexpr int NBL = BN / 16;            /* B values each thread loads per k step */
    /* two stages: the next k step's tiles are loaded into registers while this one's are
     * multiplied (one barrier per step) */
    __shared__ __align__(16) REAL As[2][kGemmBK][kGemmBM + 4]; /* k-major: rows as vectors */
    __shared__ __align__(16) REAL Bs[2][kGemmBK][BN];
    int tile = blockIdx.x, j = 0;
    while (j + 1 < g.n_jobs && tile >= g.job_start[j + 1])
        j++;
    const GemmJob<REAL> &J = g.job[j];
    tile -= g.job_start[j];
    int b = 0;
    while (b + 1 < J.dst.n && tile >= J.tile_start[b + 1])
        b++;
    tile -= J.tile_start[b];
    const int d = 2 * J.dst.l[b] + 1, N = J.dst.mul[b];
    const int64_t rows = g.n_atoms * d;
    const int col_tiles = (N + BN - 1) / BN;
    const int64_t r0 = (int64_t)(tile / col_tiles) * kGemmBM;
    const int c0 = (tile % col_tiles) * BN;
    const int tx = threadIdx.x % 8, ty = threadIdx.x / 8;
    const int lk = threadIdx.x % 16, lr = threadIdx.x / 16; /* A loads: k, first row */
    const int bk = threadIdx.x / 16, bc = (threadIdx.x % 16) * NBL; /* B loads */

    /* rows of the tile as (atom, m) -> start of the current term's block in x, and the
     * atom's species (-1 past the end) */
    __shared__ const REAL *xrow[kGemmBM];
    __shared__ int rsp[kGemmBM];
    __shared__ int next_sp;
    REAL acc[4][TN];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int c = 0; c < TN; c++)
            acc[i][c] = 0;
    for (int t = 0; t < J.n_terms; t++) {
        const GemmTerm<REAL> &T = J.term[t];
        for (int k = 0; k < T.lin.n_instr; k++) {
            const LinInstr ins = T.lin.instr[k];
            if ((T.transpose ? ins.in_block : ins.out_block) != b)
                continue;
            const int sb = T.transpose ? ins.out_block : ins.in_block;
            const int K = T.src.mul[sb];
            /* weights [K][N] row-major either way (wt is the transposed copy); the
             * instruction's factor goes into the B tile, so one accumulator serves all */
            const REAL *W0 = (T.transpose ? T.lin.wt : T.lin.w) + ins.w_off;
            const REAL alpha = REAL(ins.alpha);
            __syncthreads(); /* the previous instruction's rows and tiles are read */
            if (threadIdx.x < kGemmBM) {
                const int64_t row = r0 + threadIdx.x;
                const REAL *p = nullptr;
                int sp = -1;
                if (row < rows) {
                    const int64_t pos = atom_of(row, d, rows);
                    const int m = (int)(row - pos * d);
                    const int64_t a = g.order ? g.order[pos] : pos;
                    sp = g.species[a];
                    p = T.x + (T.x_by_species ? (int64_t)sp : a) * T.sx + T.src.off[sb] + m * K;
                }
                xrow[threadIdx.x] = p;
                rsp[threadIdx.x] = sp;
            }
            __syncthreads(); /* rows written */
            /* acc += the rows' x . W, rows of species `only` alone (-1: every row), the
             * others read as zeros */
            auto pass = [&](const REAL *W, int only) {
                REAL ra[8], rb[NBL];
                auto fetch = [&](int k0) {
                    const bool kin = k0 + lk < K;
#pragma unroll
                    for (int i = 0; i < 8; i++) {
                        const int r = lr + 16 * i;
                        const REAL *p = xrow[r];
                        ra[i] = kin && p && (only < 0 || rsp[r] == only) ? p[k0 + lk] : REAL(0);
                    }
#pragma unroll
                    for (int c = 0; c < NBL; c++)
                        rb[c] = k0 + bk < K && c0 + bc + c < N
                                    ? alpha * __ldg(W + (int64_t)(k0 + bk) * N + c0 + bc + c)
                                    : REAL(0);
                };
                fetch(0);
                for (int k0 = 0, st = 0; k0 < K; k0 += kGemmBK, st ^= 1) {
#pragma unroll
                    for (int i = 0; i < 8; i++)
                        As[st][lk][lr + 16 * i] = ra[i];
#pragma unroll
                    for (int c = 0; c < NBL; c++)
                        Bs[st][bk][bc + c] = rb[c];
                    __syncthreads();
                    if (k0 + kGemmBK < K)
                        fetch(k0 + kGemmBK);
#pragma unroll
                    for (int kk = 0; kk < kGemmBK; kk++) {
                        REAL av[4], bv[NH][4];
                        load4(&As[st][kk][4 * ty], av);
#pragma unroll
                        for (int h = 0; h < NH; h++)
                            load4(&Bs[st][kk][32 * h + 4 * tx], bv[h]);
#pragma unroll
                        for (int i = 0; i < 4; i++)
#pragma unroll
                            for (int h = 0; h < NH; h++)
#pragma unroll
                                for (int c = 0; c < 4; c++)
                                    acc[i][4 * h + c] += av[i] * bv[h][c];
                    }
                }
            };
            if (!T.lin.species_indexed) {
                pass(W0, -1);
                continue;
            }
            /* weights per species: a pass per species of the tile's rows (in species order:
             * one, or a few at a boundary), so every output sums its own species' terms in
             * the same order as with one pass */
            for (int sp = rsp[0]; sp >= 0;) {
                pass(W0 + (int64_t)sp * T.lin.n_w, sp);
                __syncthreads(); /* this pass's tiles are read */
                if (threadIdx.x == 0) {
                    int next = -1;
                    for (int r = 0; r < kGemmBM && next < 0; r++)
                        next = rsp[r] > sp ? rsp[r] : -1;
                    next_sp = next;
                }
                __syncthreads();
                sp = next_sp;
            }
        }
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int64_t row = r0 + 4 * ty + i;
        if (row >= rows)
            continue;
        const int64_t pos = atom_of(row, d, rows);
        const int m = (int)(row - pos * d);
        const int64_t a = g.order ? g.order[pos] : pos;
        const REAL scale = J.row_scale ? J.row_scale[g.species[a]] : REAL(1);
        REAL *yr = J.y + a * J.sy;
#pragma unroll
        for (int h = 0; h < NH; h++) {
            const int col0 = c0 + 32 * h + 4 * tx;
            auto at = [&](int col) {
                return J.y_tiled ? tiled_index(J.dst, b, m, col) : J.dst.off[b] + m * N + col;
            };
            if (TN == 8 && J.y_vec4 && col0 + 3 < N) {
                /* one 16-byte store (and load, to accumulate) instead of four */
                REAL *p = yr + at(col0), v[4];
                if (J.accumulate)
                    load4(p, v);
#pragma unroll
                for (int c = 0; c < 4; c++) {
                    const REAL bias = J.bias ? J.bias[J.dst.off[b] + m * N + col0 + c] : REAL(0);
                    const REAL x = (acc[i][4 * h + c] + bias) * scale;
                    v[c] = J.accumulate ? v[c] + x : x;
                }
                store4(p, v);
                continue;
            }
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const int col = col0 + c;
                if (col >= N)
                    continue;
                const int o = at(col);
                const REAL bias = J.bias ? J.bias[J.dst.off[b] + m * N + col] : REAL(0);
                const REAL v = (acc[i][4 * h + c] + bias) * scale;
                yr[o] = J.accumulate ? yr[o] + v : v;
            }
        }
    }
}

template <typename REAL>
static void add_term(GemmJob<REAL> &J, const Linear<REAL> &lin, bool transpose,
                     const Irreps &src, const REAL *x, int64_t sx, bool x_by_species)
{
    GemmTerm<REAL> &T = J.term[J.n_terms++];
    T.lin = lin;
    T.transpose = transpose;
    T.src = src;
    T.x = x;
    T.sx = sx;
    T.x_by_species = x_by_species;
}

template <typename REAL>
static GemmJob<REAL> &new_job(GemmArgs<REAL> &g, const Irreps &dst, REAL *y, int64_t sy,
                              bool tiled, bool accumulate, const REAL *row_scale)
{
    GemmJob<REAL> &J = g.job[g.n_jobs++];
    memset(&J, 0, sizeof(J));
    J.dst = dst;
    J.y = y;
    J.sy = sy;
    J.y_tiled = tiled;
    J.accumulate = accumulate;
    J.row_scale = row_scale;
    return J;
}

template <typename REAL>
static GemmArgs<REAL> gemm_args(int64_t n_atoms, const int *species, const int *order)
{
    GemmArgs<REAL> g;
    memset(&g, 0, sizeof(g));
    g.n_atoms = n_atoms;
    g.species = species;
    g.order = order;
    return g;
}

/* Whether every 4 consecutive columns of a tile (from a multiple of 4) are 4 consecutive,
 * 16-byte aligned values of J's destination rows (the epilogue's vector stores). */
template <typename REAL> static bool rows_hold_vec4(const GemmJob<REAL> &J)
{
    if (J.sy % 4 != 0 || reinterpret_cast<uintptr_t>(J.y) % 16 != 0)
        return false;
    for (int b = 0; b < J.dst.n; b++)
        if (J.y_tiled ? J.dst.tile_off[b] % 4 != 0 : J.dst.off[b] % 4 != 0 || J.dst.mul[b] % 4 != 0)
            return false;
    return true;
}

/* One launch of linear_gemm_kernel<REAL, TN> over the tiles of the destination blocks whose
 * gemm_bn is 8 TN (the others get no tiles in it). */
template <typename REAL, int TN>
static cudaError_t gemm_launch_tn(GemmArgs<REAL> g, cudaStream_t stream, int *launches)
{
    int64_t tiles = 0;
    for (int j = 0; j < g.n_jobs; j++) {
        GemmJob<REAL> &J = g.job[j];
        g.job_start[j] = (int)tiles;
        int64_t t = 0;
        for (int b = 0; b < J.dst.n; b++) {
            J.tile_start[b] = (int)t;
            const int bn = gemm_bn<REAL>(J.dst.mul[b]);
            if (bn != 8 * TN)
                continue;
            const int64_t rows = g.n_atoms * (2 * J.dst.l[b] + 1);
            t += (rows + kGemmBM - 1) / kGemmBM * ((J.dst.mul[b] + bn - 1) / bn);
        }
        J.tile_start[J.dst.n] = (int)t;
        tiles += t;
    }
    g.job_start[g.n_jobs] = (int)tiles;
    if (tiles == 0)
        return cudaSuccess;
    linear_gemm_kernel<REAL, TN><<<(unsigned)tiles, kThreads, 0, stream>>>(g);
    ++*launches;
    return cudaGetLastError();
}

/* float32 blocks of 64 channels or more on 128 x 64 tiles, in a launch of their own, with
 * vector stores where the rows allow them; the other blocks on 128 x 32 */
template <typename REAL>
static cudaError_t gemm_launch(GemmArgs<REAL> &g, cudaStream_t stream, int *launches)
{
    for (int j = 0; j < g.n_jobs; j++)
        g.job[j].y_vec4 = rows_hold_vec4(g.job[j]);
    cudaError_t e = gemm_launch_tn<REAL, 4>(g, stream, launches);
    if constexpr (sizeof(REAL) == 4)
        if (e == cudaSuccess)
            e = gemm_launch_tn<REAL, 8>(g, stream, launches);
    return e;
}

template <typename REAL> bool node_linears_per_species(const DeviceModel<REAL> &dm)
{
    for (int l = 0; l < dm.n_layers; l++) {
        const Layer<REAL> &L = dm.layers[l];
        if (L.linear_1.species_indexed || L.linear_2.species_indexed ||
            L.self_conn.species_indexed)
            return true;
    }
    return false;
}

/* shared memory of the node kernels: NB rows of each vector, then the reduction scratch */
template <typename REAL> __host__ __device__ static size_t node_smem(int vec_len, int vectors)
{
    const size_t v = ((sizeof(REAL) * kNB * vec_len * vectors + sizeof(REAL) * kNB) + 15) & ~15;
    return v + sizeof(double) * kNB * kThreads;
}

/* norm and gate of layer a.L for NB atoms: y_save -> rho_save, hout (+ the input: resnet) */
template <typename REAL>
__global__ void __launch_bounds__(kThreads) node_forward_kernel(const __grid_constant__ ForwardArgs<REAL> a)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const Layer<REAL> &L = a.L;
    const int r0 = blockIdx.x * kNB, nb = min(kNB, a.n_local - r0);
    const int dconv = L.conv.dim, dout = L.out.dim, din = L.in.dim;
    const int len = dconv > dout ? dconv : dout;
    REAL *sYn = (REAL *)smem, *sH = sYn + kNB * len, *rho = sH + kNB * len;
    double *red = (double *)(smem + node_smem<REAL>(len, 2) - sizeof(double) * kNB * kThreads);
    norm_fwd<REAL, kNB>(L, nb, a.y_save + (int64_t)r0 * dconv, dconv, rho, sYn, dconv, red);
    __syncthreads();
    if (threadIdx.x < nb)
        a.rho_save[r0 + threadIdx.x] = rho[threadIdx.x];
    gate_fwd<REAL, kNB>(L, nb, sYn, dconv, sH, dout);
    __syncthreads();
    for (int q = 0; q < nb; q++) {
        const REAL *x = a.layer == 0 ? a.embed + (int64_t)a.species[r0 + q] * din
                                     : a.hin + (int64_t)(r0 + q) * a.W;
        for (int k = threadIdx.x; k < dout; k += blockDim.x)
            a.hout[(int64_t)(r0 + q) * a.W + k] = sH[q * dout + k] + (L.resnet ? x[k] : REAL(0));
    }
}

/* the last layer's norm, gate and readout for NB atoms: atomic energies, then the top of the
 * backward pass: gy = norm^T(gate^T(dE/dh_L)), in the rows after y_save's n_local (the last
 * layer's y buffer has room for both: FNQ_DEBUG_LAYERS reads y after this), and
 * gpart_out = dE/dh_L (resnet) or 0, for the self-connection's transposed GEMM to add to */
template <typename REAL>
__global__ void __launch_bounds__(kThreads) node_last_kernel(const __grid_constant__ ForwardArgs<REAL> a)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const Layer<REAL> &L = a.L;
    const int r0 = blockIdx.x * kNB, nb = min(kNB, a.n_local - r0);
    const int dconv = L.conv.dim, dout = L.out.dim, len = a.epi_len;
    REAL *sYn = (REAL *)smem, *sH = sYn + kNB * len, *sT1 = sH + kNB * len,
         *sT2 = sT1 + kNB * len, *rho = sT2 + kNB * len;
    double *red = (double *)(smem + node_smem<REAL>(len, 4) - sizeof(double) * kNB * kThreads);
    int t[kNB];
#pragma unroll
    for (int q = 0; q < kNB; q++)
        t[q] = q < nb ? a.species[r0 + q] : 0;
    const REAL *y = a.y_save + (int64_t)r0 * dconv;
    norm_fwd<REAL, kNB>(L, nb, y, dconv, rho, sYn, dconv, red);
    __syncthreads();
    gate_fwd<REAL, kNB>(L, nb, sYn, dconv, sH, dout);
    __syncthreads();
    if (L.resnet)
        for (int q = 0; q < nb; q++) {
            const REAL *x = a.layer == 0 ? a.embed + (int64_t)t[q] * L.in.dim
                                         : a.hin + (int64_t)(r0 + q) * a.W;
            for (int k = threadIdx.x; k < dout; k += blockDim.x)
                sH[q * dout + k] += x[k];
        }
    __syncthreads();
    readout_energies<REAL>(a, t, nb, r0, sH, dout, sT1, sT2);
    /* dE/dh_L (species only: the readout is linear) -> gate^T -> norm^T */
    REAL *gh = sH, *gyn = sT1, *gy = sT2;
    for (int q = 0; q < nb; q++)
        for (int k = threadIdx.x; k < dout; k += blockDim.x)
            gh[q * dout + k] = a.grad_top[(int64_t)t[q] * dout + k];
    __syncthreads();
    norm_gate_bwd<REAL, kNB>(L, nb, y, dconv, rho, gh, dout, sYn, gyn, gy, dconv, red);
    __syncthreads();
    REAL *gy_rows = a.y_save + ((int64_t)a.n_local + r0) * dconv;
    for (int k = threadIdx.x; k < nb * dconv; k += blockDim.x)
        gy_rows[k] = gy[k];
    if (a.layer > 0)
        for (int q = 0; q < nb; q++)
            for (int k = threadIdx.x; k < L.in.dim; k += blockDim.x)
                a.gpart_out[(int64_t)(r0 + q) * a.W + k] = L.resnet ? gh[q * dout + k] : REAL(0);
}

/* gate and norm backward of the layer below (b.prev) for NB atoms: the input gradient g
 * (gpart_in) -> gy, written over y_prev (nothing reads those gate inputs after this); and
 * gpart_out = g (resnet) or 0, for the self-connection's transposed GEMM to add to */
template <typename REAL>
__global__ void __launch_bounds__(kThreads) node_backward_kernel(const __grid_constant__ BackwardArgs<REAL> b)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const Layer<REAL> &P = b.prev;
    const int r0 = blockIdx.x * kNB, nb = min(kNB, b.n_local - r0);
    const int din = b.L.in.dim, pconv = P.conv.dim;
    const int len = pconv > din ? pconv : din;
    REAL *sYn = (REAL *)smem, *sGyn = sYn + kNB * len, *sGin = sGyn + kNB * len,
         *rho = sGin + kNB * len;
    double *red = (double *)(smem + node_smem<REAL>(len, 3) - sizeof(double) * kNB * kThreads);
    /* the gate inputs y are read in place (from L1) and overwritten by gy at the end */
    REAL *y = const_cast<REAL *>(b.y_prev) + (int64_t)r0 * pconv;
    for (int q = 0; q < nb; q++)
        for (int k = threadIdx.x; k < din; k += blockDim.x)
            sGin[q * din + k] = b.gpart_in[(int64_t)(r0 + q) * b.W + k];
    if (threadIdx.x < nb)
        rho[threadIdx.x] = b.rho_prev[r0 + threadIdx.x];
    __syncthreads();
    REAL *gy = sYn;
    norm_gate_bwd<REAL, kNB>(P, nb, y, pconv, rho, sGin, din, sYn, sGyn, gy, pconv, red);
    __syncthreads();
    for (int k = threadIdx.x; k < nb * pconv; k += blockDim.x)
        y[k] = gy[k];
    if (b.layer - 1 > 0)
        for (int q = 0; q < nb; q++)
            for (int k = threadIdx.x; k < P.in.dim; k += blockDim.x)
                b.gpart_out[(int64_t)(r0 + q) * b.W + k] = P.resnet ? sGin[q * din + k] : REAL(0);
}

template <typename REAL> cudaError_t node_gemm_configure(int epi_len)
{
    /* the last layer's kernel has the most vectors, each at most epi_len long */
    const void *kernels[] = {(const void *)node_forward_kernel<REAL>,
                             (const void *)node_last_kernel<REAL>,
                             (const void *)node_backward_kernel<REAL>};
    return allow_dynamic_smem(kernels, node_smem<REAL>(epi_len, 4));
}

/* a per-atom node kernel on NB atoms per block, with `smem` bytes of dynamic shared memory
 * (within what node_gemm_configure allowed) */
template <typename ARGS>
static cudaError_t node_kernel_launch(void (*kernel)(ARGS), const ARGS &args, int64_t n,
                                      size_t smem, cudaStream_t stream, int *launches)
{
    kernel<<<(unsigned)((n + kNB - 1) / kNB), kThreads, smem, stream>>>(args);
    ++*launches;
    return cudaGetLastError();
}

/* after the node backward of layer P gave gy (rows of P.conv): P's dE/dA = linear_2^T(gy),
 * tiled, and (with_self) its input gradient gpart += self_connection^T(gy) */
template <typename REAL>
static cudaError_t down_gemms(const Layer<REAL> &P, int64_t n, const int *species,
                              const int *order, const REAL *gy, REAL *ga_out, int ga_stride,
                              bool with_self, REAL *gpart_out, int W, cudaStream_t stream,
                              int *launches)
{
    GemmArgs<REAL> g = gemm_args<REAL>(n, species, order);
    GemmJob<REAL> &A = new_job<REAL>(g, P.mid, ga_out, ga_stride, true, false, nullptr);
    add_term<REAL>(A, P.linear_2, true, P.conv, gy, P.conv.dim, false);
    if (with_self && P.self_conn.n_instr > 0) {
        GemmJob<REAL> &S = new_job<REAL>(g, P.in, gpart_out, W, false, true, nullptr);
        add_term<REAL>(S, P.self_conn, true, P.conv, gy, P.conv.dim, false);
    }
    return gemm_launch<REAL>(g, stream, launches);
}

template <typename REAL>
cudaError_t node_forward_launch(const ForwardArgs<REAL> &a, const int *order,
                                cudaStream_t stream, int *launches)
{
    const Layer<REAL> &L = a.L, &N = a.next;
    const int64_t n = a.n_local;
    if (n == 0)
        return cudaSuccess;
    GemmArgs<REAL> g = gemm_args<REAL>(n, a.species, order);
    /* y = linear_2(A) + self_connection(h) */
    GemmJob<REAL> &J = new_job<REAL>(g, L.conv, a.y_save, L.conv.dim, false, false, nullptr);
    J.bias = L.bias_2;
    add_term<REAL>(J, L.linear_2, false, L.mid, a.A, a.a_stride, false);
    if (L.self_conn.n_instr > 0) {
        if (a.layer == 0)
            add_term<REAL>(J, L.self_conn, false, L.in, a.embed, L.in.dim, true);
        else
            add_term<REAL>(J, L.self_conn, false, L.in, a.hin, a.W, false);
    }
    cudaError_t e = gemm_launch<REAL>(g, stream, launches);
    if (e != cudaSuccess)
        return e;
    if (a.last) {
        /* energies and the top of the backward, then this layer's dE/dA */
        e = node_kernel_launch(node_last_kernel<REAL>, a, n, node_smem<REAL>(a.epi_len, 4),
                               stream, launches);
        if (e != cudaSuccess)
            return e;
        return down_gemms<REAL>(L, n, a.species, order, a.y_save + n * L.conv.dim,
                                a.ga_out, a.ga_stride, a.layer > 0, a.gpart_out, a.W, stream,
                                launches);
    }
    e = node_kernel_launch(node_forward_kernel<REAL>, a, n,
                           node_smem<REAL>(std::max(L.conv.dim, L.out.dim), 2), stream,
                           launches);
    if (e != cudaSuccess)
        return e;
    /* the next layer's sender rows h1 = linear_1(h') s, tiled */
    g = gemm_args<REAL>(n, a.species, order);
    GemmJob<REAL> &H = new_job<REAL>(g, N.in, a.h1_next, N.in.tile_dim, true, false,
                                     N.sender_scale);
    H.bias = N.bias_1;
    add_term<REAL>(H, N.linear_1, false, N.in, a.hout, a.W, false);
    return gemm_launch<REAL>(g, stream, launches);
}

template <typename REAL>
cudaError_t node_backward_launch(const BackwardArgs<REAL> &b, const int *order,
                                 cudaStream_t stream, int *launches)
{
    const Layer<REAL> &L = b.L, &P = b.prev;
    const int64_t n = b.n_local;
    if (n == 0)
        return cudaSuccess;
    GemmArgs<REAL> g = gemm_args<REAL>(n, b.species, order);
    /* g = gpart + linear_1^T(dh1) s, in place */
    GemmJob<REAL> &G = new_job<REAL>(g, L.in, const_cast<REAL *>(b.gpart_in), b.W, false, true,
                                     L.sender_scale);
    add_term<REAL>(G, L.linear_1, true, L.in, b.dh1, L.in.dim, false);
    cudaError_t e = gemm_launch<REAL>(g, stream, launches);
    if (e != cudaSuccess)
        return e;
    e = node_kernel_launch(node_backward_kernel<REAL>, b, n,
                           node_smem<REAL>(std::max(P.conv.dim, L.in.dim), 3), stream, launches);
    if (e != cudaSuccess)
        return e;
    return down_gemms<REAL>(P, n, b.species, order, b.y_prev, b.ga_out, b.ga_stride,
                            b.layer - 1 > 0, b.gpart_out, b.W, stream, launches);
}

#define FNQ_INSTANTIATE(REAL)                                                                   \
    template bool node_linears_per_species<REAL>(const DeviceModel<REAL> &);                    \
    template cudaError_t node_gemm_configure<REAL>(int);                                        \
    template cudaError_t node_forward_launch<REAL>(const ForwardArgs<REAL> &, const int *,      \
                                                   cudaStream_t, int *);                  \
    template cudaError_t node_backward_launch<REAL>(const BackwardArgs<REAL> &, const int *,    \
                                                    cudaStream_t, int *);
FNQ_INSTANTIATE(float)
FNQ_INSTANTIATE(double)
#undef FNQ_INSTANTIATE

} // namespace fnqcu
