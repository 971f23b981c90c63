/* -*- c++ -*- ----------------------------------------------------------
   pair_style fusednequip: NequIP-family equivariant potentials (Nequix .nqx models) evaluated by
   libfusednequip, with per-layer ghost exchange across MPI ranks.

   The style is a thin shim: it hands positions, species and LAMMPS' full neighbour list (owned
   atoms plus ghosts) to fnq_ctx_compute_graph() and adds the returned forces, energies and
   virials to LAMMPS' arrays. Message passing needs the features of ghost atoms at every layer;
   the library asks for them through callbacks that run LAMMPS' forward communication (owned ->
   ghost rows) and, in the backward pass, its reverse communication (ghost rows summed into
   their owners). So every atom is computed once per layer, by its owner, and the ghost shell
   stays at cutoff + skin.
------------------------------------------------------------------------- */

#ifdef PAIR_CLASS
// clang-format off
PairStyle(fusednequip,PairFusedNequip);
// clang-format on
#else

#ifndef LMP_PAIR_FUSEDNEQUIP_H
#define LMP_PAIR_FUSEDNEQUIP_H

#include "pair.h"

#include <string>

namespace LAMMPS_NS {

struct FusedNequipImpl;    // library handles and buffers (pair_fusednequip_impl.h)

class PairFusedNequip : public Pair {
 public:
  PairFusedNequip(class LAMMPS *);
  ~PairFusedNequip() override;

  void compute(int, int) override;
  void settings(int, char **) override;
  void coeff(int, char **) override;
  void init_style() override;
  double init_one(int, int) override;

  int pack_forward_comm(int, int *, double *, int, int *) override;
  void unpack_forward_comm(int, int, double *) override;
  int pack_reverse_comm(int, int, double *) override;
  void unpack_reverse_comm(int, int *, double *) override;
  double memory_usage() override;

  // One layer's ghost exchange of `width` values per atom, called back by the library.
  void exchange_rows(void *rows, int width, bool single_precision, bool forward);

  // Whether this step can run on a KOKKOS LAMMPS' device arrays (pair_fusednequip_kokkos.cpp):
  // the pairs of the current neighbour list are on the GPU and nothing needs the host (no
  // per-atom tallies, no exchange through LAMMPS' host communication). After ev_init.
  bool device_step_possible();
  // That step: positions read and forces added where LAMMPS keeps them on the GPU.
  void compute_device_step(const double *x_device, double *f_device);
  // The GPU whose memory those arrays are: the context's unless `device cuda:N` named one.
  void use_gpu_of_arrays(int device_id);

 protected:
  FusedNequipImpl *impl;

  void allocate();
  void load_model(const char *name);
  void select_modality(const char *name);
  void check_elements();
  void make_context();
  std::string choose_exchange(int device_id);
  void free_context();
  void route_ghosts();
  void fail_unless_all(bool ok, const std::string &message);
  void stop_on_this_rank(const std::string &message);
  std::string error_with_atom_ids(int nall);
  void audit_neighbor_list();
  void refuse_removed_pairs(const std::string &what, const std::string &fix);
  void tally_global(double energy, const double *w);
};

}    // namespace LAMMPS_NS

#endif
#endif
