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
#include "version.h"

using namespace LAMMPS_NS;

#define FNQ_EXPORT extern "C" __attribute__((visibility("default")))

static Pair *fusednequip_creator(LAMMPS *lmp)
{
  return new PairFusedNequip(lmp);
}

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
}

/* ----------------------------------------------------------------------
   returns 0; the registration lasts until the next `clear` (which rebuilds the style map)
------------------------------------------------------------------------- */

FNQ_EXPORT int fusednequip_register(void *lmp)
{
  (*static_cast<LAMMPS *>(lmp)->force->pair_map)["fusednequip"] = &fusednequip_creator;
  return 0;
}
