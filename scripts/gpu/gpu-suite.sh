#!/usr/bin/env bash
# On a GPU machine: every GPU test but the multi-GPU ones, on a build-gpu/ carried from the CPU
# machine (scripts/gpu/carry-build.sh) or built here (gpu-lammps.sh). Builds only LAMMPS
# (/tmp/fnq-lammps, ~70 s) when it is missing. Needs .lammps-src, .deps and .models/nequix with
# nequix-mp-1, -omat-1 and -oam-1 (the tests find them through FUSEDNEQUIP_MODEL_DIR=.models).
# $FNQ_SUITE_SKIP: a ctest -E pattern left out besides multigpu (e.g. gpu_cycles, ~150 s).
# The log into $OUT (default /tmp): suite.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp}
. scripts/gpu/device-deps.sh
if [ ! -x /tmp/fnq-lammps/lmp ]; then
  cmake -S .lammps-src/cmake -B /tmp/fnq-lammps -DCMAKE_BUILD_TYPE=Release -DBUILD_MPI=on \
    -DPKG_PLUGIN=on -DPKG_MANYBODY=on -DPKG_MOLECULE=on -DBUILD_SHARED_LIBS=on \
    -DLAMMPS_EXCEPTIONS=on -DWITH_JPEG=off -DWITH_PNG=off -DWITH_GZIP=off -DWITH_FFMPEG=off >/dev/null
  cmake --build /tmp/fnq-lammps -j "$(nproc)" > /tmp/fnq-lammps.log 2>&1 ||
    { echo "gpu-suite: LAMMPS did not build (/tmp/fnq-lammps.log)"; exit 1; }
fi
export NCCL_NVLS_ENABLE=0 FUSEDNEQUIP_MODEL_DIR=$PWD/.models
skip="multigpu${FNQ_SUITE_SKIP:+|$FNQ_SUITE_SKIP}"
ctest --test-dir build-gpu -L gpu -E "$skip" -j 4 --output-on-failure > "$out/suite.log" 2>&1
rc=$?
grep -E "Test +#|tests passed|Total Test" "$out/suite.log"
exit $rc
