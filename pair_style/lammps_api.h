/*
 * lammps_api.h: the two places where LAMMPS' pair-style API changed in 2022, chosen at compile
 * time. pair_style/CMakeLists.txt reads the LAMMPS headers it builds against and defines
 *   FNQ_LAMMPS_ADD_REQUEST  neighbor->add_request(pair, flags)  (LAMMPS >= 2022; else the
 *                           old neighbor->request() plus NeighRequest flags, 29Sep2021)
 *   FNQ_LAMMPS_COMM_PAIR    comm->forward_comm(Pair *)          (LAMMPS >= 2022; else
 *                           comm->forward_comm_pair(), 29Sep2021)
 */
#ifndef LMP_FUSEDNEQUIP_LAMMPS_API_H
#define LMP_FUSEDNEQUIP_LAMMPS_API_H

#include "comm.h"
#include "neigh_request.h"
#include "neighbor.h"
#include "pair.h"

namespace LAMMPS_NS {
namespace fusednequip_api {

  // A full neighbour list of the owned atoms (both directions of every pair), no ghost lists.
  inline void request_full_list(Neighbor *neighbor, Pair *pair, int instance_me)
  {
#if FNQ_LAMMPS_ADD_REQUEST
    (void) instance_me;
    neighbor->add_request(pair, NeighConst::REQ_FULL);
#else
    int irequest = neighbor->request(pair, instance_me);
    neighbor->requests[irequest]->half = 0;
    neighbor->requests[irequest]->full = 1;
#endif
  }

  // Owned rows -> ghost rows, pair->comm_forward values per atom.
  inline void forward_comm(Comm *comm, Pair *pair)
  {
#if FNQ_LAMMPS_COMM_PAIR
    comm->forward_comm(pair);
#else
    comm->forward_comm_pair(pair);
#endif
  }

  // Ghost rows added into owned rows, pair->comm_reverse values per atom.
  inline void reverse_comm(Comm *comm, Pair *pair)
  {
#if FNQ_LAMMPS_COMM_PAIR
    comm->reverse_comm(pair);
#else
    comm->reverse_comm_pair(pair);
#endif
  }

}    // namespace fusednequip_api
}    // namespace LAMMPS_NS

#endif
