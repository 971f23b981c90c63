#!/usr/bin/env bash
# The main job: set up (Debian's LAMMPS and Open MPI included), build, then run NVT molecular
# dynamics of a 512-atom diamond Si crystal in LAMMPS with pair_style fusednequip and the
# Nequix model nequix-mp-1 (examples/si-diamond/in.si-nvt: 50 steps of 1 fs at 600 K; the
# model is found through FUSEDNEQUIP_MODEL_DIR, default ../shared/models). LAMMPS prints the
# thermo output; the log is build/si-nvt.log. Extra arguments go to LAMMPS, e.g.
#   scripts/run-example.sh -var steps 1000 -var temperature 900
# It builds only LAMMPS' driver and what it links, and on a machine without a GPU (nvidia-smi
# finds none) no CUDA kernels: FNQ_ENABLE_CUDA=ON builds them anyway.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${FNQ_ENABLE_CUDA:-}" ] && ! nvidia-smi -L >/dev/null 2>&1; then
  export FNQ_ENABLE_CUDA=OFF
  echo "run-example: no GPU found: building the CPU backend only (FNQ_ENABLE_CUDA=ON builds the CUDA kernels too)"
fi
echo "run-example: set up (Debian packages if missing) and build (about a minute on 2 cores), then 50 MD steps"
FNQ_TARGETS=lmp_fusednequip scripts/setup.sh
cd examples/si-diamond
# LAMMPS runs one OpenMP thread per rank unless told otherwise; the library's loops use them all
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(nproc)}"
echo "run-example: LAMMPS (~0.7 s per step on 2 cores); with the defaults a good run starts at" \
  "PotEng -2773.5191 eV (README.md)"
exec ../../build/pair_style/lmp_fusednequip -in in.si-nvt -log ../../build/si-nvt.log "$@"
