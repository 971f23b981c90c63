/* ----------------------------------------------------------------------
   pair_style fusednequip: the library context of this rank (device, precision) and the ghost
   exchange it runs: LAMMPS' own communication of rows (pack/unpack_*_comm), or our exchange on
   the GPU (mpi/), routed once per neighbour-list rebuild.
------------------------------------------------------------------------- */

#include "pair_fusednequip.h"
#include "pair_fusednequip_impl.h"

#include "atom.h"
#include "comm.h"
#include "error.h"
#include "force.h"
#include "group.h"
#include "lammps_api.h"
#include "library.h"
#include "memory.h"
#include "neigh_list.h"
#include "neighbor.h"
#include "update.h"
#include "utils.h"

#include "fnq.h"
#ifdef FNQ_HAVE_HALO
#include "fnq_mpi.h"
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

using namespace LAMMPS_NS;

/* ---------------------------------------------------------------------- */

static int forward_rows(void *user, void *rows, int32_t width, enum fnq_dtype dtype)
{
  static_cast<PairFusedNequip *>(user)->exchange_rows(rows, width, dtype == FNQ_DTYPE_F32, true);
  return 0;
}

static int reverse_rows(void *user, void *rows, int32_t width, enum fnq_dtype dtype)
{
  static_cast<PairFusedNequip *>(user)->exchange_rows(rows, width, dtype == FNQ_DTYPE_F32, false);
  return 0;
}

/* ----------------------------------------------------------------------
   the GPU exchange's routing, after each neighbour-list rebuild: each owned atom's (rank,
   index) reaches its ghost images through LAMMPS' forward communication (any comm style,
   multi-hop, periodic images); the halo turns that into direct per-peer lists (mpi/)
------------------------------------------------------------------------- */

void PairFusedNequip::route_ghosts()
{
#ifdef FNQ_HAVE_HALO
  FusedNequipImpl &d = *impl;
  const int nlocal = atom->nlocal, nall = nlocal + atom->nghost;
  d.owner_rows.resize(2 * (size_t) nall);
  for (int i = 0; i < nlocal; i++) {
    d.owner_rows[2 * i] = comm->me;
    d.owner_rows[2 * i + 1] = i;
  }
  exchange_rows(d.owner_rows.data(), 2, false, true);
  d.ghost_rank.resize(nall - nlocal);
  d.ghost_index.resize(nall - nlocal);
  // the ghosts folded onto their owners here need no row
  for (int g = nlocal; g < nall; g++) {
    d.ghost_rank[g - nlocal] = d.fold_own_images && d.ghost_owner[g - nlocal] >= 0
        ? FNQ_HALO_NO_ROW
        : (int32_t) d.owner_rows[2 * g];
    d.ghost_index[g - nlocal] = (int64_t) d.owner_rows[2 * g + 1];
  }
  const size_t value_bytes = fnq_ctx_dtype(d.ctx) == FNQ_DTYPE_F64 ? 8 : 4;
  const enum fnq_status status =
      fnq_halo_set_routing(d.halo, nlocal, nall, d.ghost_rank.data(), d.ghost_index.data(),
                           (size_t) d.max_width * value_bytes);
  // collective: every rank fails; the one that found the problem says what it is
  if (status == FNQ_STATUS_COMM)
    error->all(FLERR, std::string("Pair fusednequip: ") + fnq_last_error());
  else if (status != FNQ_STATUS_OK)
    stop_on_this_rank(std::string("Pair fusednequip on rank ") + std::to_string(comm->me) +
                      ": " + fnq_last_error());
  d.routed = true;
#endif
}

/* ----------------------------------------------------------------------
   one layer's ghost exchange: LAMMPS' pair communication moves the rows
------------------------------------------------------------------------- */

void PairFusedNequip::exchange_rows(void *rows, int width, bool single_precision, bool forward)
{
  if (width > impl->max_width)
    stop_on_this_rank("Pair fusednequip: a ghost exchange of " + std::to_string(width) +
                      " values per atom exceeds the communication buffers sized for " +
                      std::to_string(impl->max_width));
  impl->rows = rows;
  impl->width = width;
  impl->single_precision = single_precision;
  comm_forward = comm_reverse = width;
  if (forward)
    fusednequip_api::forward_comm(comm, this);
  else
    fusednequip_api::reverse_comm(comm, this);
  comm_forward = comm_reverse = impl->max_width;
  impl->rows = nullptr;
}

/* ---------------------------------------------------------------------- */

int PairFusedNequip::pack_forward_comm(int n, int *list, double *buf, int /*pbc_flag*/,
                                       int * /*pbc*/)
{
  // features are translation invariant: periodic images need no change
  const int w = impl->width;
  if (impl->single_precision) {
    const float *rows = static_cast<const float *>(impl->rows);
    for (int i = 0; i < n; i++)
      for (int k = 0; k < w; k++) buf[(size_t) i * w + k] = rows[(size_t) list[i] * w + k];
  } else {
    const double *rows = static_cast<const double *>(impl->rows);
    for (int i = 0; i < n; i++)
      memcpy(buf + (size_t) i * w, rows + (size_t) list[i] * w, sizeof(double) * w);
  }
  return n * w;
}

/* ---------------------------------------------------------------------- */

void PairFusedNequip::unpack_forward_comm(int n, int first, double *buf)
{
  // a rank without atoms has no rows (NULL), and LAMMPS still calls for each of its swaps with
  // n = 0: memcpy from or to NULL is undefined even for 0 bytes (UndefinedBehaviorSanitizer)
  if (n == 0) return;
  const int w = impl->width;
  if (impl->single_precision) {
    float *rows = static_cast<float *>(impl->rows) + (size_t) first * w;
    for (size_t k = 0; k < (size_t) n * w; k++) rows[k] = (float) buf[k];
  } else {
    double *rows = static_cast<double *>(impl->rows) + (size_t) first * w;
    memcpy(rows, buf, sizeof(double) * n * w);
  }
}

/* ---------------------------------------------------------------------- */

int PairFusedNequip::pack_reverse_comm(int n, int first, double *buf)
{
  if (n == 0) return 0;    // no rows on a rank without atoms (unpack_forward_comm)
  const int w = impl->width;
  if (impl->single_precision) {
    const float *rows = static_cast<const float *>(impl->rows) + (size_t) first * w;
    for (size_t k = 0; k < (size_t) n * w; k++) buf[k] = rows[k];
  } else {
    const double *rows = static_cast<const double *>(impl->rows) + (size_t) first * w;
    memcpy(buf, rows, sizeof(double) * n * w);
  }
  return n * w;
}

/* ---------------------------------------------------------------------- */

void PairFusedNequip::unpack_reverse_comm(int n, int *list, double *buf)
{
  const int w = impl->width;
  if (impl->single_precision) {
    float *rows = static_cast<float *>(impl->rows);
    for (int i = 0; i < n; i++)
      for (int k = 0; k < w; k++) rows[(size_t) list[i] * w + k] += (float) buf[(size_t) i * w + k];
  } else {
    double *rows = static_cast<double *>(impl->rows);
    for (int i = 0; i < n; i++)
      for (int k = 0; k < w; k++) rows[(size_t) list[i] * w + k] += buf[(size_t) i * w + k];
  }
}

/* ----------------------------------------------------------------------
   a library context for this rank: device, precision, ghost exchange
------------------------------------------------------------------------- */

void PairFusedNequip::make_context()
{
  free_context();

  // ranks of one node share its GPUs round-robin, unless device cuda:N names one
  int32_t device_id = 0;
  if (impl->device != FNQ_DEVICE_CPU && fnq_cuda_device_count() > 0) {
    MPI_Comm node;
    int node_rank = 0;
    MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_free(&node);
    device_id = impl->device_index >= 0 ? impl->device_index
                : impl->arrays_gpu >= 0    ? impl->arrays_gpu
                                           : node_rank % fnq_cuda_device_count();
  }
  enum fnq_status status =
      fnq_ctx_init(impl->model, impl->device, device_id, impl->dtype, &impl->ctx);
  fail_unless_all(status == FNQ_STATUS_OK,
                  std::string("Pair fusednequip: cannot set up device '") +
                      fnq_device_name(impl->device) + "', dtype '" + fnq_dtype_name(impl->dtype) +
                      "': " + fnq_last_error());
  if (impl->max_neighbors >= 0 &&
      fnq_ctx_set_max_neighbors(impl->ctx, (int64_t) impl->max_neighbors) != FNQ_STATUS_OK)
    error->all(FLERR, std::string("Pair style fusednequip: max_neighbors: ") + fnq_last_error());
  if (impl->min_distance >= 0.0 &&
      fnq_ctx_set_min_distance(impl->ctx, impl->min_distance) != FNQ_STATUS_OK)
    error->all(FLERR, std::string("Pair style fusednequip: min_distance: ") + fnq_last_error());
  std::string why = choose_exchange(device_id);
  if (comm->nprocs == 1 && impl->exchange_one_rank)
    why += " (FNQ_EXCHANGE_ONE_RANK=1: the ghosts are exchanged, not folded)";
  if (comm->nprocs > 1 && impl->max_width > 0)
    why += impl->fold_own_images ? "; the periodic images of a rank's own atoms are folded onto "
                                   "them, the other ghosts exchanged"
                                 : "; every ghost exchanged (FNQ_FOLD_OWN_IMAGES=0)";
  impl->context_stale = false;

  if (comm->me == 0) {
    const struct fnq_model *m = impl->model;
    utils::logmesg(lmp,
                   std::string("fusednequip: model ") + fnq_model_path(m) + " (" +
                       fnq_model_family(m) + ", " + std::to_string(fnq_model_num_layers(m)) +
                       " layers, cutoff " + std::to_string(impl->cutoff) + " A), " +
                       fnq_dtype_name(fnq_ctx_dtype(impl->ctx)) + " on " +
                       fnq_device_name(fnq_ctx_device(impl->ctx)) + ", ghost exchange of up to " +
                       std::to_string(impl->max_width) + " values per atom per layer\n" +
                       "fusednequip: ghost exchange '" + impl->exchange + "': " + why + "\n");
  }
}

/* ----------------------------------------------------------------------
   which ghost exchange runs, installed in the context; returns why (for the log):
     none    one rank: the library folds ghosts onto their owners (owner map, in compute)
     host    LAMMPS' communication of host rows (the CPU; `comm host` on the GPU)
     staged  our exchange on the GPU, through pinned host memory and MPI (mpi/)
     ipc     our exchange GPU memory to GPU memory by CUDA IPC: ranks of one node (mpi/)
     nccl    our exchange GPU to GPU through NCCL, recorded in the CUDA graph (mpi/)
------------------------------------------------------------------------- */

std::string PairFusedNequip::choose_exchange(int device_id)
{
  FusedNequipImpl &d = *impl;
  const std::string &want = d.comm_choice;
  const bool gpu = fnq_ctx_device(d.ctx) == FNQ_DEVICE_CUDA;
  d.owner_map = comm->nprocs == 1 && atom->tag_enable && !d.exchange_one_rank;
  d.fold_own_images = d.fold_wanted && comm->nprocs > 1 && atom->tag_enable;
  if (d.owner_map) {
    d.exchange = "none";
    return "one rank";
  }
  if (d.max_width == 0) {
    // a local model: its ghosts need positions only, which LAMMPS gives them; their forces
    // go back to their owners through LAMMPS' reverse communication (newton on)
    d.fold_own_images = false;
    d.exchange = "none";
    return "a local model (" + std::string(fnq_model_family(d.model)) +
           "): no layer exchanges anything, LAMMPS' own ghost atoms suffice";
  }
  if (!gpu && (want == "nccl" || want == "ipc" || want == "staged"))
    error->all(FLERR, "Pair fusednequip: comm " + want +
                          " moves ghost rows between GPUs, but the model runs on the CPU; use "
                          "device cuda, or comm host");
  std::string why;
  d.exchange = "host";
  if (!gpu)
    why = "the model runs on the CPU";
  else if (want == "host")
    why = "asked for (comm host): rows through host memory and LAMMPS' communication";
#ifdef FNQ_HAVE_HALO
  else {
    int32_t shared = 0, a = -1, b = -1;
    const enum fnq_status st = fnq_halo_gpu_shared(world, device_id, &shared, &a, &b);
    fail_unless_all(st == FNQ_STATUS_OK,
                    std::string("Pair fusednequip: ghost exchange: ") + fnq_last_error());
    const std::string pair = "ranks " + std::to_string(a) + " and " + std::to_string(b);
    if (want == "nccl" && shared)
      error->all(FLERR, "Pair fusednequip: comm nccl: NCCL cannot run two ranks on one GPU, and " +
                            pair + " share one; use one rank per GPU, or comm staged");
    if (want == "nccl" && !fnq_halo_has_nccl())
      error->all(FLERR, "Pair fusednequip: comm nccl: this build has no NCCL (CMake found "
                        "none); use comm staged");
    if (want != "auto") {
      d.exchange = want;
      why = "asked for (comm " + want + ")";
    } else if (shared) {
      d.exchange = "ipc";
      why = "auto: " + pair + " share a GPU, which NCCL refuses; CUDA IPC between them";
    } else if (!fnq_halo_has_nccl()) {
      d.exchange = "staged";
      why = "auto: this build has no NCCL";
    } else {
      d.exchange = "nccl";
      why = "auto: every rank has a GPU of its own";
    }
    // without MPS the processes' kernels take turns on the GPU (measured: +26 % over one rank
    // at 64,000 Si with 2 ranks, +10 % under MPS; docs/multi-gpu.md)
    if (shared)
      why += "; " + pair + " share a GPU: run NVIDIA MPS so that their kernels run side by side";
    const enum fnq_halo_transport t = d.exchange == "nccl"  ? FNQ_HALO_NCCL
                                      : d.exchange == "ipc" ? FNQ_HALO_IPC
                                                            : FNQ_HALO_STAGED;
    const enum fnq_status init = fnq_halo_init(world, t, device_id, &d.halo);
    fail_unless_all(init == FNQ_STATUS_OK,
                    std::string("Pair fusednequip: ghost exchange '") + d.exchange +
                        "': " + fnq_last_error());
    fnq_halo_set_timing(d.halo, d.timing_exchange);
    const struct fnq_device_comm dc = fnq_halo_device_comm(d.halo);
    fail_unless_all(fnq_ctx_set_device_comm(d.ctx, &dc) == FNQ_STATUS_OK,
                    std::string("Pair fusednequip: ") + fnq_last_error());
    d.routed = false;
    return why;
  }
#else
  else {
    if (want == "nccl" || want == "ipc" || want == "staged")
      error->all(FLERR, "Pair fusednequip: comm " + want +
                            " needs the GPU exchange (mpi/), which this build does not have "
                            "(no CUDA or no MPI at configure time); use comm host");
    why = "this build has no GPU exchange (mpi/)";
  }
#endif
  const struct fnq_comm exchange = {this, forward_rows, reverse_rows};
  fail_unless_all(fnq_ctx_set_comm(d.ctx, &exchange) == FNQ_STATUS_OK,
                  std::string("Pair fusednequip: ") + fnq_last_error());
  return why;
}

/* ----------------------------------------------------------------------
   the context before the exchange: its recorded CUDA graph holds NCCL calls
------------------------------------------------------------------------- */

void PairFusedNequip::free_context()
{
  fnq_ctx_free(impl->ctx);
  impl->ctx = nullptr;
  impl->pairs_sent = false;
#ifdef FNQ_HAVE_HALO
  if (impl->halo && impl->timing) {
    struct fnq_halo_stats st;
    fnq_halo_take_stats(impl->halo, &st);
    if (impl->timed_steps > 0)
      fprintf(stderr,
              "pair fusednequip exchange (rank %d): %s, %d peers, per step: %.1f exchanges, "
              "%.0f rows and %.3f MB sent, %.0f rows copied locally\n",
              comm->me, impl->exchange.c_str(), st.peers,
              (double) st.exchanges / impl->timed_steps,
              (double) st.rows_sent / impl->timed_steps,
              1e-6 * st.bytes_sent / impl->timed_steps,
              (double) st.rows_local / impl->timed_steps);
    if (impl->timing_exchange && st.exchanges > 0)
      fprintf(stderr,
              "pair fusednequip exchange phases (rank %d), mean ms per exchange: pack %.3f, "
              "transport %.3f (to host %.3f, MPI %.3f), unpack/sum %.3f\n",
              comm->me, 1e3 * st.t_pack / st.exchanges, 1e3 * st.t_move / st.exchanges,
              1e3 * st.t_to_host / st.exchanges, 1e3 * st.t_mpi / st.exchanges,
              1e3 * st.t_unpack / st.exchanges);
  }
  fnq_halo_free(impl->halo);
  impl->halo = nullptr;
#endif
}
