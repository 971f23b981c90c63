/*
 * model_dev.cuh: the model as the CUDA kernels see it. model_upload.cu flattens the host
 * description (core/src/model/model.h) into these plain structs and device arrays once per context;
 * kernels take a layer's struct by value (it lives in the constant parameter bank, so every
 * index lookup is a uniform load).
 *
 * Feature layout is the host's: irrep blocks, each "ir_mul" (value (m, u) at off + m*mul + u).
 * The rows the column passes gather per edge (sender features h1 and message gradients dE/dA)
 * are stored tiled instead: each block's channels in tiles of 32, value (m, u) at
 * tile_off + (u / 32) * 32 * (2l + 1) + m * 32 + u % 32, the last tile padded with zeros. A
 * lane's values are then 32 apart whatever the model, so a gather is one address per row and
 * loads at constant offsets (tiled_index).
 */
#pragma once

#include <stdint.h>

#include <cuda_fp16.h>

#include "geometry/geometry.cuh"
#include "geometry/pair_term.cuh"
#include "nequip/quad_plan.h"

namespace fnqcu {

constexpr int kMaxBlocks = 32;
constexpr int kMaxMlp = 8;
constexpr int kMaxBasis = 32; /* radial basis functions the kernels support */
constexpr int kThreads = 256; /* every model kernel runs 256-thread blocks */
constexpr int kNB = 4;        /* receiving atoms per block in the layer kernels */
/* atoms per block n for few atoms (cuda_run.cu's atoms_per_block): float32 only, where the
 * radial tables are; float64 keeps kNB (no kernels built for it) */
template <typename REAL> constexpr int few_atoms(int n) { return sizeof(REAL) == 4 ? n : kNB; }

struct Irreps {
    int n;
    int dim;
    int mul[kMaxBlocks];
    int l[kMaxBlocks];
    int off[kMaxBlocks];
    int tile_off[kMaxBlocks]; /* the tiled layout (above) */
    int tile_dim;
};

constexpr int kTile = 32; /* channels per tile of the tiled layout */

/* Where value k of the ir_mul layout of `ir` lives in its tiled layout. */
__host__ __device__ inline int tiled_index(const Irreps &ir, int b, int m, int u)
{
    return ir.tile_off[b] + (u / kTile) * kTile * (2 * ir.l[b] + 1) + m * kTile + u % kTile;
}

struct LinInstr {
    int in_block, out_block;
    int w_off;
    double alpha;
};


template <typename REAL> struct Linear {
    int n_instr;
    int species_indexed;
    int64_t n_w;           /* weights per set */
    const LinInstr *instr; /* device */
    const REAL *w;         /* device, per instruction [mul_in][mul_out] */
    const REAL *wt;        /* device, per instruction [mul_out][mul_in] (transposed) */
    /* quads plans, one QuadBlock per destination block, forward (out blocks) and transposed
     * (in blocks); nullptr: the linear runs one output element per thread */
    const QuadBlock *quads, *quads_t;
    int quad_units, quad_units_t;
};

struct Act {
    int kind; /* enum fnq_act */
    double scale;
};

/* One uvu path; its Clebsch-Gordan pairs are sorted by m3 (for the forward pass), and an index
 * list orders them by m1 (for the gradient with respect to sender features). */
struct Path {
    int l1, l2, l3;
    int mul;
    int in_off;            /* sender-feature block (ir_mul layout) */
    int in_tile;           /* its offset in the tiled layout of h1 rows */
    int mid_off, mid_mul;  /* message block, and the path's first channel in it */
    int mid_tile;          /* its offset in the tiled layout of dE/dA rows */
    int out_chan;
    int w_off;             /* first radial weight */
    int dx_off;            /* this path's block in the per-atom sender-gradient scratch */
    int dx_read;           /* 0: a group's pass (tp_group.cuh) adds this path's part to the
                            * group's first path's block instead */
    int pair0, npair;      /* pairs[pair0 .. pair0+npair) */
    int m3_start[2 * kMaxL + 2]; /* relative to pair0 */
    int m1_start[2 * kMaxL + 2]; /* into by_m1[pair0 ..] */
};

template <typename REAL> struct Pair {
    int m1, m3;
    int t0, nt; /* terms */
};

template <typename REAL> struct Term {
    int m2;
    REAL c;
};

struct GateOut {
    int src_off, src_mul, src_chan; /* conv block of the source, channel offset */
    Act act;
    int gate_off; /* offset of the first gate scalar in the conv vector, -1: none */
    Act gate_act;
};

template <typename REAL> struct Layer {
    Irreps in, mid, conv, out;
    Linear<REAL> linear_1, linear_2, self_conn;
    const REAL *sender_scale; /* [n_species] */
    /* the chosen modality's biases on linear_1's outputs [in dim] and linear_2's [conv dim]
     * (model.h), nullptr: none */
    const REAL *bias_1, *bias_2;

    /* radial MLP: size[0] = basis ... size[n_mlp] = radial weights */
    int n_mlp;
    int size[kMaxMlp + 1];
    const REAL *mlp_w[kMaxMlp];  /* [size[k]][size[k+1]] */
    const REAL *mlp_wt[kMaxMlp]; /* transposed */
    Act mlp_act;

    int n_paths;
    const Path *paths;
    const Pair<REAL> *pairs;
    const int *by_m1; /* pair indices (absolute) ordered by m1 within each path */
    const Term<REAL> *terms;
    int max_pairs; /* most pairs of one path */

    int norm;      /* enum fnq_norm_kind */
    double norm_eps;
    const REAL *norm_w; /* per conv block at norm_off[b] */
    int norm_off[kMaxBlocks];

    GateOut gate[kMaxBlocks]; /* one per out block */
    int resnet;

    /* the radial MLP padded for block_gemm: every width a multiple of 16 (zeros). The last
     * layer's columns are reordered by column task (below): task t owns columns 32t..32t+31 */
    int pad[kMaxMlp + 1];
    const REAL *mlp_wp[kMaxMlp];  /* [pad[k]][ld] with ld = pad[k+1] (last: ld_last) */
    const REAL *mlp_wtp[kMaxMlp]; /* transposed: [ld][pad[k]] */
    int ld_last;
    /* column tasks: one warp, 32 consecutive channels of one path; sorted by cost so that the
     * kWarps tasks of a round (and the warps waiting for each other) take similar time */
    int n_tasks, n_rounds;
    const int4 *tasks;  /* (path, first channel, valid lanes, first column = 32 t) */
    const int2 *rounds; /* (first task, first column) */
    int dx_dim;         /* per-atom sender-gradient scratch: sum over paths of d1 * mul */
    /* radial table mode: units of work, one group of paths (tp_group.cuh) or one path for one
     * tile of channels each, (first slot, slots, group or -1, 0), sorted by cost; utasks are
     * their slots' tasks, a unit's consecutive, as in `tasks` with first column 32 t (t:
     * index in utasks), which orders the table's columns */
    int n_units;
    const int4 *units;
    const int4 *utasks;
    /* radial table mode (Geometry::table): the radial weights as a function of |r|, per knot
     * and column (columns in the order of utasks) the value w, the slope h dw/dr, the
     * difference to the next knot's value and the next knot's slope, [n_knots][ld_last][4],
     * for cubic Hermite interpolation (core/src/math/radial_table.h, radial_table.cuh). The MLP is
     * then not run at all. */
    const REAL *rtab;
    /* The forward pass's copy of it, 12 bytes per knot and column instead of 16 (the forward
     * kernels are bound by the bytes of these reads): (w, dw) in float32 and, in float16,
     * (a, b) = (the knot's slope - dw, the next knot's slope - dw) divided by rtab_ab_unit, so
     *   w(t) = w + t dw + h10(t) a + h11(t) b
     * (radial_table.cuh). a and b are the Hermite curve's small departure from the chord
     * (~h^2 w''), so their float16 rounding moves w far below float32's rounding. */
    const float2 *rtab_wd;
    const __half2 *rtab_ab;
    float rtab_ab_unit; /* a power of two */
};

constexpr int kWarps = kThreads / 32;

/* FNQ_SKIP bits: leave a stage of the layer kernels out to time the rest (results are wrong;
 * for bench/NOTES.md only) */
enum {
    kSkipRoundGemm = 1,  /* the round's radial weights */
    kSkipColumns = 2,    /* the tensor product by columns */
    kSkipHiddenGrad = 4, /* dE/d(hidden) += dR . W^T (backward) */
    kSkipHidden = 8,     /* the MLP's hidden layers */
    kSkipEdgeGrad = 16,  /* the MLP's hidden layers backward and dE/dr (backward) */
};
constexpr int kRoundSpan = 32 * kWarps; /* columns of one round's radial-weight tile */

/* Everything per model, host-side holder of device pointers (model_upload.cu). */
template <typename REAL> struct DeviceModel {
    int n_layers, n_species;
    Layer<REAL> *layers; /* host array of structs pointing to device memory */
    Geometry geo;
    const REAL *h1_table;   /* [n_species][tiled in dim of layer 0]: layer-0 sender features */
    const REAL *embed;      /* [n_species][in dim of layer 0] */
    const REAL *grad_top;   /* [n_species][out dim of last layer]: dE/dh_L = readout^T(scale) */
    int n_readout;
    Linear<REAL> readout[4];
    Irreps readout_irreps[5];
    const double *energy_scale, *energy_shift; /* [n_species] device */
    PairTerm pair; /* the model's pair term (pair_term.cuh), added to energies and edges */
    int max_in, max_mid, max_conv, max_out, max_width;
    int max_mid_tiled; /* widest dE/dA row in the tiled layout */
    void *allocations; /* list freed with the model */
    int table_rejected; /* upload failed because a radial table missed its error bound */
};

} // namespace fnqcu
