#!/usr/bin/env bash
# On a GPU machine without LAMMPS (the lent ones): build LAMMPS with the PLUGIN package from the
# carried .lammps-src/ (scripts/gpu/lammps-trim-source.sh) into /tmp/fnq-lammps (about 30 s on 16
# cores), then fusednequip with the CUDA backend and the pair style against those headers into
# build-gpu/, its LAMMPS tests running decks through that lmp with `plugin load`.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -f .lammps-src/src/pair.h ] || { echo "gpu-lammps: no .lammps-src (scripts/gpu/lammps-trim-source.sh)" >&2; exit 1; }
lmp_build=/tmp/fnq-lammps
if [ ! -x "$lmp_build/lmp" ]; then
  cmake -S .lammps-src/cmake -B "$lmp_build" -DCMAKE_BUILD_TYPE=Release -DBUILD_MPI=on \
    -DPKG_PLUGIN=on -DPKG_MANYBODY=on -DPKG_MOLECULE=on -DBUILD_SHARED_LIBS=on \
    -DLAMMPS_EXCEPTIONS=on -DWITH_JPEG=off -DWITH_PNG=off -DWITH_GZIP=off -DWITH_FFMPEG=off >/dev/null
  cmake --build "$lmp_build" -j "$(nproc)" >/dev/null
fi
FNQ_CMAKE_ARGS="-DFNQ_LAMMPS_HEADERS=$PWD/.lammps-src/src -DFNQ_LAMMPS_LMP=$lmp_build/lmp ${FNQ_CMAKE_ARGS:-}" \
  bash scripts/gpu/gpu-build.sh
