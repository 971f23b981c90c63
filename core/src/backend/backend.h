/*
 * backend.h: what a backend (CPU reference, CUDA) receives and must produce. ctx.c prepares a
 * graph (edges sorted by receiver, with their vectors, plus a by-sender index) and a result
 * record; the backend runs the model forward and backward and fills the results.
 */
#pragma once

#include "fnq.h"
#include "model/model.h"
#include "api/options.h"

/* One configuration as a directed graph; owned by the context, reused across calls. */
struct fnq_graph {
    int64_t n_local, n_all, n_edges;
    const int32_t *species;     /* [n_all] */
    const int64_t *recv_start;  /* [n_local+1]: edges of receiver i are recv_start[i].. */
    const int64_t *edge_send;   /* [n_edges] sender of each edge (edges sorted by receiver) */
    const int64_t *edge_recv;   /* [n_edges] */
    const double *edge_vec;     /* [n_edges*3] r = x_send - x_recv (+ shift) */
    const int64_t *send_start;  /* [n_all+1]: edges with sender j are send_edges[send_start[j]..] */
    const int64_t *send_edges;  /* [n_edges] edge indices grouped by sender, ascending */
    int64_t max_degree;         /* most edges of one receiver */
};

/* Results requested by the caller; NULL pointers are not computed. */
struct fnq_results {
    double energy;
    double virial[6];     /* always computed */
    double *atom_energies; /* [n_local] */
    double *forces;        /* [n_all*3] */
    double *atom_virial;   /* [n_all*6] */
    /* (CUDA) the caller's device array the forces of the graph's rows are added into, or NULL
     * (fnq_ctx_compute_graph_repeat_device) */
    double *forces_add_device;
};

/* Ghost exchange as the backend sees it: forward fills ghost rows, reverse folds them back,
 * through the caller's callbacks on host rows (comm) or on device rows (device_comm: the CUDA
 * backend calls it with its own rows and stream); ghosts given by an owner map are folded into
 * the graph instead (graph.h) and leave no ghost rows. */
struct fnq_exchange {
    const struct fnq_comm *comm;               /* caller's host-row callbacks, or NULL */
    const struct fnq_device_comm *device_comm; /* caller's device-row callbacks, or NULL */
    int64_t n_local, n_all;
};
/* A caller's exchange is collective (MPI ranks wait on each other): it runs on every rank at
 * every layer, also on a rank without ghosts. */
static inline int fnq__exchange_by_caller(const struct fnq_exchange *x)
{
    return x->comm != NULL || x->device_comm != NULL;
}
/* Whether a layer must exchange ghost rows. */
static inline int fnq__exchange_needed(const struct fnq_exchange *x)
{
    return fnq__exchange_by_caller(x) || x->n_all > x->n_local;
}
enum fnq_status fnq__exchange_forward(const struct fnq_exchange *x, void *rows, int32_t width,
                                      enum fnq_dtype dtype);
enum fnq_status fnq__exchange_reverse(const struct fnq_exchange *x, void *rows, int32_t width,
                                      enum fnq_dtype dtype);

struct fnq_limits; /* graph.h */

/* The caller's pairs as given to fnq_ctx_compute_graph (host arrays) or
 * fnq_ctx_compute_graph_device (on_device: pos, species, recv, send and shift are the caller's
 * device arrays, no ghosts; ctx.c has checked species and positions on host copies). */
struct fnq_edge_input {
    int64_t n_local, n_all, n_edges;
    const double *pos;       /* [n_all*3] */
    const int32_t *species;  /* [n_all] */
    const int64_t *recv, *send;
    const double *shift;     /* [n_edges*3] or NULL */
    const int64_t *ghost_owner; /* [n_all-n_local]: fold ghosts onto owners (graph.h), or NULL */
    int on_device;
    /* the pairs (recv, send, shift) of the backend's last compute_edges with host arrays, kept
     * where it keeps them (the GPU): recv, send and shift are NULL then, the rest is given */
    int reuse_pairs;
    /* with reuse_pairs: pos is the caller's device array (checked by the context on the
     * device, after the caller's work on the legacy default stream) */
    int pos_on_device;
};

struct fnq_backend_i {
    const char *name;
    /* per-context state: weights in the backend's precision, buffers; `opt` (the context's
     * switches, options.h) is copied */
    enum fnq_status (*init)(const struct fnq_model *m, enum fnq_dtype dtype, int32_t device_id,
                            const struct fnq_options *opt, void **state);
    void (*free)(void *state);
    enum fnq_status (*compute)(void *state, const struct fnq_graph *g,
                               const struct fnq_exchange *x, struct fnq_results *out);
    /* (optional) build the neighbour list itself and evaluate; NULL: the context builds the
     * graph on the host and calls compute. *n_edges receives the number of edges. */
    enum fnq_status (*compute_periodic)(void *state, int64_t n, const double *pos,
                                        const int32_t *species, const double *cell,
                                        const int32_t *pbc, const struct fnq_limits *lim,
                                        struct fnq_results *out, int64_t *n_edges);
    /* (optional) build the graph from the caller's pairs itself: the edges, their order and
     * vectors, and the error messages of fnq__graph_from_edges. NULL: the context builds it on
     * the host and calls compute. *n_edges receives the number of edges kept. With
     * in->ghost_owner the graph has n_local atoms and x->n_all == n_local. */
    enum fnq_status (*compute_edges)(void *state, const struct fnq_edge_input *in,
                                     const struct fnq_limits *lim, const struct fnq_exchange *x,
                                     struct fnq_results *out, int64_t *n_edges);
    /* (optional) kernel launches of the last evaluation: model part, neighbour-list part */
    void (*launch_counts)(void *state, int32_t *model, int32_t *neighbor_list);
    /* (optional) copy `bytes` of the caller's device array `src` (the argument `what`) to the
     * host after the caller's work on the legacy default stream; fails with INVALID_ARG when
     * src is not memory of the context's device. NULL: the backend takes no device inputs. */
    enum fnq_status (*to_host)(void *state, void *dst, const void *src, size_t bytes,
                               const char *what);
    /* (optional, with to_host) the caller's device positions [n][3] and species [n], after the
     * caller's work on the legacy default stream, checked where they are: *ok = 0 when an atom
     * has a non-finite coordinate or a species outside [0, n_species) (the caller then copies
     * them with to_host to word the message); INVALID_ARG when they are not memory of the
     * context's device. NULL: the caller checks host copies. */
    enum fnq_status (*check_inputs)(void *state, int64_t n, const double *pos,
                                    const int32_t *species, int32_t n_species, int *ok);
};

extern const struct fnq_backend_i fnq__backend_cpu;

/*
 * The backend registry (backend_registry.c): one entry per backend compiled into this build, in
 * a table fixed at compile time: the CPU always, then CUDA in builds with the CUDA backend
 * (FNQ_HAVE_CUDA), whose entry comes from kernels/ (fnq__backend_cuda_reg, backend_cuda.h).
 * ctx.c picks a context's backend here; nothing is looked up through weak symbols.
 */
struct fnq_backend_reg {
    enum fnq_device device;              /* FNQ_DEVICE_CPU, FNQ_DEVICE_CUDA */
    /* the function table for each precision (the same one where the backend switches itself);
     * ->name: "cpu", "cuda" (= fnq_device_name) */
    const struct fnq_backend_i *f32, *f64;
    int32_t (*device_count)(void);       /* devices of this kind present now (the CPU: 1) */
    /* the tables of a separate engine for Allegro models, or NULL: f32 and f64 take them */
    const struct fnq_backend_i *allegro_f32, *allegro_f64;
};
/* The entry's table for `model` in `dtype` (float32 or float64). */
static inline const struct fnq_backend_i *fnq__backend_reg_table(const struct fnq_backend_reg *r,
                                                                 const struct fnq_model *model,
                                                                 enum fnq_dtype dtype)
{
    if (model->allegro && r->allegro_f64)
        return dtype == FNQ_DTYPE_F64 ? r->allegro_f64 : r->allegro_f32;
    return dtype == FNQ_DTYPE_F64 ? r->f64 : r->f32;
}
int32_t fnq__backend_reg_count(void);
/* Entry `index` (0..count-1), or NULL. */
const struct fnq_backend_reg *fnq__backend_reg_get(int32_t index);
/* The entry for a device or a name ("cpu", "cuda"), or NULL when this build lacks it. */
const struct fnq_backend_reg *fnq__backend_reg_by_device(enum fnq_device device);
const struct fnq_backend_reg *fnq__backend_reg_by_name(const char *name);

/* Shared by backends that work on the host: forces, virial and per-atom virial from the
 * gradient of the energy with respect to each edge vector. */
void fnq__assemble_edge_gradients(const struct fnq_graph *g, const double *edge_grad,
                                  struct fnq_results *out);
