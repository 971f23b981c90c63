/*
 * allegro.h: nequip-allegro's AllegroModel in memory (docs/allegro.md gives the math, step by
 * step; docs/model-format.md the .fnqm fields). A model of this architecture is a struct
 * fnq_model whose `allegro` points here: the shared fields (species, cutoff, spherical
 * harmonics, energy scale and shift, ZBL) live in fnq_model, the rest below. Allegro is strictly
 * local: every quantity is per edge but the environment sums at the centre atom, so the engine
 * (allegro_eval.inc) needs no ghost exchange.
 */
#pragma once

#include "backend/backend.h"
#include "model/model.h"

#define FNQ_PI 3.14159265358979323846
#define FNQ_SQRT1_2 0.70710678118654752440
#define FNQ_ALLEGRO_MAX_MLP 8
#define FNQ_ALLEGRO_MAX_LAYERS 16

/* x <- act(x W_0) ... W_{K-1}: no biases, the scales folded into W, act between layers only */
struct fnq_allegro_mlp {
    int32_t n_layers;
    int32_t dim[FNQ_ALLEGRO_MAX_MLP + 1]; /* dim[0] in, dim[K] out */
    double *w[FNQ_ALLEGRO_MAX_MLP];       /* [dim[k]][dim[k+1]] row-major */
    struct fnq_activation act;
};

/* One path (a, b, c): input block a x spherical-harmonic block b -> output block c, as its
 * non-zero coupling terms sqrt(2 l_c + 1) C(l_a, l_b, l_c)[m1][m2][m3] at the blocks' offsets */
struct fnq_allegro_path {
    int32_t l1, l2, l3; /* input block's degree x harmonic degree -> output block's */
    int32_t n_terms;
    int32_t *i1, *i2, *i3; /* component indices in the input, Y and output vectors */
    double *coef;
};

struct fnq_allegro_layer {
    struct fnq_irreps in, out; /* multiplicity 1 per block: the U channels run alongside */
    int32_t n_paths;
    struct fnq_allegro_path *paths;
    int32_t coupled;      /* path weights per channel [U][P] (1) or shared [P] (0) */
    double *path_weights; /* [U or 1][n_paths] */
    struct fnq_allegro_mlp latent; /* S (k+1) + U -> S + U (lmax+1), the last layer: S */
};

struct fnq_allegro {
    int32_t n_scalar;  /* S */
    int32_t n_tensor;  /* U */
    int32_t n_layers;  /* L */
    int32_t n_basis;   /* N */
    double *bessel_w;  /* [N] */
    double poly_p;
    double *cut_by_type; /* [T][T] (centre, neighbour) per-edge-type cutoffs, or NULL: r_max */
    int32_t half_embed;  /* D / 2 */
    double *center_embed, *neighbor_embed; /* [T][D/2] */
    struct fnq_allegro_mlp basis_linear, two_body, tensor_embed, first_projection, readout;
    double *env_norm, *edge_norm; /* [T]: c(t) of the environment sums and the edge-energy sum */
    struct fnq_allegro_layer layer[FNQ_ALLEGRO_MAX_LAYERS];
};

struct cJSON;
struct fnqm_arrays;
/* m->allegro and the shared fields of m from an Allegro .fnqm header (allegro_load.c) */
enum fnq_status fnq__allegro_build(const struct cJSON *header, const struct fnqm_arrays *a,
                                   struct fnq_model *m);
void fnq__allegro_release(struct fnq_allegro *al);

/* The CPU engine in each precision (allegro_eval_f64.c, allegro_eval_f32.c): energies, forces,
 * virial and per-atom virials of the graph's owned atoms (their edges hold everything). */
enum fnq_status fnq__allegro_init_f64(const struct fnq_model *m, void **state);
enum fnq_status fnq__allegro_init_f32(const struct fnq_model *m, void **state);
void fnq__allegro_free_f64(void *state);
void fnq__allegro_free_f32(void *state);
enum fnq_status fnq__allegro_compute_f64(void *state, const struct fnq_graph *g,
                                         struct fnq_results *out);
enum fnq_status fnq__allegro_compute_f32(void *state, const struct fnq_graph *g,
                                         struct fnq_results *out);

/* The GPU engine's active edges (allegro_edges.c): an edge of zero length, or beyond its type
 * pair's cutoff, takes no part. count_active writes start[0..n_local] (each centre's first
 * active edge, prefix-summed) and returns how many; fill_active writes their graph edges at
 * those offsets, in edge order (index[E]). */
int64_t fnq__allegro_count_active(const struct fnq_model *m, const struct fnq_graph *g,
                                  int64_t *start);
void fnq__allegro_fill_active(const struct fnq_model *m, const struct fnq_graph *g,
                              const int64_t *start, int64_t *index);
