/*
 * allegro_mlp.cuh: Allegro's scalar MLPs over the rows of one chunk (one row per edge), as
 * GEMMs (cuBLAS', or on Hopper in float32 our tensor-core gemm_3xtf32) with the activation a
 * kernel of its own (allegro_mlp.cu). An MLP's input and
 * output may each be up to two column ranges of different arrays (the latent MLPs read
 * [x^0 .. x^k | scalars] and write [x^(k+1) | omega^(k+1)] where they live, docs/allegro.md
 * step 7d): each range meets its block of the weight matrix in a GEMM of its own, so nothing
 * is gathered or scattered. cuBLAS and gemm_3xtf32 give the same bits on every run for the
 * same sizes on the same GPU, so the engine stays bitwise reproducible.
 */
#pragma once

#include <cublas_v2.h>

#include "runtime/common.cuh"

extern "C" {
#include "allegro/allegro.h"
}

namespace fnqcu {
namespace allegro {

/* x <- act(x W_0) ... W_{K-1}, weights [dim[k]][dim[k+1]] row-major on the device; with the
 * 3xTF32 split also each weight as (lo, hi, hi) triples (w_hi = w rounded to TF32, w_lo = w -
 * w_hi) along the sum of each direction's product: w3 [dim[k]][3][dim[k+1]] (forward, x W),
 * w3t [dim[k]][dim[k+1]][3] (backward, g W^T) */
template <typename REAL> struct Mlp {
    int K = 0;
    int dim[FNQ_ALLEGRO_MAX_MLP + 1] = {};
    REAL *w[FNQ_ALLEGRO_MAX_MLP] = {};
    REAL *w3[FNQ_ALLEGRO_MAX_MLP] = {}, *w3t[FNQ_ALLEGRO_MAX_MLP] = {};
    REAL *wt[FNQ_ALLEGRO_MAX_MLP] = {}; /* W^T [dim[k+1]][dim[k]]: the forward's Bt (gemm_3xtf32) */
    REAL *wt_lo[FNQ_ALLEGRO_MAX_MLP] = {}, *w_lo[FNQ_ALLEGRO_MAX_MLP] = {}; /* their lo's */
    int act_kind = 0;
    REAL act_scale = 1;
    int n_pre = 0; /* hidden pre-activations per row: dim[1] + ... + dim[K-1] */
};

/* A column range of a row-major array: row r's values at p + r * ld, `cols` of them; split:
 * the range's 3xTF32 triples where an activation already wrote them (rows x 3 cols), or null;
 * lo: the range's lo for gemm_3xtf32 where an activation wrote it (laid out as p), or null */
template <typename REAL> struct Cols {
    REAL *p;
    int ld, cols;
    const REAL *split = nullptr;
    const REAL *lo = nullptr;
};

/* How the GEMMs run. tf32 (float32 only, FNQ_TF32=1): on tensor cores with the 3xTF32 split,
 * A W = A_hi W_lo + A_lo W_hi + A_hi W_hi (A_hi, W_hi rounded to TF32, the rest in A_lo, W_lo),
 * as one TF32 GEMM with float32 sums over a contraction three times as long: A's values as
 * (hi, lo, hi) triples against W's (lo, hi, hi) (Mlp::w3, w3t); `split` holds one operand
 * range's triples, rows x 3 x (its columns) values. */
template <typename REAL> struct Gemm {
    cublasHandle_t h;
    cudaStream_t s;
    int tf32;
    REAL *split;
    int tensor_cores; /* float32: gemm_3xtf32 (gemm_3xtf32.cuh) where the operands suit it */
    REAL *lo;         /* with tensor_cores: 2 x rows x (the widest hidden layer) values, where
                         the activations write their outputs' lo (laid out as the work arrays) */
};

/* with_split: also the weights' TF32 parts (the 3xTF32 GEMMs); with_wt: W^T and the lo's of
 * W and W^T (gemm_3xtf32) */
template <typename REAL>
enum fnq_status mlp_upload(const struct fnq_allegro_mlp *src, int with_split, int with_wt,
                           Mlp<REAL> *dst);
template <typename REAL> void mlp_release(Mlp<REAL> *m);

/* out = MLP(in) for `rows` rows; in: n_in ranges covering dim[0], out: n_out covering dim[K];
 * the hidden pre-activations kept at pre (rows x n_pre) for the backward pass; work: rows x
 * (the widest hidden layer) */
template <typename REAL>
enum fnq_status mlp_forward(const Gemm<REAL> &g, const Mlp<REAL> &m, int rows,
                            const Cols<REAL> *in, int n_in, const Cols<REAL> *out, int n_out,
                            REAL *pre, REAL *work);

/* gin = (dMLP/din)^T gout for the rows whose pre-activations mlp_forward kept at pre; gout: n_g
 * ranges covering dim[K], gin: n_gin ranges covering dim[0], range t added to (add[t]) or
 * written; work: 2 x rows x (the widest hidden layer) */
template <typename REAL>
enum fnq_status mlp_backward(const Gemm<REAL> &g, const Mlp<REAL> &m, int rows,
                             const Cols<REAL> *gout, int n_g, const Cols<REAL> *gin,
                             const int *add, int n_gin, const REAL *pre, REAL *work, int width);

} // namespace allegro
} // namespace fnqcu
