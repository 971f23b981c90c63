#!/usr/bin/env bash
# LAMMPS with KOKKOS (CUDA for sm_90 by default; FNQ_KOKKOS_BACKEND=openmp builds the OpenMP
# one, for a machine without a GPU), PLUGIN, MANYBODY, MOLECULE and MPI, from the carried
# .lammps-kokkos-src/ (scripts/gpu/lammps-kokkos-source.sh) into /tmp/fnq-lammps-kokkos-<backend>;
# then fusednequip with its pair style against those headers into build-kokkos/ (with the CUDA
# backend where nvcc is, and then pair_style fusednequip/kk too), its LAMMPS tests, the kokkos
# label's among them, running decks through that lmp with `plugin load`. Prints the lmp's path
# last.
# FNQ_KOKKOS_ARCH: Kokkos' architecture option for CUDA (default Kokkos_ARCH_HOPPER90);
# FNQ_KOKKOS_MOLECULE=off leaves MOLECULE out (a fifth fewer Kokkos files; the kokkos test and
# the benchmarks use none of it); FNQ_KOKKOS_LMP_ONLY=1 stops after the lmp (the style carried).
set -euo pipefail
cd "$(dirname "$0")/../.."
src=.lammps-kokkos-src
[ -f $src/src/KOKKOS/kokkos.h ] || { echo "gpu-lammps-kokkos: no $src (scripts/gpu/lammps-kokkos-source.sh)" >&2; exit 1; }
backend=${FNQ_KOKKOS_BACKEND:-cuda}
lmp_build=/tmp/fnq-lammps-kokkos-$backend
if [ "$backend" = cuda ]; then
  # nvcc_wrapper's own default architecture (sm_70) is one CUDA 13 no longer has, and the
  # Kokkos bundled with LAMMPS 4 Feb 2025 calls three runtime functions in their CUDA 12 form:
  # kokkos-cuda13.h gives those back (force-included; nothing is defined under CUDA 12)
  kokkos=(-DKokkos_ENABLE_CUDA=on -DKokkos_ENABLE_OPENMP=on "-D${FNQ_KOKKOS_ARCH:-Kokkos_ARCH_HOPPER90}=on"
    "-DCMAKE_CXX_COMPILER=$PWD/$src/lib/kokkos/bin/nvcc_wrapper"
    "-DCMAKE_CXX_FLAGS=-arch=sm_${FNQ_CUDA_ARCH:-90} -include $PWD/scripts/gpu/kokkos-cuda13.h")
else
  kokkos=(-DKokkos_ENABLE_OPENMP=on -DKokkos_ENABLE_SERIAL=on)
fi
if [ ! -x "$lmp_build/lmp" ]; then
  cmake -S $src/cmake -B "$lmp_build" -DCMAKE_BUILD_TYPE=Release -DBUILD_MPI=on -DBUILD_OMP=on \
    -DPKG_KOKKOS=on "${kokkos[@]}" -DPKG_PLUGIN=on -DPKG_MANYBODY=on -DPKG_MOLECULE="${FNQ_KOKKOS_MOLECULE:-on}" \
    -DBUILD_SHARED_LIBS=on -DLAMMPS_EXCEPTIONS=on -DWITH_JPEG=off -DWITH_PNG=off \
    -DWITH_GZIP=off -DWITH_FFMPEG=off >/dev/null
  cmake --build "$lmp_build" -j "$(nproc)" >/dev/null
fi
[ -n "${FNQ_KOKKOS_LMP_ONLY:-}" ] && { echo "$lmp_build/lmp"; exit 0; }
. scripts/gpu/device-deps.sh # extra: CMake arguments for the carried libcjson
# the plugin only: an installed LAMMPS (Debian's) is another version, and no driver is needed
# with CUDA also pair_style fusednequip/kk, compiled against this LAMMPS' Kokkos configuration
kk_style=()
[ "$backend" = cuda ] && kk_style=("-DFNQ_LAMMPS_KOKKOS_BUILD=$lmp_build"
  "-DFNQ_KOKKOS_CUDA_FLAGS=-include $PWD/scripts/gpu/kokkos-cuda13.h")
cmake -S . -B build-kokkos -DCMAKE_BUILD_TYPE=Release -DFNQ_LAMMPS_HEADERS="$PWD/$src/src" "${kk_style[@]}" \
  -DFNQ_LAMMPS_LMP="$lmp_build/lmp" -DCMAKE_DISABLE_FIND_PACKAGE_LAMMPS=ON -DCMAKE_CUDA_ARCHITECTURES="${FNQ_CUDA_ARCH:-90}" "${extra[@]}" \
  ${FNQ_CMAKE_ARGS:-} >/dev/null
cmake --build build-kokkos -j "$(nproc)" >/dev/null
echo "$lmp_build/lmp"
