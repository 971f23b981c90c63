/* ----------------------------------------------------------------------
   Entry points that put pair_style fusednequip into a running LAMMPS:
     lammpsplugin_init     the standard plugin ABI: `plugin load fusednequipplugin.so`, or
                           automatic loading from $LAMMPS_PLUGIN_PATH (LAMMPS with the PLUGIN
                           package, e.g. current releases built from source)
     fusednequip_register  adds the style to a LAMMPS instance directly, for LAMMPS builds
                           without the PLUGIN package (Debian 12's): called by the driver
                           lmp_fusednequip, or from an input deck through the `python` command
                           (load-fusednequip.lmp)
------------------------------------------------------------------------- */

#include "force.h"
#include "lammps.h"
#include "lammpsplugin.h"
#include "pair_fusednequip.h"
#ifdef FNQ_LAMMPS_KOKKOS
#include "pair_fusednequip_kokkos.h"
#endif
#include "version.h"

#include <cstdlib>
#include <cstring>

using namespace LAMMPS_NS;

#define FNQ_EXPORT extern "C" __attribute__((visibility("default")))

static Pair *fusednequip_creator(LAMMPS *lmp)
{
  return new PairFusedNequip(lmp);
}

#ifdef FNQ_LAMMPS_KOKKOS
// built against a KOKKOS LAMMPS: also the style `-sf kk` picks (pair_fusednequip_kokkos.h)
static Pair *fusednequip_kokkos_creator(LAMMPS *lmp)
{
  return new PairFusedNequipKokkos(lmp);
}
static const char *const kokkos_names[] = {"fusednequip/kk", "fusednequip/kk/device"};
#endif

/* ---------------------------------------------------------------------- */

FNQ_EXPORT void lammpsplugin_init(void *lmp, void *handle, void *regfunc)
{
  lammpsplugin_t plugin;
  plugin.version = LAMMPS_VERSION;    // the LAMMPS these headers came from; checked on load
  plugin.style = "pair";
  plugin.name = "fusednequip";
  plugin.info = "NequIP-family potentials (Nequix .nqx) evaluated by libfusednequip";
  plugin.author = "fusednequip developers";
  plugin.creator.v1 = (lammpsplugin_factory1 *) &fusednequip_creator;
  plugin.handle = handle;
  (*(lammpsplugin_regfunc) regfunc)(&plugin, lmp);
#ifdef FNQ_LAMMPS_KOKKOS
  // FNQ_NO_KOKKOS_STYLE=1: `-sf kk` runs the plain style (to measure what /kk saves)
  const char *plain_only = getenv("FNQ_NO_KOKKOS_STYLE");
  if (plain_only && strcmp(plain_only, "1") == 0) return;
  for (const char *name : kokkos_names) {
    plugin.name = name;
    plugin.info = "pair_style fusednequip on a KOKKOS LAMMPS' GPU arrays";
    plugin.creator.v1 = (lammpsplugin_factory1 *) &fusednequip_kokkos_creator;
    (*(lammpsplugin_regfunc) regfunc)(&plugin, lmp);
  }
#endif
}

/* ----------------------------------------------------------------------
   returns 0; the registration lasts until the next `clear` (which rebuilds the style map)
------------------------------------------------------------------------- */

FNQ_EXPORT int fusednequip_register(void *lmp)
{
  (*static_cast<LAMMPS *>(lmp)->force->pair_map)["fusednequip"] = &fusednequip_creator;
#ifdef FNQ_LAMMPS_KOKKOS
  for (const char *name : kokkos_names)
    (*static_cast<LAMMPS *>(lmp)->force->pair_map)[name] = &fusednequip_kokkos_creator;
#endif
  return 0;
}
