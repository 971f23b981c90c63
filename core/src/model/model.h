/*
 * model.h: the in-memory description of a NequIP-family model, shared by every loader and
 * every backend (CPU, CUDA).
 *
 * One description covers Nequix, classic NequIP (0.6) and current NequIP (>= 0.7): the
 * differences are expressed as data (which linears exist, whether they are species-indexed,
 * the radial-MLP scaling folded into its weights, the gate layout, the normalisation), not as
 * code paths. docs/architecture.md has the equations.
 *
 * Layout: features are stored per atom as a concatenation of irrep blocks; block k has `mul`
 * channels of an irrep of degree l and is stored "ir_mul": value (m, u) at offset + m*mul + u,
 * so that consecutive channels are contiguous (the loop every kernel vectorises over).
 * Weights are float64 masters; each backend makes its own copies in its own precision.
 */
#pragma once

#include <stdint.h>

#define FNQ_PI 3.14159265358979323846
#define FNQ_MAX_L 6          /* highest irrep degree supported anywhere */
#define FNQ_MAX_BLOCKS 32    /* irrep blocks per feature vector */
#define FNQ_MAX_MLP_LAYERS 8 /* linear layers of the radial MLP */
#define FNQ_MAX_MUL (1 << 20) /* channels of one irrep block: keeps every dimension in int32 */

enum fnq_act {
    FNQ_ACT_IDENTITY = 0,
    FNQ_ACT_SILU = 1,
    FNQ_ACT_TANH = 2,
    FNQ_ACT_SSP = 3, /* softplus(x) - log(2) */
    FNQ_ACT_ABS = 4,
    FNQ_ACT_SIGMOID = 5,
    FNQ_ACT_MISH = 6,     /* x tanh(softplus(x)) (Allegro) */
    FNQ_ACT_GELU = 7,     /* exact: x Phi(x), Phi the normal CDF (Allegro) */
    FNQ_ACT_SOFTPLUS = 8  /* log(1 + e^x) (Allegro) */
};

/* act(x) * scale; scale carries e3nn's second-moment normalisation where the model uses it */
struct fnq_activation {
    enum fnq_act kind;
    double scale;
};

struct fnq_irrep_block {
    int32_t mul;
    int32_t l;
    int32_t parity; /* +1 even, -1 odd */
    int64_t offset; /* first value of the block inside the feature vector */
};

struct fnq_irreps {
    int32_t n_blocks;
    struct fnq_irrep_block block[FNQ_MAX_BLOCKS];
    int64_t dim; /* values per atom */
};

/* The CUDA backend stores the rows it gathers per edge tiled: each block's channels in tiles of
 * FNQ_TILE, the last tile zero-padded (kernels/nequip/model_dev.cuh). Values a block then takes: */
#define FNQ_TILE 32
static inline int64_t fnq__tiled_block_dim(const struct fnq_irrep_block *b)
{
    return (int64_t)((b->mul + FNQ_TILE - 1) / FNQ_TILE * FNQ_TILE) * (2 * b->l + 1);
}

/* e3nn o3.Linear: out[b_out][m][w] += alpha * sum_u W[u][w] * in[b_in][m][u] per instruction */
struct fnq_linear_instr {
    int32_t in_block, out_block;
    int64_t w_offset; /* W is w[w_offset + u*mul_out + w] */
    double alpha;     /* 1/sqrt(fan-in) and any path weight */
};

struct fnq_linear {
    int32_t n_instr;
    struct fnq_linear_instr *instr;
    int32_t species_indexed; /* 1: one weight set per species, set t at w + t*n_w */
    int64_t n_w;             /* weights per set */
    double *w;
    /* multi-modal models: [n_modalities][out dim] biases on the scalar outputs (a modality's
     * one-hot input, fixed), and `bias`, the chosen modality's row (NULL: none) */
    double *bias_modal;
    const double *bias;
};

/* Radial MLP: x <- act(x @ W_k) for hidden layers, last layer linear; scalings folded into W. */
struct fnq_mlp {
    int32_t n_layers;                   /* number of weight matrices */
    int32_t size[FNQ_MAX_MLP_LAYERS + 1]; /* size[0] = n_basis, size[n_layers] = n_weights */
    double *w[FNQ_MAX_MLP_LAYERS];      /* w[k][i*size[k+1] + j] */
    struct fnq_activation act;
};

/* One (l1, l2 -> l3) uvu path of the edge tensor product. */
struct fnq_cg_term {
    int32_t m2;
    double c; /* Clebsch-Gordan value times the path coefficient sqrt(2 l3 + 1) */
};
/* Terms grouped by (m1, m3): out[m3] += (sum_terms c * Y[m2]) * R[u] * x[m1][u] */
struct fnq_cg_pair {
    int32_t m1, m3;
    int32_t first, count; /* range in the path's term list */
};

struct fnq_tp_path {
    int32_t l1, l2, l3;
    int32_t in_block;  /* block of the sender features (layer input irreps) */
    int32_t out_block; /* block of the message irreps (mid) */
    int32_t out_chan;  /* first channel inside out_block */
    int32_t mul;
    int32_t w_offset; /* first radial weight of this path; one weight per channel */
    int32_t n_pairs, n_terms;
    /* read-only, shared by every path of the same (l1, l2, l3) in the process and owned by
     * model_build.c (not freed with the model) */
    struct fnq_cg_pair *pairs;
    struct fnq_cg_term *terms;
};

enum fnq_norm_kind {
    FNQ_NORM_NONE = 0,
    FNQ_NORM_RMS = 1 /* Nequix RMSLayerNorm: sum over channels, mean over m, over blocks */
};

/* Gate: output block k = act(in[src]) or in[src] * gate_act(in[gate]) (channels ranges). */
struct fnq_gate_out {
    int32_t src_block, src_chan;
    struct fnq_activation act; /* applied to scalar sources; identity for gated ones */
    int32_t gate_block;        /* -1: no gate */
    int32_t gate_chan;
    struct fnq_activation gate_act;
};

struct fnq_layer {
    struct fnq_irreps in;   /* layer input (= previous layer output) */
    struct fnq_irreps mid;  /* aggregated messages (TP outputs, sorted, simplified) */
    struct fnq_irreps conv; /* linear_2 output = gate input */
    struct fnq_irreps out;  /* gate output */

    struct fnq_linear linear_1;  /* in -> in, applied to sender features */
    double *sender_scale;        /* [n_species]: messages from species t scaled (1/sqrt(avg_nn)) */
    struct fnq_mlp radial;       /* basis -> path weights */
    int32_t n_paths;
    struct fnq_tp_path *paths;
    struct fnq_linear linear_2;  /* mid -> conv */
    struct fnq_linear self_conn; /* in -> conv, added to linear_2 (n_instr = 0: none) */

    enum fnq_norm_kind norm;
    double norm_eps;
    double *norm_weight[FNQ_MAX_BLOCKS]; /* per conv block, mul values */

    struct fnq_gate_out gate[FNQ_MAX_BLOCKS]; /* one per out block */
    int32_t resnet;                           /* h_out += h_in (irreps equal) */
};

/* Spherical-harmonics recursion (sh.c): Y_l[k] += coef * Y_l1[i] * Y_l2[j] */
struct fnq_sh_term {
    int16_t i, j, k;
    double coef;
};

struct fnq_sh_plan {
    int32_t lmax;
    int32_t l1[FNQ_MAX_L + 1], l2[FNQ_MAX_L + 1];
    int32_t first[FNQ_MAX_L + 2]; /* terms of degree l: [first[l], first[l+1]) */
    int32_t n_terms;
    struct fnq_sh_term *terms;
};

/* A pair term added to the network's per-atom energies, unscaled (nequip's `pair_potential`
 * module, after per_type_energy_scale_shift). Per directed edge e = (i <- j) at distance r the
 * receiver i gets E_e = 0.5 V(r; i, j) f_p(r / cutoff), so each pair's energy splits evenly
 * between its atoms; f_p is the polynomial envelope of the radial basis (cutoff <= the model's).
 *   ZBL: V = k_e Zi Zj / r * sum_k c_k exp(d_k x), x = r (Zi^0.23 + Zj^0.23) / 0.46850 A,
 *        with LAMMPS pair_zbl's universal screening constants (pair_potential.c). */
/* LAMMPS pair_zbl_const.h (A): the screening length a0 / (Zi^POW + Zj^POW) and the universal
 * screening function sum_k C[k] exp(D[k] x); pair_potential.c and kernels/geometry/pair_term.cuh */
#define FNQ_ZBL_A0 0.46850
#define FNQ_ZBL_POW 0.23
#define FNQ_ZBL_C {0.02817, 0.28022, 0.50986, 0.18175}
#define FNQ_ZBL_D {-0.20162, -0.40290, -0.94229, -3.19980}

enum fnq_pair_kind {
    FNQ_PAIR_NONE = 0,
    FNQ_PAIR_ZBL = 1
};

struct fnq_pair_potential {
    enum fnq_pair_kind kind;
    double cutoff;   /* envelope f_p(r / cutoff), 0 beyond */
    double poly_p;   /* envelope exponent */
    double coulomb;  /* k_e = e^2 / (4 pi eps0) in the model's units (metal: 14.399645 eV A) */
    double *charge;  /* [n_species] Z of each species (ZBL) */
    /* Allegro's per-edge-type cutoffs [n_types][n_types] (centre, neighbour) for the envelope,
     * or NULL: `cutoff` for every pair (borrowed from struct fnq_allegro) */
    const double *cutoff_by_type;
    int32_t n_types;
};

struct fnq_allegro; /* allegro.h */

struct fnq_model {
    char family[16]; /* "nequix", "nequip", "allegro", "sevenn": shown by info */
    char source[4096];
    int64_t n_params; /* parameters as counted by the original framework */

    int32_t n_species;
    int32_t *species_z;
    char (*species_symbol)[4];

    double cutoff;
    int32_t n_basis;
    double *bessel_freq; /* [n_basis]: B_n(r) = 2/rc * sin(freq_n * r / rc) / r */
    double poly_p;       /* polynomial cutoff envelope exponent */
    double xplor_r_on;   /* > 0: SevenNet's XPLOR envelope from r_on to the cutoff instead */
    int32_t lmax_sh;
    struct fnq_sh_plan sh;
    int32_t sh_raw; /* 1: Y_l of r itself, |r|^l Y_l(r / |r|) (SevenNet's _normalize_sph false) */

    struct fnq_irreps embed_irreps; /* node input irreps (scalars) */
    double *embed;                  /* [n_species][embed_irreps.dim]: node input per species */

    int32_t n_layers;
    struct fnq_layer *layers;

    int32_t n_readout; /* linears applied in sequence to the last layer output */
    struct fnq_linear readout[4];
    struct fnq_irreps readout_irreps[5]; /* [0] = last layer output, [n_readout] = 1x0e */

    double *energy_scale; /* [n_species]: E_i = scale[t] * e_i + shift[t] */
    double *energy_shift; /* [n_species] */

    /* Modalities (modality.c): names of the n_modalities (0: none) data sets a multi-modal
     * model was trained on; the linears' bias_modal and these [n_modalities][n_species]
     * energy scales and shifts (NULL: shared) hold each one's values; `modality` is the
     * chosen one, -1 before fnq_model_set_modality (contexts refuse the model then) */
    int32_t n_modalities;
    char (*modality_name)[32];
    int32_t modality;
    double *energy_scale_modal, *energy_shift_modal;
    struct fnq_pair_potential pair; /* kind FNQ_PAIR_NONE: none */

    /* Allegro (allegro.h): the model is not message passing; n_layers is 0 and the fields
     * above that describe NequIP's layers are unused. NULL for Nequix and NequIP models. */
    struct fnq_allegro *allegro;

    /* Extra strings shown by `fusednequip info` (training set, hyperparameters, ...) */
    char notes[2048];
};

/* ---- building blocks shared by the loaders (model_build.c) ---- */

struct fnq_model *fnq__model_alloc(void);
void fnq__model_release(struct fnq_model *m);

int fnq__irreps_parse(const char *text, struct fnq_irreps *out); /* "128x0e+64x1o" */
void fnq__irreps_finalize(struct fnq_irreps *irreps);           /* compute offsets and dim */
void fnq__irreps_format(const struct fnq_irreps *irreps, char *buf, int cap);
int fnq__irreps_find(const struct fnq_irreps *irreps, int32_t l, int32_t parity);

/* Weights of one set of that linear (its n_w), without building it: what a loader checks
 * against the values its file holds before fnq__linear_build allocates them. */
int64_t fnq__linear_count(const struct fnq_irreps *in, const struct fnq_irreps *out);
/* Linear with one instruction per (in block, out block) of equal irrep, e3nn fan-in scaling. */
int fnq__linear_build(struct fnq_linear *lin, const struct fnq_irreps *in,
                      const struct fnq_irreps *out, int32_t n_sets);
/* Build the uvu TP paths of in (x) Y_{0..lmax} -> irreps in `allowed`, mid sorted by (l, p). */
/* sh_natural_parity: Y_l has parity (-1)^l (else all even); jax_order: e3nn-jax irrep order
 * (natural parity first) instead of e3nn-torch's (odd first); weights_sorted: the radial
 * weights follow the sorted path order (Nequix) instead of the creation order (NequIP). */
int fnq__tp_build(struct fnq_layer *layer, int32_t lmax_sh, const struct fnq_irreps *allowed,
                  int32_t sh_natural_parity, int jax_order, int weights_sorted);
/* Paths given explicitly (a .fnqm file), in the order of their radial weights; inside each
 * message block, channels are assigned in list order. layer->in and layer->mid must be set and
 * the spec checked by the caller (block indices, selection rules, multiplicities). */
struct fnq_path_spec {
    int32_t in_block, l_sh, mid_block;
};
int fnq__tp_set_paths(struct fnq_layer *layer, int32_t n, const struct fnq_path_spec *spec);

/* y += linear(x), dx += linear^T(dy) in double, for one atom of species t */
void fnq__linear_apply_f64(const struct fnq_linear *lin, const struct fnq_irreps *in,
                           const struct fnq_irreps *out, int32_t t, const double *x, double *y);
void fnq__linear_apply_t_f64(const struct fnq_linear *lin, const struct fnq_irreps *in,
                             const struct fnq_irreps *out, int32_t t, const double *dy,
                             double *dx);

double fnq__act_normalization(enum fnq_act kind); /* 1/sqrt(E[act(z)^2]), e3nn-jax sampling */
double fnq__act_apply(struct fnq_activation a, double x);
double fnq__act_derivative(struct fnq_activation a, double x);

int32_t fnq__element_z(const char *symbol); /* 0 if unknown */
const char *fnq__element_symbol(int32_t z); /* NULL if out of range */
