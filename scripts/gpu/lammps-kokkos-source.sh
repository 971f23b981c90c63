#!/usr/bin/env bash
# Make .lammps-kokkos-src/: the part of a LAMMPS source tree needed to build an lmp with the
# KOKKOS package (CUDA on a GPU machine, OpenMP on a CPU one), PLUGIN, MANYBODY and MOLECULE,
# with the Kokkos library LAMMPS bundles in lib/kokkos (Debian's source drops it, so it comes
# from a Kokkos source tree of the version that LAMMPS asks for, without its tests): about
# 25 MB, small enough to carry to a GPU machine without network, where gpu-lammps-kokkos.sh
# builds it. Never committed (.gitignore).
#   scripts/gpu/lammps-kokkos-source.sh LAMMPS_SOURCE_TARBALL KOKKOS_SOURCE_DIR_OR_TARBALL
# e.g. Debian 13's lammps_20250204+dfsg.1.orig.tar.xz (LAMMPS 4 Feb 2025, `apt-get source
# --download-only lammps` from trixie) and Kokkos 4.5.01 (`git archive 4.5.01` of kokkos/kokkos).
set -euo pipefail
lammps=$(realpath "${1:?usage: lammps-kokkos-source.sh LAMMPS_TARBALL KOKKOS_DIR_OR_TARBALL}")
kokkos=$(realpath "${2:?usage: lammps-kokkos-source.sh LAMMPS_TARBALL KOKKOS_DIR_OR_TARBALL}")
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xf "$lammps" -C "$work"
top=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
want=$(sed -nE 's/.*find_package\(Kokkos ([0-9.]+) .*/\1/p' "$top/cmake/Modules/Packages/KOKKOS.cmake")
out=.lammps-kokkos-src
rm -rf "$out"
mkdir -p "$out/src" "$out/lib/kokkos"
cp -r "$top/cmake" "$out/"
find "$top/src" -maxdepth 1 -type f -exec cp {} "$out/src/" \;
for d in fmt PLUGIN MANYBODY MOLECULE KOKKOS; do cp -r "$top/src/$d" "$out/src/"; done
if [ -d "$kokkos" ]; then
  cp -r "$kokkos"/. "$out/lib/kokkos/"
else
  tar -xf "$kokkos" -C "$out/lib/kokkos" --strip-components=1
fi
# tests and benchmarks are added only when Kokkos is asked to build them; example/ and
# benchmarks/ themselves are always added
rm -rf "$out"/lib/kokkos/{core/unit_test,core/perf_test,containers/unit_tests,containers/performance_tests,algorithms/unit_tests,.git}
version() { sed -nE "s/^set\(Kokkos_VERSION_$1 ([0-9]+)\)/\1/p" "$out/lib/kokkos/CMakeLists.txt"; }
echo "lammps-kokkos-source: $(basename "$top") with Kokkos $(version MAJOR).$(version MINOR).$(version PATCH) (LAMMPS asks for $want)"
du -sh "$out"
