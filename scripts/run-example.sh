#!/usr/bin/env bash
# The main job: set up, build, then evaluate energy, forces and stress of a 512-atom diamond
# Si crystal with the Nequix model nequix-mp-1 (found through FUSEDNEQUIP_MODEL_DIR, default
# ../shared/models). Prints the JSON result summary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build/cli/fusednequip eval nequix-mp-1 examples/si-diamond/si-512.xyz > build/si-512.json
python3 - <<'PY'
import json
r = json.load(open("build/si-512.json"))
n = r["natoms"]
print(f"{n} atoms, {r['nedges']} edges, {r['dtype']} on {r['device']}")
print(f"energy {r['energy']:.6f} eV ({r['energy'] / n:.6f} eV/atom)")
print("max |force| %.3e eV/A" % max(abs(x) for f in r["forces"] for x in f))
print("stress (eV/A^3, xx yy zz yz xz xy):", " ".join(f"{s:.6f}" for s in r["stress"]))
print("full result: build/si-512.json")
PY
