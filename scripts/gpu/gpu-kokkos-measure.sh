#!/usr/bin/env bash
# On a GPU machine: the style in a LAMMPS built with KOKKOS for CUDA, as GPU users run it
# (issue 49). The lmp comes from gpu-lammps-kokkos.sh, built here, or from a tarball of a
# build made on the CPU machine (build-lmp-kokkos/lmp-kokkos-cuda.tar.xz, unpacked into /tmp);
# the style from build-kokkos/ (built here by gpu-lammps-kokkos.sh, or carried: configured for
# /tmp/fnq-lammps-kokkos-cuda/lmp). Runs the kokkos test (`-k on g 1`, and on a machine of
# several GPUs again with one GPU per rank), then bench/bench_lammps.py, one rank, diamond Si
# cells per edge $CELLS (default 10,20: 8,000 and 64,000 atoms) with and without
# `-k on g 1 -sf kk`, the same lmp and plugin. Logs and JSON lines into $OUT (default /tmp).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export FUSEDNEQUIP_MODEL_DIR=${FUSEDNEQUIP_MODEL_DIR:-$PWD/.models}
. scripts/gpu/device-deps.sh
lmp=/tmp/fnq-lammps-kokkos-cuda/lmp
if [ ! -x $lmp ] && [ -f build-lmp-kokkos/lmp-kokkos-cuda.tar.xz ]; then
  tar -xJf build-lmp-kokkos/lmp-kokkos-cuda.tar.xz -C /tmp
fi
[ -x $lmp ] || lmp=$(bash scripts/gpu/gpu-lammps-kokkos.sh | tail -1)
gpus=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/kokkos.txt"
$lmp -h | grep -E "KOKKOS package API|Large-scale" | tee -a "$out/kokkos.txt"
for g in 1 $([ "$gpus" -ge 2 ] && echo "$gpus"); do
  FNQ_KOKKOS_GPUS=$g timeout "${FNQ_TEST_SECONDS:-300}" ctest --test-dir build-kokkos \
    -R '^lammps_kokkos$' -V > "$out/kokkos-test-g$g.log" 2>&1
  echo "lammps_kokkos with -k on g $g: rc $?" | tee -a "$out/kokkos.txt"
  grep -E "rank|NVE|Kokkos backends|FAIL|SKIP" "$out/kokkos-test-g$g.log" | sed 's/^[0-9]*: //' |
    tee -a "$out/kokkos.txt"
done
B="python3 bench/bench_lammps.py --lmp $lmp --plugin build-kokkos/pair_style/fusednequipplugin.so
   --device cuda --dtype float32 --steps ${STEPS:-50} --configs 1x16"
cells=${CELLS:-10,20}
for c in ${cells//,/ }; do
  $B --cells "$c" | tee -a "$out/kokkos-bench.jsonl"
  $B --cells "$c" --lmp-args="-k on g 1 -sf kk" | tee -a "$out/kokkos-bench.jsonl"
done
