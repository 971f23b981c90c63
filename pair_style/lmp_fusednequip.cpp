/* ----------------------------------------------------------------------
   lmp_fusednequip: LAMMPS' `lmp` with pair_style fusednequip registered before the input is
   read. For LAMMPS builds without the PLUGIN package, such as Debian 12's; takes the same
   command-line arguments as lmp:
     mpirun -np 2 lmp_fusednequip -in in.si-nvt
------------------------------------------------------------------------- */

#include "exceptions.h"
#include "input.h"
#include "lammps.h"

#include <mpi.h>
#include <cstdio>
#include <cstdlib>

using namespace LAMMPS_NS;

extern "C" int fusednequip_register(void *lmp);

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  // LAMMPS built with exceptions (current releases) throws on errors; 29Sep2021 exits itself
  try {
    LAMMPS *lmp = new LAMMPS(argc, argv, MPI_COMM_WORLD);
    fusednequip_register(lmp);
    lmp->input->file();
    delete lmp;
  } catch (LAMMPSAbortException &) {
    fflush(nullptr);                 // MPI_Abort writes no stdio buffers: the screen, the log
    MPI_Abort(MPI_COMM_WORLD, 1);    // error->one: only some ranks are here
  } catch (LAMMPSException &) {
    MPI_Barrier(MPI_COMM_WORLD);    // error->all: every rank is here
    MPI_Finalize();
    exit(1);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
