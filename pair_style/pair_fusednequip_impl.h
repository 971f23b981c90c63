/* ----------------------------------------------------------------------
   pair_fusednequip_impl.h: the pair style's state (FusedNequipImpl), shared by its two
   files: pair_fusednequip.cpp (settings, model, neighbour list, compute) and
   pair_fusednequip_comm.cpp (the library context and the ghost exchange).
------------------------------------------------------------------------- */

#ifndef LMP_PAIR_FUSEDNEQUIP_IMPL_H
#define LMP_PAIR_FUSEDNEQUIP_IMPL_H

#include "lmptype.h"

#include "fnq.h"

#include <string>
#include <unordered_map>
#include <vector>

struct fnq_halo;

namespace LAMMPS_NS {

struct FusedNequipImpl {
  struct fnq_model *model = nullptr;
  struct fnq_ctx *ctx = nullptr;
  double cutoff = 0.0;
  int max_width = 0;    // widest per-layer ghost exchange (values per atom)

  // pair_style settings; the context is rebuilt when they or the model change
  enum fnq_dtype dtype = FNQ_DTYPE_DEFAULT;
  enum fnq_device device = FNQ_DEVICE_AUTO;
  int device_index = -1;    // cuda:N; -1: the GPU of the caller's arrays, else by node-local rank
  int arrays_gpu = -1;      // the GPU of a KOKKOS LAMMPS' device arrays (use_gpu_of_arrays)
  std::string comm_choice = "auto";    // auto, nccl, ipc, staged, host
  std::string modal;                   // a multi-modal model's modality ("" none)
  bool context_stale = true;

  // several ranks on GPUs: our own ghost exchange on the GPU (mpi/), routed once per
  // neighbour-list rebuild from each ghost's owner (rank, index there)
  struct fnq_halo *halo = nullptr;
  std::string exchange = "none";    // what runs: none (one rank), host, staged, ipc, nccl
  bool routed = false;
  bool pairs_sent = false;    // the context holds this list's pairs: steps repeat them
  std::vector<double> owner_rows;    // [nall][2]: (rank, index) moved by LAMMPS' forward comm
  std::vector<int32_t> ghost_rank;
  std::vector<int64_t> ghost_index;

  std::vector<int32_t> type_species;    // [ntypes+1]: model species index of each atom type

  // pair_style max_neighbors / min_distance (-1: the library's defaults)
  long long max_neighbors = -1;
  double min_distance = -1.0;
  // the neighbour list's settings are audited at the first step after each init: by then
  // pair hybrid, neigh_modify and special_bonds have said which pairs it leaves out
  bool list_audited = false;

  // per-step buffers, kept between steps
  std::vector<int32_t> species;
  std::vector<int64_t> edge_recv, edge_send;
  int listed_nall = -1, listed_nlocal = -1;    // atom counts when the pairs were listed
  std::vector<double> forces, atom_energies, atom_virial;

  // one rank: every ghost is a periodic image of an owned atom, found by its tag, and the
  // library folds it onto that atom instead of exchanging its rows
  bool owner_map = false;
  // several ranks: the same for the ghosts that are periodic images of this rank's own atoms
  // (owner -1 for the rest, which the exchange fills), unless FNQ_FOLD_OWN_IMAGES=0. They are
  // most of a domain's ghosts where the box is cut along one or two axes (docs/multi-gpu.md).
  bool fold_own_images = false, fold_wanted = true;
  std::vector<int64_t> ghost_owner;
  std::vector<int> local_of_tag;    // indexed by atom ID, where IDs are dense
  std::unordered_map<tagint, int> sparse_local_of_tag;    // where they are not

  // FNQ_TIMING=1: wall-clock of this side of compute() per step, printed by each rank at the
  // end (prepare: species, pair list, ghost map; library: the call; tally: forces, virial)
  bool timing = false, timing_exchange = false;
  // FNQ_EXCHANGE_ONE_RANK=1: one rank exchanges its ghosts (its own periodic images) as ranks
  // of a decomposition do, instead of folding them onto their owners. Same results, more work:
  // for measuring what ghost atoms cost a rank without other ranks to wait for (docs/multi-gpu.md)
  bool exchange_one_rank = false;
  long timed_steps = 0;
  double t_prepare = 0.0, t_library = 0.0, t_tally = 0.0;

  // the exchange in progress: rows of `width` floats or doubles, indexed by LAMMPS atom index
  void *rows = nullptr;
  int width = 0;
  bool single_precision = false;
};

}    // namespace LAMMPS_NS

#endif
