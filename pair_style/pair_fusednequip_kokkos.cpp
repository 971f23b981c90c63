/* ----------------------------------------------------------------------
   pair_style fusednequip/kk (see pair_fusednequip_kokkos.h). Compiled as CUDA against the
   KOKKOS LAMMPS' headers and its Kokkos configuration (pair_style/CMakeLists.txt).
------------------------------------------------------------------------- */

#include "pair_fusednequip_kokkos.h"

#include "atom_kokkos.h"
#include "atom_masks.h"
#include "comm.h"
#include "kokkos_type.h"
#include "utils.h"

using namespace LAMMPS_NS;

PairFusedNequipKokkos::PairFusedNequipKokkos(LAMMPS *lmp) : PairFusedNequip(lmp)
{
  kokkosable = 1;
  atomKK = (AtomKokkos *) atom;
  // Verlet (Kokkos) syncs these to the device before compute() and marks the forces modified
  // there after it
  execution_space = Device;
  datamask_read = X_MASK | F_MASK | TYPE_MASK;
  datamask_modify = F_MASK;
}

void PairFusedNequipKokkos::init_style()
{
  // the library on the GPU Kokkos gave this rank (`-k on g N`: node-local rank mod N), where
  // the arrays it reads are, unless `device cuda:N` says otherwise
  use_gpu_of_arrays(Kokkos::Cuda().cuda_device());
  PairFusedNequip::init_style();
}

void PairFusedNequipKokkos::finish()
{
  if (comm->me == 0 && device_steps + host_steps > 0)
    utils::logmesg(lmp, "fusednequip/kk: {} steps on Kokkos' device arrays, {} through the host\n",
                   device_steps, host_steps);
  device_steps = host_steps = 0;
}

void PairFusedNequipKokkos::compute(int eflag, int vflag)
{
  ev_init(eflag, vflag);
  if (device_step_possible()) {
    // Kokkos' work on the positions (integration, communication) done before the library
    // reads them on its own stream
    Kokkos::fence();
    compute_device_step(atomKK->k_x.d_view.data(), atomKK->k_f.d_view.data());
    device_steps++;
    return;
  }
  // the host path: the arrays it reads brought to the host, its forces taken back to the
  // device, where Verlet marks them modified after this call. LAMMPS' communication of our
  // rows (ghost routing, comm host) goes through its host buffers: Host while it runs.
  atomKK->sync(Host, X_MASK | F_MASK | TYPE_MASK | TAG_MASK);
  execution_space = Host;
  PairFusedNequip::compute(eflag, vflag);
  execution_space = Device;
  atomKK->modified(Host, F_MASK);
  atomKK->sync(Device, F_MASK);
  host_steps++;
}
