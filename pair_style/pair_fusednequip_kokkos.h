/* -*- c++ -*- ----------------------------------------------------------
   pair_style fusednequip/kk: pair_style fusednequip in a LAMMPS built with KOKKOS for CUDA
   (`-sf kk` picks it), reading positions and adding forces where Kokkos keeps them on the GPU.

   Between neighbour-list rebuilds a step hands the library Kokkos' device positions (owned
   atoms and ghosts, after Kokkos' own communication) and gets the forces added into Kokkos'
   device force array: no copy through the host. Rebuild steps (the new pair list is read from
   LAMMPS' host list), steps that tally per-atom energies or virials and LAMMPS' host ghost
   exchange run pair_style fusednequip's host path, with the arrays synchronised around it.
------------------------------------------------------------------------- */

#ifdef PAIR_CLASS
// clang-format off
PairStyle(fusednequip/kk,PairFusedNequipKokkos);
PairStyle(fusednequip/kk/device,PairFusedNequipKokkos);
// clang-format on
#else

#ifndef LMP_PAIR_FUSEDNEQUIP_KOKKOS_H
#define LMP_PAIR_FUSEDNEQUIP_KOKKOS_H

#include "pair_fusednequip.h"

namespace LAMMPS_NS {

class PairFusedNequipKokkos : public PairFusedNequip {
 public:
  PairFusedNequipKokkos(class LAMMPS *);
  void compute(int, int) override;
  void init_style() override;
  void finish() override;

 private:
  long device_steps = 0, host_steps = 0;    // of the current run, logged at its end
};

}    // namespace LAMMPS_NS

#endif
#endif
