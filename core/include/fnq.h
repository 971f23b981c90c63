/*
 * fnq.h: the public C API of libfusednequip.
 *
 * libfusednequip evaluates NequIP-family equivariant interatomic potentials (Nequix, classic and
 * current NequIP) without Python or torch. It loads a model once and then evaluates many atomic
 * configurations, returning the total energy, per-atom energies, forces and the virial. Forces
 * come from a hand-written backward pass.
 *
 * Usage (error handling shortened):
 *
 *     struct fnq_model *model;
 *     if (fnq_model_load("nequix-mp-1", &model) != FNQ_STATUS_OK)
 *         fprintf(stderr, "%s\n", fnq_last_error());
 *     struct fnq_ctx *ctx;
 *     fnq_ctx_init(model, FNQ_DEVICE_AUTO, 0, FNQ_DTYPE_DEFAULT, &ctx);
 *     int32_t si = fnq_model_species_index(model, "Si");
 *     int32_t species[2] = {si, si};
 *     double pos[6] = {0, 0, 0, 1.3575, 1.3575, 1.3575};
 *     double cell[9] = {0, 2.715, 2.715, 2.715, 0, 2.715, 2.715, 2.715, 0};
 *     int32_t pbc[3] = {1, 1, 1};
 *     double energy, forces[6], virial[6];
 *     fnq_ctx_compute_periodic(ctx, 2, pos, species, cell, pbc, &energy, NULL, forces, virial);
 *     fnq_ctx_free(ctx);
 *     fnq_model_free(model);
 *
 * Conventions:
 *   - Units are those of the model: eV and Angstrom for every model shipped today.
 *   - Arrays are row-major: positions[i*3 + k], cell[a*3 + k] with the rows = lattice vectors.
 *   - The virial is W = -dE/d(strain) = sum over edges of r (x) F, six components in ASE's
 *     Voigt order xx yy zz yz xz xy. ASE's stress is -W/volume; LAMMPS' pressure is W/volume.
 *   - Every pointer argument is a host pointer. A NULL output pointer means "don't compute".
 *   - Functions return enum fnq_status; on failure fnq_last_error() says what went wrong
 *     (file, field, atom, value), and fnq_last_error_atoms() gives the atoms it names as
 *     indices. The library never exits or aborts the process.
 *   - A context is not thread-safe; use one context per thread. Models are read-only after
 *     loading and may be shared by many contexts.
 *
 * The model format and the data flow of one evaluation are described in docs/architecture.md.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(FNQ_BUILD)
#define FNQ_API __attribute__((visibility("default")))
#else
#define FNQ_API
#endif

/* Bumped whenever a signature or an enum value below changes; bindings refuse a mismatch. */
#define FNQ_ABI_VERSION 1

/* Append-only, like every enum here: bindings copy these values. */
enum fnq_status {
    FNQ_STATUS_OK = 0,
    FNQ_STATUS_INVALID_ARG = -1,   /* a bad argument or bad input data (NaN, atoms too close, ...) */
    FNQ_STATUS_IO = -2,            /* a file could not be opened or read */
    FNQ_STATUS_FORMAT = -3,        /* a model file is corrupt, truncated or inconsistent */
    FNQ_STATUS_UNSUPPORTED = -4,   /* a valid request this build or model cannot do */
    FNQ_STATUS_OUT_OF_MEMORY = -5, /* host or device memory exhausted */
    FNQ_STATUS_DEVICE = -6,        /* a GPU runtime error */
    FNQ_STATUS_COMM = -7,          /* a ghost-exchange callback failed */
    FNQ_STATUS_INTERNAL = -99
};

enum fnq_dtype {
    FNQ_DTYPE_F32 = 0,
    FNQ_DTYPE_F64 = 1,
    FNQ_DTYPE_DEFAULT = 2 /* float64 on the CPU, float32 on the GPU */
};

enum fnq_device {
    FNQ_DEVICE_CPU = 0,
    FNQ_DEVICE_CUDA = 1,
    FNQ_DEVICE_AUTO = 2 /* the GPU when this build has CUDA, a GPU is present and the CUDA
                           backend supports the model; else the CPU (with a warning through
                           the log callback when the model was the reason) */
};

struct fnq_model; /* opaque, read-only after loading */
struct fnq_ctx;   /* opaque: one evaluation context with its buffers */

/* ---- library ---- */

FNQ_API int32_t fnq_abi_version(void);
FNQ_API const char *fnq_version_string(void);
FNQ_API const char *fnq_status_string(enum fnq_status status);
FNQ_API const char *fnq_dtype_name(enum fnq_dtype dtype);
FNQ_API const char *fnq_device_name(enum fnq_device device);
/* Number of CUDA devices this build can use (0 without the CUDA backend or without a GPU). */
FNQ_API int32_t fnq_cuda_device_count(void);
/* The backends compiled into this library, whether or not their device is present: "cpu"
 * (always, index 0), then "cuda" in builds with the CUDA backend. fnq_backend_name returns the
 * name of backend `index` (0..fnq_backend_count()-1, as fnq_device_name words the device), or
 * NULL outside that range; the string is static. */
FNQ_API int32_t fnq_backend_count(void);
FNQ_API const char *fnq_backend_name(int32_t index);
/* The message of the last failure in this thread ("" if none). Valid until the next call. */
FNQ_API const char *fnq_last_error(void);
/* Record `message` as this thread's last error and return `status`: for libraries built on
 * this one (libfusednequip_mpi), so that callers read every failure through fnq_last_error(). */
FNQ_API enum fnq_status fnq_error_set(enum fnq_status status, const char *message);
/*
 * The atoms the last failure in this thread is about, as indices into the failing call's
 * positions (owned atoms, then ghosts): copies up to `cap` of them into `atoms` (may be NULL
 * when cap is 0) and returns how many there are: 2 for two atoms too close (receiver, sender),
 * 1 for an atom with too many neighbours, a non-finite coordinate, a bad species index or an
 * incomplete neighbour list, 1 for a ghost with a bad owner; 0 when the failure names no atom
 * or nothing failed. A pair from a ghost folded onto its owner by ghost_owner names the owner.
 * Cleared and replaced together with the message.
 */
FNQ_API int32_t fnq_last_error_atoms(int64_t *atoms, int32_t cap);

/* Messages (warnings, info) go to this callback; the default prints warnings to stderr. */
enum fnq_log_level { FNQ_LOG_DEBUG = 0, FNQ_LOG_INFO = 1, FNQ_LOG_WARN = 2, FNQ_LOG_ERROR = 3 };
typedef void (*fnq_log_callback)(enum fnq_log_level level, const char *message, void *user);
FNQ_API void fnq_log_set(fnq_log_callback callback, void *user);

/* Chemical symbol of atomic number z (1..118), or NULL; and the inverse (0 if unknown). */
FNQ_API const char *fnq_element_symbol(int32_t z);
FNQ_API int32_t fnq_element_z(const char *symbol);

/* ---- models ---- */

/*
 * Load a model file (a .fnqm file, e.g. a converted NequIP model, or a Nequix .nqx file;
 * docs/model-format.md). `path` is a file path; a bare
 * name such as "nequix-mp-1" is also looked up (with .nqx or .fnqm added) in
 * $FUSEDNEQUIP_MODEL_DIR, then in the default model directory fnq_default_model_dir(), and in
 * their nequix/ and nequip/ subdirectories.
 */
FNQ_API enum fnq_status fnq_model_load(const char *path, struct fnq_model **out);
FNQ_API void fnq_model_free(struct fnq_model *model); /* NULL-safe */
/* Resolve a model name to a path as fnq_model_load does; FNQ_STATUS_IO if not found. */
FNQ_API enum fnq_status fnq_model_find(const char *name, char *path_out, size_t path_cap);
/* The directory searched after $FUSEDNEQUIP_MODEL_DIR (set at build time; may not exist). */
FNQ_API const char *fnq_default_model_dir(void);

FNQ_API double fnq_model_cutoff(const struct fnq_model *model);
FNQ_API int32_t fnq_model_num_species(const struct fnq_model *model);
/* Interaction layers (Allegro's too, which exchange nothing between them: its
 * fnq_model_ghost_width is 0 for every layer). */
FNQ_API int32_t fnq_model_num_layers(const struct fnq_model *model);
FNQ_API int64_t fnq_model_num_params(const struct fnq_model *model);
/* Chemical symbol ("Si") and atomic number of model species `index` (0-based). */
FNQ_API const char *fnq_model_species_symbol(const struct fnq_model *model, int32_t index);
FNQ_API int32_t fnq_model_species_z(const struct fnq_model *model, int32_t index);
/* Model species index of a chemical symbol, or -1 if the model lacks that element. */
FNQ_API int32_t fnq_model_species_index(const struct fnq_model *model, const char *symbol);
/* The file the model was loaded from. */
FNQ_API const char *fnq_model_path(const struct fnq_model *model);
/* "nequix", "nequip" or "allegro" */
FNQ_API const char *fnq_model_family(const struct fnq_model *model);
/* Per-atom feature width (values per atom) exchanged with ghost atoms before `layer`: the
 * widest row any backend exchanges (the CUDA rows are padded; callers size buffers by it). */
FNQ_API int32_t fnq_model_ghost_width(const struct fnq_model *model, int32_t layer);
/*
 * Multi-modal models (SevenNet's 7net-mf-0: one network trained on several data sets, e.g.
 * "PBE" and "R2SCAN"): the number of modalities (0 for other models) and their names. One
 * must be chosen before contexts are made (fnq_ctx_init refuses the model until then, naming
 * them); the choice is made once: a different one later fails (load the model again).
 * fnq_model_modality returns the chosen name, or NULL.
 */
FNQ_API int32_t fnq_model_num_modalities(const struct fnq_model *model);
FNQ_API const char *fnq_model_modality_name(const struct fnq_model *model, int32_t index);
FNQ_API enum fnq_status fnq_model_set_modality(struct fnq_model *model, const char *name);
FNQ_API const char *fnq_model_modality(const struct fnq_model *model);
/* A human-readable multi-line description: architecture, irreps per layer, species. */
FNQ_API enum fnq_status fnq_model_describe(const struct fnq_model *model, char *buf, size_t cap);

/* ---- evaluation contexts ---- */

/* A context on `device`. FNQ_DEVICE_CUDA with a model the CUDA backend does not support
 * (irreps beyond l = 4, too many basis functions, too wide an MLP, ...) fails with
 * FNQ_STATUS_UNSUPPORTED and a message naming the feature; FNQ_DEVICE_AUTO then uses the CPU
 * instead, warning through the log callback (fnq_ctx_device() tells which it got). The
 * context reads the model until it is freed: free a model's contexts before the model. */
FNQ_API enum fnq_status fnq_ctx_init(const struct fnq_model *model, enum fnq_device device,
                                     int32_t device_id, enum fnq_dtype dtype,
                                     struct fnq_ctx **out);
FNQ_API void fnq_ctx_free(struct fnq_ctx *ctx); /* NULL-safe */
FNQ_API enum fnq_device fnq_ctx_device(const struct fnq_ctx *ctx);
FNQ_API enum fnq_dtype fnq_ctx_dtype(const struct fnq_ctx *ctx);

/*
 * Input checks. Two atoms closer than `min_distance` (default 0.1 A) or an atom with more than
 * `max_neighbors` neighbours inside the cutoff (default 1024) is an error that names the atoms;
 * both usually mean a broken structure or positions in the wrong units.
 */
FNQ_API enum fnq_status fnq_ctx_set_min_distance(struct fnq_ctx *ctx, double min_distance);
FNQ_API enum fnq_status fnq_ctx_set_max_neighbors(struct fnq_ctx *ctx, int64_t max_neighbors);

/*
 * Evaluate one configuration; the library builds the neighbour list (cell list, any triclinic
 * cell, cells smaller than twice the cutoff, periodic or not along each axis).
 *   positions[n*3], species[n] (model species indices), cell[9] (rows = lattice vectors; may be
 *   NULL when no axis is periodic), pbc[3] (0/1 per axis; NULL = not periodic).
 * Outputs (NULL = skip): energy, atom_energies[n], forces[n*3], virial[6].
 */
FNQ_API enum fnq_status fnq_ctx_compute_periodic(struct fnq_ctx *ctx, int64_t n_atoms,
                                                 const double *positions,
                                                 const int32_t *species, const double *cell,
                                                 const int32_t *pbc, double *energy,
                                                 double *atom_energies, double *forces,
                                                 double *virial);

/*
 * Evaluate a batch of independent structures in one call (screening, relaxations, replica MD:
 * structures too small to keep a GPU busy one at a time). Structure s is atoms
 * atom_offsets[s]..atom_offsets[s+1]-1 of the arrays (atom_offsets[n_structures+1], from 0,
 * non-decreasing; a structure may have no atoms), with its own cell cells[9*s..9*s+8] and
 * periodicity pbc[3*s..3*s+2] as fnq_ctx_compute_periodic takes them (cells may be NULL when no
 * structure is periodic, pbc NULL when none is). Each structure gets its own neighbour list;
 * no pair joins two structures, and each one's results are those of a call of its own (to
 * rounding: the sums of a structure run in the same order).
 *   positions[N*3], species[N] with N = atom_offsets[n_structures].
 * Outputs (NULL = skip): energies[n_structures], atom_energies[N], forces[N*3],
 *   virials[n_structures*6] (Voigt xx yy zz yz xz xy, as fnq_ctx_compute_periodic's).
 * A bad structure (a non-finite coordinate, atoms too close, too many neighbours, a species
 * the model lacks) fails the call with a message beginning "structure S: " (its atom numbers
 * its own; fnq_last_error_atoms gives them as indices of the batch), and the outputs are left
 * as they were.
 */
FNQ_API enum fnq_status fnq_ctx_compute_batch(struct fnq_ctx *ctx, int64_t n_structures,
                                              const int64_t *atom_offsets,
                                              const double *positions, const int32_t *species,
                                              const double *cells, const int32_t *pbc,
                                              double *energies, double *atom_energies,
                                              double *forces, double *virials);

/*
 * Ghost-atom exchange used by fnq_ctx_compute_graph when atoms n_local..n_all-1 are ghosts.
 * Rows hold `width` values of type `dtype` (float or double), row i at rows + i*width.
 *   forward: fill every ghost row from the row of the atom it is an image of.
 *   reverse: add every ghost row into the row of the atom it is an image of.
 * Return 0 on success; anything else aborts the evaluation with FNQ_STATUS_COMM.
 * The calls are collective across MPI ranks: with a comm installed, every evaluation calls
 * forward once per layer after the first and reverse once per such layer (backward pass), in
 * the same order on every rank, also on a rank that has no ghosts or no atoms.
 */
struct fnq_comm {
    void *user;
    int (*forward)(void *user, void *rows, int32_t width, enum fnq_dtype dtype);
    int (*reverse)(void *user, void *rows, int32_t width, enum fnq_dtype dtype);
};
/* Install (copied) or clear (NULL) the exchange callbacks of a context. */
FNQ_API enum fnq_status fnq_ctx_set_comm(struct fnq_ctx *ctx, const struct fnq_comm *comm);

/*
 * The same exchange on the GPU, for a context on device cuda, so that ghost rows never leave
 * it (libfusednequip_mpi's fnq_halo provides one: mpi/fnq_mpi.h). `rows` is device memory of
 * the context's GPU, `stream` its cudaStream_t: forward and reverse enqueue their work on that
 * stream (kernels, copies, NCCL calls) in stream order with the library's kernels, and may
 * also wait for it on the host (an exchange staged through MPI). Same contract as struct
 * fnq_comm otherwise: collective, once per layer after the first in each direction, row i at
 * rows + i*width, 0 on success.
 *   version (optional, may be NULL): when not NULL, forward and reverse only enqueue stream
 *     work that a CUDA graph can record (NCCL, kernels, device copies: no host waits), and
 *     `version` changes whenever what they enqueue would (the routing, its buffers). The
 *     library then records the exchange in the step's CUDA graph and replays it while the
 *     version and the atom and edge counts stay the same; a version of 0 means "not this
 *     time" (NCCL wants one eager exchange first). NULL: the model runs unrecorded.
 * A context has one exchange: installing this one clears a fnq_comm, and the other way round.
 */
struct fnq_device_comm {
    void *user;
    int (*forward)(void *user, void *rows, int32_t width, enum fnq_dtype dtype, void *stream);
    int (*reverse)(void *user, void *rows, int32_t width, enum fnq_dtype dtype, void *stream);
    uint64_t (*version)(void *user);
};
/* Install (copied) or clear (NULL) the device exchange of a context on device cuda
 * (FNQ_STATUS_INVALID_ARG on another device). */
FNQ_API enum fnq_status fnq_ctx_set_device_comm(struct fnq_ctx *ctx,
                                                const struct fnq_device_comm *comm);

/*
 * Evaluate with a caller's neighbour list, as LAMMPS provides it: atoms 0..n_local-1 are owned,
 * n_local..n_all-1 are ghosts (images of owned atoms, here or on other ranks).
 *   positions[n_all*3], species[n_all].
 *   edges: n_edges directed pairs (edge_recv[e], edge_send[e]); the receiver must be owned;
 *     the list must be full (both directions between owned atoms); pairs at or beyond the
 *     cutoff are ignored, so a list with a skin can be passed as it is.
 *   edge_shift[n_edges*3] (NULL = none): Cartesian shift added to the edge vector
 *     r = positions[send] - positions[recv] + shift.
 *   ghost_owner[n_all-n_local] (may be NULL): the owned atom that ghost n_local+k is an image
 *     of. The library folds every pair from such a ghost onto its owner (same vector): what
 *     the ghost would carry lands on its owner directly, and its row needs no exchange.
 *     Without a comm or device comm every ghost needs an owner (no exchange at all), except
 *     for a local model (Allegro, whose layers exchange nothing): it may be NULL there, and
 *     each ghost is then used where it is, its forces returned on its row. With a comm or
 *     device comm, -1 marks a ghost the exchange fills (an image of another rank's atom), so that a
 *     rank folds the periodic images of its own atoms and exchanges only the rest. Fold
 *     every image of an owned atom, or pairs lose their reverse (refused as a list that is
 *     not full).
 * Outputs (NULL = skip): energy (sum over owned atoms), atom_energies[n_local],
 *   forces[n_all*3] (ghost rows hold the forces on the ghost images, to be added to their
 *   owners by the caller; zeros when ghosts were folded by ghost_owner), virial[6],
 *   atom_virial[n_all*6] (half of each edge's r (x) F to each of its two atoms, LAMMPS'
 *   convention for compute stress/atom; ghost rows likewise).
 */
FNQ_API enum fnq_status fnq_ctx_compute_graph(struct fnq_ctx *ctx, int64_t n_local,
                                              int64_t n_all, const double *positions,
                                              const int32_t *species, int64_t n_edges,
                                              const int64_t *edge_recv, const int64_t *edge_send,
                                              const double *edge_shift,
                                              const int64_t *ghost_owner, double *energy,
                                              double *atom_energies, double *forces,
                                              double *virial, double *atom_virial);

/*
 * fnq_ctx_compute_graph again, with new positions and everything else of the last call on this
 * context (n_local, n_all, species, the pairs and their shifts, ghost_owner): for a caller whose
 * pair list changes only now and then, as LAMMPS' does between its neighbour-list rebuilds.
 * The pairs are not sent again (a context on the GPU keeps them there; on the CPU the context
 * kept a copy), and the cutoff is applied to the new positions. positions[n_all*3]; outputs as
 * fnq_ctx_compute_graph. FNQ_STATUS_INVALID_ARG when there is no successful last call to repeat.
 */
FNQ_API enum fnq_status fnq_ctx_compute_graph_repeat(struct fnq_ctx *ctx, const double *positions,
                                                     double *energy, double *atom_energies,
                                                     double *forces, double *virial,
                                                     double *atom_virial);

/*
 * fnq_ctx_compute_graph_repeat for a caller whose atoms live on the GPU (a KOKKOS LAMMPS):
 * positions[n_all*3] is read and forces[n_all*3] is added to where they are, as CUDA device
 * pointers (memory of the context's device, or managed memory) written by work the caller has
 * finished or queued on the legacy default stream; the forces are added in float64 before this
 * returns. Rows as fnq_ctx_compute_graph's: ghost rows get the ghosts' forces where the graph
 * keeps them (an installed exchange) and nothing where ghost_owner folded them. Outputs on the
 * host (NULL = skip): energy, virial[6]; per-atom energies and virials need
 * fnq_ctx_compute_graph_repeat. Positions are checked on the GPU (a non-finite coordinate names
 * the atom, as fnq_ctx_compute_graph does) and the cutoff is applied to them.
 * FNQ_STATUS_INVALID_ARG when there is no successful last call to repeat, when the context is
 * not on device cuda, when that call's pairs were not kept on the GPU (FNQ_HOST_GRAPH=1) or when
 * an array is not device memory.
 */
FNQ_API enum fnq_status fnq_ctx_compute_graph_repeat_device(struct fnq_ctx *ctx,
                                                            const double *positions,
                                                            double *forces, double *energy,
                                                            double *virial);

/*
 * fnq_ctx_compute_graph for n_atoms atoms without ghosts (every atom owned), with the inputs
 * already on the GPU, as torch or cupy tensors have them: positions[n_atoms*3], species[n_atoms],
 * edge_recv[n_edges], edge_send[n_edges] and edge_shift[n_edges*3] (may be NULL) are CUDA device
 * pointers (memory of the context's device, or managed memory), written by work the caller has
 * finished or queued on the legacy default stream (the library waits for that stream). They
 * are checked and the pairs sorted where they are; inputs are copied to the host only to word
 * the message of a failed check. Same results, to the bit, and the same error messages as
 * fnq_ctx_compute_graph(ctx, n_atoms, n_atoms, ...) on host copies of the arrays (a comm, if
 * installed, is called as there). Outputs are host pointers (NULL = skip): energy,
 * atom_energies[n_atoms], forces[n_atoms*3], virial[6].
 * A context not on device cuda fails with FNQ_STATUS_INVALID_ARG, as do pointers that are not
 * device memory, and n_edges > INT32_MAX or n_atoms >= INT32_MAX.
 */
FNQ_API enum fnq_status fnq_ctx_compute_graph_device(struct fnq_ctx *ctx, int64_t n_atoms,
                                                     const double *positions,
                                                     const int32_t *species, int64_t n_edges,
                                                     const int64_t *edge_recv,
                                                     const int64_t *edge_send,
                                                     const double *edge_shift, double *energy,
                                                     double *atom_energies, double *forces,
                                                     double *virial);

/* Number of edges (directed pairs inside the cutoff) of the last evaluation. */
FNQ_API int64_t fnq_ctx_last_num_edges(const struct fnq_ctx *ctx);
/* GPU kernel launches of the last evaluation: the model's (returned) and the neighbour list's
 * (in *neighbor_list, if not NULL). 0 on the CPU. */
FNQ_API int32_t fnq_ctx_last_kernel_launches(const struct fnq_ctx *ctx, int32_t *neighbor_list);

#ifdef __cplusplus
}
#endif
