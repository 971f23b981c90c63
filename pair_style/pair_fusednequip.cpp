/* ----------------------------------------------------------------------
   pair_style fusednequip: the LAMMPS side of libfusednequip (see pair_fusednequip.h).

   Input:  units metal / newton on (the default)
           pair_style fusednequip [dtype float64|float32] [device auto|cpu|cuda|cuda:N]
                                  [comm auto|nccl|ipc|staged|host]
           pair_coeff * * <model.nqx or model name> <element of type 1> <element of type 2> ...
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

PairFusedNequip::PairFusedNequip(LAMMPS *lmp) : Pair(lmp)
{
  single_enable = 0;
  restartinfo = 0;
  one_coeff = 1;
  manybody_flag = 1;
  no_virial_fdotr_compute = 1;    // the library returns the virial
  centroidstressflag = CENTROID_NOTAVAIL;
  impl = new FusedNequipImpl;
  const char *timing = getenv("FNQ_TIMING");
  // 1: where a step's time goes; 2: also each exchange's phases (slower: drains the stream)
  impl->timing = timing && (strcmp(timing, "1") == 0 || strcmp(timing, "2") == 0);
  impl->timing_exchange = timing && strcmp(timing, "2") == 0;
  const char *one_rank = getenv("FNQ_EXCHANGE_ONE_RANK");
  impl->exchange_one_rank = one_rank && strcmp(one_rank, "1") == 0;
  const char *fold = getenv("FNQ_FOLD_OWN_IMAGES");
  impl->fold_wanted = !(fold && strcmp(fold, "0") == 0);
}

/* ---------------------------------------------------------------------- */

PairFusedNequip::~PairFusedNequip()
{
  if (copymode) return;
  if (impl->timing && impl->timed_steps > 0)
    fprintf(stderr,
            "pair fusednequip timing (rank %d): %ld steps, mean ms per step: prepare %.3f, "
            "library %.3f, tally %.3f\n",
            comm->me, impl->timed_steps, 1e3 * impl->t_prepare / impl->timed_steps,
            1e3 * impl->t_library / impl->timed_steps, 1e3 * impl->t_tally / impl->timed_steps);
  free_context();
  fnq_model_free(impl->model);
  delete impl;
  if (allocated) {
    memory->destroy(setflag);
    memory->destroy(cutsq);
  }
}

/* ----------------------------------------------------------------------
   one evaluation: gather, one library call, scatter and tally
------------------------------------------------------------------------- */

void PairFusedNequip::compute(int eflag, int vflag)
{
  ev_init(eflag, vflag);
  FusedNequipImpl &d = *impl;
  if (!d.list_audited) audit_neighbor_list();
  using clock = std::chrono::steady_clock;
  const clock::time_point t0 = clock::now();
  const int nlocal = atom->nlocal;
  const int nall = nlocal + atom->nghost;
  const int *type = atom->type;

  // The pair list and the ghost map change only when LAMMPS rebuilds its neighbour list
  // (ghosts are re-created then too); between rebuilds they are reused as they are.
  const bool rebuilt = neighbor->ago == 0 || nall != d.listed_nall || nlocal != d.listed_nlocal;
  if (rebuilt || !d.pairs_sent) {
    d.species.resize(nall);
    for (int i = 0; i < nall; i++) d.species[i] = d.type_species[type[i]];
  }
  if (rebuilt) {
    // every listed pair as it is: the library drops pairs at or beyond the cutoff (the skin)
    size_t n_pairs = 0;
    for (int ii = 0; ii < list->inum; ii++) n_pairs += list->numneigh[list->ilist[ii]];
    d.edge_recv.resize(n_pairs);
    d.edge_send.resize(n_pairs);
    size_t q = 0;
    bool stale = false;
    for (int ii = 0; ii < list->inum; ii++) {
      const int i = list->ilist[ii];
      const int *jlist = list->firstneigh[i];
      stale |= i >= nlocal;
      for (int jj = 0; jj < list->numneigh[i]; jj++, q++) {
        d.edge_recv[q] = i;
        d.edge_send[q] = jlist[jj] & NEIGHMASK;
        stale |= d.edge_send[q] >= nall;
      }
    }
    // atoms migrated or were deleted since LAMMPS built the list, which it did not rebuild
    if (stale)
      stop_on_this_rank(
          "Pair fusednequip: the neighbour list is stale: it names atoms this rank no longer "
          "has (" + std::to_string(nlocal) + " owned, " + std::to_string(nall - nlocal) +
          " ghosts now). Atoms were moved or the box changed (change_box, displace_atoms, "
          "delete_atoms, ...) and the run started with 'pre no': use 'run N pre yes' there, "
          "which rebuilds the list");
    d.listed_nall = nall;
    d.listed_nlocal = nlocal;
  }

  const int64_t *ghost_owner = nullptr;
  if ((d.owner_map || d.fold_own_images) && nall > nlocal) {
    if (rebuilt) {
      const tagint *tag = atom->tag;
      tagint max_tag = 0;
      for (int i = 0; i < nlocal; i++) max_tag = std::max(max_tag, tag[i]);
      // ID -> owned atom: a table indexed by ID when the IDs are about as many as the atoms
      // (1..N as usual), else a hash: IDs may be sparse and large (10^9 + k), and the table
      // would take 4 bytes per possible ID (4 GB there, filled at every rebuild)
      const bool dense = (bigint) max_tag <= 4 * (bigint) nall + 1024;
      d.local_of_tag.assign(dense ? (size_t) max_tag + 1 : 0, -1);
      d.sparse_local_of_tag.clear();
      for (int i = 0; i < nlocal; i++) {
        if (dense)
          d.local_of_tag[tag[i]] = i;
        else
          d.sparse_local_of_tag[tag[i]] = i;
      }
      d.ghost_owner.resize(nall - nlocal);
      for (int g = nlocal; g < nall; g++) {
        int owner = -1;
        if (dense) {
          if (tag[g] <= max_tag) owner = d.local_of_tag[tag[g]];
        } else {
          const auto found = d.sparse_local_of_tag.find(tag[g]);
          if (found != d.sparse_local_of_tag.end()) owner = found->second;
        }
        if (owner < 0 && d.owner_map)
          stop_on_this_rank("Pair fusednequip: ghost atom " + std::to_string(g) + " (id " +
                            std::to_string(tag[g]) + ") is an image of no owned atom");
        d.ghost_owner[g - nlocal] = owner;
      }
    }
    ghost_owner = d.ghost_owner.data();
  }

  // the GPU exchange is routed when LAMMPS rebuilt its lists (on every rank at once)
  if (d.halo && (neighbor->ago == 0 || !d.routed)) route_ghosts();

  d.forces.resize(3 * (size_t) nall);
  if (eflag_atom) d.atom_energies.resize(nlocal);
  if (vflag_atom) d.atom_virial.resize(6 * (size_t) nall);
  double energy = 0.0, w[6];    // w: W = sum r (x) F, order xx yy zz yz xz xy
  const clock::time_point t1 = clock::now();
  // between rebuilds only the positions change: the library keeps the pairs (on the GPU)
  double *x = nall ? atom->x[0] : nullptr;
  double *eatom_out = eflag_atom ? d.atom_energies.data() : nullptr;
  double *vatom_out = vflag_atom ? d.atom_virial.data() : nullptr;
  const enum fnq_status status =
      !rebuilt && d.pairs_sent
          ? fnq_ctx_compute_graph_repeat(d.ctx, x, &energy, eatom_out, d.forces.data(), w,
                                         vatom_out)
          : fnq_ctx_compute_graph(d.ctx, nlocal, nall, x, d.species.data(),
                                  (int64_t) d.edge_recv.size(), d.edge_recv.data(),
                                  d.edge_send.data(), nullptr, ghost_owner, &energy, eatom_out,
                                  d.forces.data(), w, vatom_out);
  d.pairs_sent = status == FNQ_STATUS_OK;
  if (status != FNQ_STATUS_OK)
    stop_on_this_rank("Pair fusednequip on rank " + std::to_string(comm->me) + ": " +
                      error_with_atom_ids(nall));
  const clock::time_point t2 = clock::now();

  // with an owner map the library has folded the ghosts' forces onto their owners (ghost rows
  // are zeros); with the comm callbacks they stay on the ghosts and LAMMPS folds them (newton on)
  double **f = atom->f;
  for (int i = 0; i < nall; i++)
    for (int k = 0; k < 3; k++) f[i][k] += d.forces[3 * i + k];

  tally_global(energy, w);
  if (eflag_atom)
    for (int i = 0; i < nlocal; i++) eatom[i] += d.atom_energies[i];
  if (vflag_atom) {
    for (int i = 0; i < nall; i++) {
      const double *v = &d.atom_virial[6 * (size_t) i];
      vatom[i][0] += v[0];
      vatom[i][1] += v[1];
      vatom[i][2] += v[2];
      vatom[i][3] += v[5];
      vatom[i][4] += v[4];
      vatom[i][5] += v[3];
    }
  }
  if (d.timing) {
    const clock::time_point t3 = clock::now();
    d.t_prepare += std::chrono::duration<double>(t1 - t0).count();
    d.t_library += std::chrono::duration<double>(t2 - t1).count();
    d.t_tally += std::chrono::duration<double>(t3 - t2).count();
    d.timed_steps++;
  }
}

/* ---------------------------------------------------------------------- */

void PairFusedNequip::tally_global(double energy, const double *w)
{
  if (eflag_global) eng_vdwl += energy;
  // LAMMPS orders virials xx yy zz xy xz yz
  if (vflag_global) {
    virial[0] += w[0];
    virial[1] += w[1];
    virial[2] += w[2];
    virial[3] += w[5];
    virial[4] += w[4];
    virial[5] += w[3];
  }
}

/* ----------------------------------------------------------------------
   a step on a KOKKOS LAMMPS' device arrays: between neighbour-list rebuilds, the library keeps
   the pairs on the GPU, so only positions go in and forces come out, both where Kokkos keeps
   them. Rebuild steps, per-atom tallies and LAMMPS' host exchange take compute() instead.
------------------------------------------------------------------------- */

bool PairFusedNequip::device_step_possible()
{
  const FusedNequipImpl &d = *impl;
  const int nlocal = atom->nlocal, nall = nlocal + atom->nghost;
  // (a local model's GPU engine builds its graph on the host: no device-array steps)
  return d.ctx && fnq_ctx_device(d.ctx) == FNQ_DEVICE_CUDA && d.max_width > 0 && d.pairs_sent &&
         d.list_audited &&
         neighbor->ago != 0 && nall == d.listed_nall && nlocal == d.listed_nlocal &&
         !eflag_atom && !vflag_atom && d.exchange != "host" && (!d.halo || d.routed);
}

void PairFusedNequip::use_gpu_of_arrays(int device_id)
{
  if (impl->device_index >= 0 || impl->device == FNQ_DEVICE_CPU || impl->arrays_gpu == device_id)
    return;
  impl->arrays_gpu = device_id;
  impl->context_stale = true;
}

void PairFusedNequip::compute_device_step(const double *x_device, double *f_device)
{
  FusedNequipImpl &d = *impl;
  using clock = std::chrono::steady_clock;
  const clock::time_point t0 = clock::now();
  double energy = 0.0, w[6];
  const enum fnq_status status =
      fnq_ctx_compute_graph_repeat_device(d.ctx, x_device, f_device, &energy, w);
  d.pairs_sent = status == FNQ_STATUS_OK;
  if (status != FNQ_STATUS_OK)
    stop_on_this_rank("Pair fusednequip on rank " + std::to_string(comm->me) + ": " +
                      error_with_atom_ids(atom->nlocal + atom->nghost));
  tally_global(energy, w);
  if (d.timing) {
    d.t_library += std::chrono::duration<double>(clock::now() - t0).count();
    d.timed_steps++;
  }
}

/* ----------------------------------------------------------------------
   the library's last error for a LAMMPS user: led by the atom IDs it is about (the library
   names atoms by this rank's indices, owned then ghosts), and with the pair_style keyword
   where the library names its C setter, e.g.
   "atom IDs 1 and 9 (9 as a ghost image): atoms 0 and 8 are 0.05 A apart, ...
    (atoms 0 and 8 are indices on this rank)"
------------------------------------------------------------------------- */

std::string PairFusedNequip::error_with_atom_ids(int nall)
{
  std::string message = fnq_last_error();
  static const std::pair<const char *, const char *> keywords[] = {
      {"fnq_ctx_set_max_neighbors", "the pair_style fusednequip keyword max_neighbors"},
      {"fnq_ctx_set_min_distance", "the pair_style fusednequip keyword min_distance"}};
  for (const auto &k : keywords) {
    const size_t at = message.find(k.first);
    if (at != std::string::npos) message.replace(at, strlen(k.first), k.second);
  }

  int64_t index[2];
  const int n = std::min(fnq_last_error_atoms(index, 2), 2);
  std::string ids, indices, ghosts;
  for (int k = 0; k < n; k++) {
    if (index[k] < 0 || index[k] >= nall) continue;
    const std::string id = std::to_string((long) atom->tag[index[k]]);
    ids += (ids.empty() ? "" : " and ") + id;
    indices += (indices.empty() ? "" : " and ") + std::to_string(index[k]);
    if (index[k] >= atom->nlocal) ghosts += (ghosts.empty() ? "" : ", ") + id;
  }
  if (ids.empty()) return message;
  const bool two = ids.find(" and ") != std::string::npos;
  return std::string(two ? "atom IDs " : "atom ID ") + ids +
      (ghosts.empty() ? "" : " (" + ghosts + " as a ghost image)") + ": " + message + " (atom" +
      (two ? "s " : " ") + indices + (two ? " are indices" : " is an index") + " on this rank)";
}

/* ---------------------------------------------------------------------- */

void PairFusedNequip::allocate()
{
  allocated = 1;
  const int n = atom->ntypes;
  memory->create(setflag, n + 1, n + 1, "pair:setflag");
  for (int i = 1; i <= n; i++)
    for (int j = i; j <= n; j++) setflag[i][j] = 0;
  memory->create(cutsq, n + 1, n + 1, "pair:cutsq");
  map = new int[n + 1];
}

/* ----------------------------------------------------------------------
   pair_style fusednequip [dtype float64|float32] [device auto|cpu|cuda|cuda:N]
                          [comm auto|nccl|ipc|staged|host] [modal NAME]
------------------------------------------------------------------------- */

void PairFusedNequip::settings(int narg, char **arg)
{
  if (strcmp(update->unit_style, "metal") != 0)
    error->all(FLERR,
               std::string("Pair style fusednequip requires 'units metal' (the models work in eV "
                           "and Angstrom); this input has 'units ") +
                   update->unit_style + "'");

  impl->dtype = FNQ_DTYPE_DEFAULT;
  impl->device = FNQ_DEVICE_AUTO;
  impl->device_index = -1;
  impl->comm_choice = "auto";
  impl->max_neighbors = -1;
  impl->min_distance = -1.0;
  const std::string modal_before = impl->modal;
  impl->modal.clear();
  for (int iarg = 0; iarg < narg; iarg += 2) {
    const std::string key = arg[iarg];
    if (key != "dtype" && key != "device" && key != "comm" && key != "max_neighbors" &&
        key != "min_distance" && key != "modal")
      error->all(FLERR,
                 "Unknown pair_style fusednequip keyword '" + key +
                     "' (known: dtype float64|float32, device auto|cpu|cuda|cuda:N, comm "
                     "auto|nccl|ipc|staged|host, max_neighbors N, min_distance D, modal NAME)");
    if (iarg + 1 >= narg)
      error->all(FLERR, "Pair style fusednequip: keyword '" + key + "' needs a value");
    const std::string value = arg[iarg + 1];
    if (key == "modal")
      impl->modal = value;
    else if (key == "max_neighbors")
      impl->max_neighbors = utils::bnumeric(FLERR, value.c_str(), false, lmp);
    else if (key == "min_distance")
      impl->min_distance = utils::numeric(FLERR, value.c_str(), false, lmp);
    else if (key == "dtype" && value == "float64")
      impl->dtype = FNQ_DTYPE_F64;
    else if (key == "dtype" && value == "float32")
      impl->dtype = FNQ_DTYPE_F32;
    else if (key == "device" && value == "auto")
      impl->device = FNQ_DEVICE_AUTO;
    else if (key == "device" && value == "cpu")
      impl->device = FNQ_DEVICE_CPU;
    else if (key == "device" && value == "cuda")
      impl->device = FNQ_DEVICE_CUDA;
    else if (key == "device" && value.rfind("cuda:", 0) == 0 && value.size() > 5 &&
             value.find_first_not_of("0123456789", 5) == std::string::npos) {
      impl->device = FNQ_DEVICE_CUDA;
      impl->device_index = std::stoi(value.substr(5));
    } else if (key == "comm" &&
               (value == "auto" || value == "nccl" || value == "ipc" || value == "staged" ||
                value == "host"))
      impl->comm_choice = value;
    else
      error->all(FLERR, "Pair style fusednequip: " + key + " '" + value + "' is not one of " +
                            (key == "dtype"    ? "float64, float32"
                             : key == "device" ? "auto, cpu, cuda, cuda:N"
                                               : "auto, nccl, ipc, staged, host"));
  }
  impl->context_stale = true;
  // a pair_style given again keeps the pair_coeff model: reload it for another modality
  if (impl->model && impl->modal != modal_before)
    load_model(std::string(fnq_model_path(impl->model)).c_str());
}

/* ----------------------------------------------------------------------
   pair_coeff * * <model> <element per atom type>
------------------------------------------------------------------------- */

void PairFusedNequip::coeff(int narg, char **arg)
{
  if (!allocated) allocate();
  const int ntypes = atom->ntypes;
  if (narg != 3 + ntypes || strcmp(arg[0], "*") != 0 || strcmp(arg[1], "*") != 0)
    error->all(FLERR,
               "Pair coeff for fusednequip must be: pair_coeff * * <model file> followed by one "
               "element for each of the " +
                   std::to_string(ntypes) + " atom types");
  for (int t = 1; t <= ntypes; t++)
    if (strcmp(arg[2 + t], "NULL") == 0)
      error->all(FLERR,
                 "Pair style fusednequip: atom type " + std::to_string(t) +
                     " is mapped to NULL; every atom type needs an element, since a message-"
                     "passing model sees all atoms");

  map_element2type(ntypes, arg + 3);
  load_model(arg[2]);
  check_elements();
}

/* ---------------------------------------------------------------------- */

void PairFusedNequip::load_model(const char *name)
{
  free_context();
  fnq_model_free(impl->model);
  impl->model = nullptr;
  impl->context_stale = true;

  // every rank reads the file (a few MB); a failure anywhere stops all ranks
  const enum fnq_status status = fnq_model_load(name, &impl->model);
  fail_unless_all(status == FNQ_STATUS_OK,
                  std::string("Pair fusednequip: cannot load model '") + name +
                      "': " + fnq_last_error());

  select_modality(name);
  impl->cutoff = fnq_model_cutoff(impl->model);
  impl->max_width = 0;
  for (int layer = 1; layer < fnq_model_num_layers(impl->model); layer++)
    impl->max_width = std::max(impl->max_width, (int) fnq_model_ghost_width(impl->model, layer));
}

/* ----------------------------------------------------------------------
   a multi-modal model (7net-mf-0) needs `pair_style fusednequip modal NAME`; another model
   refuses one
------------------------------------------------------------------------- */

void PairFusedNequip::select_modality(const char *name)
{
  const int32_t n = fnq_model_num_modalities(impl->model);
  std::string known;
  for (int32_t k = 0; k < n; k++)
    known += std::string(k ? " " : "") + fnq_model_modality_name(impl->model, k);
  if (impl->modal.empty() && n > 0)
    error->all(FLERR, std::string("Pair fusednequip: model '") + name +
                          "' is multi-modal (modalities: " + known +
                          "): choose one with pair_style fusednequip ... modal NAME");
  if (!impl->modal.empty() &&
      fnq_model_set_modality(impl->model, impl->modal.c_str()) != FNQ_STATUS_OK)
    error->all(FLERR, std::string("Pair fusednequip: modal ") + impl->modal + ": " +
                          fnq_last_error());
}

/* ----------------------------------------------------------------------
   map each atom type to the model's species index, by element symbol
------------------------------------------------------------------------- */

void PairFusedNequip::check_elements()
{
  const struct fnq_model *m = impl->model;
  const int ntypes = atom->ntypes;
  impl->type_species.assign(ntypes + 1, -1);
  for (int t = 1; t <= ntypes; t++) {
    const char *element = elements[map[t]];
    const int32_t s = fnq_model_species_index(m, element);
    if (s < 0) {
      std::string known;
      for (int32_t k = 0; k < fnq_model_num_species(m); k++)
        known += std::string(k ? " " : "") + fnq_model_species_symbol(m, k);
      error->all(FLERR,
                 std::string("Pair fusednequip: element '") + element + "' (atom type " +
                     std::to_string(t) + ") is not in model " + fnq_model_path(m) + ", which has " +
                     std::to_string(fnq_model_num_species(m)) + " elements: " + known);
    }
    impl->type_species[t] = s;
  }
}

/* ---------------------------------------------------------------------- */

void PairFusedNequip::init_style()
{
  // Kokkos on a GPU turns newton off by default: say what to add to the command line
  if (force->newton_pair == 0)
    error->all(FLERR,
               lmp->kokkos
                   ? "Pair style fusednequip requires newton pair on, which Kokkos on a GPU "
                     "turns off: add '-pk kokkos newton on neigh half' to the lmp command line"
                   : "Pair style fusednequip requires newton pair on (forces on ghost atoms are "
                     "folded into their owners by LAMMPS' reverse communication)");
  if (strcmp(update->unit_style, "metal") != 0)
    error->all(FLERR, "Pair style fusednequip requires 'units metal'");
  if (!impl->model) error->all(FLERR, "Pair style fusednequip: pair_coeff has not been given");

  fusednequip_api::request_full_list(neighbor, this, instance_me);
  if (impl->context_stale) make_context();
  impl->list_audited = false;

  // communication buffers are sized from these at Comm::init(), which runs after this
  comm_forward = comm_reverse = impl->max_width;
  // Under pair hybrid, Comm sizes them from the hybrid style's comm_forward/comm_reverse, which
  // hybrid copied from its sub-styles at pair_style time, before pair_coeff loaded the model:
  // raise them there too, or forward_comm_pair (which does not grow its buffers) overflows them
  Pair *top = force->pair;
  if (top && top != this) {
    top->comm_forward = std::max(top->comm_forward, comm_forward);
    top->comm_reverse = std::max(top->comm_reverse, comm_reverse);
  }
}

/* ----------------------------------------------------------------------
   A message-passing model needs every pair within its cutoff: an atom's energy depends on
   atoms several cutoffs away through the pairs between them. Refuse, naming the command,
   whatever takes pairs out of this style's list (otherwise the model would silently run on
   another graph): pair hybrid giving type pairs to other sub-styles or to none, neigh_modify
   exclude / include, special_bonds weights of 0 (LAMMPS then drops bonded pairs from every
   list). Runs at the first step after init, when those settings are final (hybrid sets this
   list's skip flags, Neighbor::init the special flags); the same verdict on every rank.
------------------------------------------------------------------------- */

static std::string shortest(double value)
{
  char text[32];
  snprintf(text, sizeof(text), "%g", value);
  return text;
}

void PairFusedNequip::audit_neighbor_list()
{
  impl->list_audited = true;
  const int ntypes = atom->ntypes;
  auto type_name = [&](int t) {
    return std::to_string(t) + " (" + elements[map[t]] + ")";
  };
  // pair hybrid's cutoff for a type pair is its sub-styles' (0 for none): LAMMPS lists
  // only the pairs within it (plus the skin)
  const double cutoff_sq = impl->cutoff * impl->cutoff * (1.0 - 1e-12);
  for (int i = 1; i <= ntypes; i++)
    for (int j = i; j <= ntypes; j++)
      if (force->pair->cutsq[i][j] < cutoff_sq)
        refuse_removed_pairs("the pairs of atom types " + type_name(i) + " and " +
                                 type_name(j) + " are listed only within " +
                                 shortest(sqrt(force->pair->cutsq[i][j])) +
                                 " A, the pair style's cutoff for them (pair_coeff " +
                                 std::to_string(i) + " " + std::to_string(j) +
                                 " under pair_style hybrid: none, or a sub-style with a shorter "
                                 "cutoff), not the model's " + shortest(impl->cutoff) +
                                 " A",
                             "give fusednequip every type pair (pair_coeff * * fusednequip "
                             "...) and add other terms with pair_style hybrid/overlay");
  if (list->iskip)
    for (int i = 1; i <= ntypes; i++)
      for (int j = i; j <= ntypes; j++)
        if (list->iskip[i] || list->iskip[j] || list->ijskip[i][j])
          refuse_removed_pairs("pair_style hybrid leaves the pairs of atom types " +
                                   type_name(i) + " and " + type_name(j) +
                                   " out of it (pair_coeff " + std::to_string(i) + " " +
                                   std::to_string(j) + " gives them to another sub-style or to "
                                   "none)",
                               "give fusednequip every type pair (pair_coeff * * fusednequip "
                               "...) and add other terms with pair_style hybrid/overlay");
  if (neighbor->nex_type > 0)
    refuse_removed_pairs("neigh_modify exclude type " + std::to_string(neighbor->ex1_type[0]) +
                             " " + std::to_string(neighbor->ex2_type[0]) + " removes them",
                         "remove the exclusion (neigh_modify exclude none)");
  if (neighbor->nex_group > 0)
    refuse_removed_pairs(std::string("neigh_modify exclude group ") +
                             group->names[neighbor->ex1_group[0]] + " " +
                             group->names[neighbor->ex2_group[0]] + " removes them",
                         "remove the exclusion (neigh_modify exclude none)");
  if (neighbor->nex_mol > 0)
    refuse_removed_pairs(std::string("neigh_modify exclude ") +
                             (neighbor->ex_mol_intra[0] ? "molecule/intra " : "molecule/inter ") +
                             group->names[neighbor->ex_mol_group[0]] + " removes them",
                         "remove the exclusion (neigh_modify exclude none)");
  if (neighbor->includegroup)
    refuse_removed_pairs(std::string("neigh_modify include ") +
                             group->names[neighbor->includegroup] +
                             " leaves the atoms outside that group out of it",
                         "use neigh_modify include all");

  // special_bonds: a weight of 0 for both lj and coul drops 1-k neighbours from the lists
  // (a collective step: every rank gets here; a rank without atoms may have no nspecial)
  if (!atom->molecular) return;
  for (int k = 1; k <= 3; k++) {
    if (neighbor->special_flag[k] != 0) continue;
    // an owned atom with 1-k neighbours, as its ID and its first 1-k neighbour's (else 0)
    tagint example[2] = {0, 0};
    for (int i = 0; atom->nspecial && i < atom->nlocal && !example[0]; i++) {
      const int first = k == 1 ? 0 : atom->nspecial[i][k - 2];
      if (atom->nspecial[i][k - 1] > first) {
        example[0] = atom->tag[i];
        example[1] = atom->special[i][first];
      }
    }
    tagint found[2];
    MPI_Allreduce(example, found, 2, MPI_LMP_TAGINT, MPI_MAX, world);
    if (!found[0]) continue;
    const char *level[] = {"", "1-2", "1-3", "1-4"};
    refuse_removed_pairs(std::string("special_bonds with lj and coul weights 0 for ") +
                             level[k] + " neighbours removes them (e.g. atoms " +
                             std::to_string((long) found[0]) + " and " +
                             std::to_string((long) found[1]) + ")",
                         "give those neighbours a weight above 0 for lj or coul (1.0 for "
                         "fusednequip alone; a tiny weight such as 1.0e-20 keeps the pairs "
                         "listed while other pair styles still leave them out)");
  }
}

void PairFusedNequip::refuse_removed_pairs(const std::string &what, const std::string &fix)
{
  error->all(FLERR, "Pair fusednequip needs every pair within the model's cutoff in its "
                    "neighbour list, but " +
                        what + ": a message-passing model would compute a different energy. "
                        "Instead, " + fix);
}

/* ----------------------------------------------------------------------
   stop LAMMPS for a failure this rank found alone (a library call during a step, where the
   other ranks are elsewhere). One rank: error->all, which finalises MPI and exits with status
   1, the screen and log file flushed. Several: error->one, whose MPI_Abort ends the others.
   LAMMPS built with exceptions (scripts/gpu/gpu-lammps.sh's; every LAMMPS since 2023) throws from
   error->one, and its main() calls MPI_Abort, which leaves stdio buffers unwritten: the
   message was lost whenever the screen went to a pipe or a file, and from log.lammps. There,
   it is written and flushed here first (error->one then writes it again, into the buffers
   that MPI_Abort drops, or a second time on a terminal)
------------------------------------------------------------------------- */

void PairFusedNequip::stop_on_this_rank(const std::string &message)
{
  if (comm->nprocs == 1) error->all(FLERR, message);
  if (lammps_config_has_exceptions()) {
    utils::logmesg(lmp, "ERROR on proc " + std::to_string(comm->me) + ": " + message + "\n");
    if (screen) fflush(screen);
    if (logfile) fflush(logfile);
  }
  error->one(FLERR, message);
}

/* ----------------------------------------------------------------------
   stop every rank when `ok` is false on any: error->all where all failed (one message), else
   error->one on the failing ranks (MPI_Abort ends the others)
------------------------------------------------------------------------- */

void PairFusedNequip::fail_unless_all(bool ok, const std::string &message)
{
  int failed = ok ? 0 : 1, failed_total = 0;
  MPI_Allreduce(&failed, &failed_total, 1, MPI_INT, MPI_SUM, world);
  if (failed_total == 0) return;
  if (failed_total == comm->nprocs) error->all(FLERR, message);
  if (failed) stop_on_this_rank(message);
  error->all(FLERR, "Pair fusednequip: set-up failed on " + std::to_string(failed_total) +
                        " other rank(s)");
}

/* ---------------------------------------------------------------------- */

double PairFusedNequip::init_one(int i, int j)
{
  if (setflag[i][j] == 0) error->all(FLERR, "All pair coeffs are not set");
  return impl->cutoff;
}

/* ---------------------------------------------------------------------- */

double PairFusedNequip::memory_usage()
{
  const FusedNequipImpl &d = *impl;
  double bytes = Pair::memory_usage();
  bytes += (double) d.species.capacity() * sizeof(int32_t);
  bytes += (double) (d.edge_recv.capacity() + d.edge_send.capacity()) * sizeof(int64_t);
  bytes += (double) (d.forces.capacity() + d.atom_energies.capacity() +
                     d.atom_virial.capacity()) * sizeof(double);
  return bytes;
}
