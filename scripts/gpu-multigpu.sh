#!/usr/bin/env bash
# The first run on a machine of 2 or more GPUs (issue: runs on 2, 4 and 8 GPUs): builds LAMMPS
# and the library (scripts/gpu-lammps.sh), times 1 rank on 1 GPU against one rank per GPU
# through NCCL at 64,000 and 125,000 Si (bench/bench_lammps.py: the strong scaling of each
# size; 125,000 on 2 GPUs against 64,000 on 1 is the weak scaling), runs the `multigpu` test
# (NCCL without the harness against 1 rank), an NVE run of 64,000 Si x 1,000 steps on all the
# GPUs (bench/bench_drift.py), then comm staged beside NCCL if time is left.
# JSON lines and the test log into $OUT. Needs .lammps-src, .deps, .models carried and the
# usage (device machine): OUT=... scripts/gpu-multigpu.sh   (FNQ_SECONDS: the run's budget, 540)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export FUSEDNEQUIP_MODEL_DIR=${FUSEDNEQUIP_MODEL_DIR:-$PWD/.models}
. scripts/device-deps.sh # the carried libcjson on the library path
# the system's NCCL, which every earlier device build was given through FNQ_CMAKE_ARGS
[ -z "${FNQ_CMAKE_ARGS:-}" ] && [ -f /usr/lib/x86_64-linux-gnu/libnccl.so ] &&
  export FNQ_CMAKE_ARGS="-DFNQ_NCCL_LIBRARY=/usr/lib/x86_64-linux-gnu/libnccl.so"
out=${OUT:-/tmp} t0=$(date +%s)
gpus=$(nvidia-smi -L | wc -l)
threads=$(( $(nproc) / gpus ))
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
bash scripts/gpu-lammps.sh > /tmp/build.log 2>&1 || { tail -20 /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
B="python3 bench/bench_lammps.py --lmp /tmp/fnq-lammps/lmp
   --plugin build-gpu/pair_style/fusednequipplugin.so --device cuda --dtype float32 --steps 20"
$B --cells 20,25 --configs 1x$threads,${gpus}x$threads --comm nccl | tee "$out/lammps-${gpus}gpus.jsonl"
(cd build-gpu && ctest -R '^lammps_multigpu$' --output-on-failure > "$out/multigpu.log" 2>&1
 echo "lammps_multigpu rc $?"; grep -E "rel|bitwise|SKIP|FAIL|passed|Failed" "$out/multigpu.log" | tail -25)
# NVE, 64,000 Si x 1,000 steps on all the GPUs through NCCL: the energy drift (a report in $OUT)
left=$(( ${FNQ_SECONDS:-540} - $(date +%s) + t0 ))
[ "$left" -gt 150 ] && timeout $(( left - 60 )) python3 bench/bench_drift.py --cells 20 \
  --steps 1000 --chunk 1000 --thermo 50 --ranks "$gpus" --comm nccl --lmp /tmp/fnq-lammps/lmp \
  --plugin build-gpu/pair_style/fusednequipplugin.so --results-dir "$out" --fresh | tail -12
left=$(( ${FNQ_SECONDS:-540} - $(date +%s) + t0 ))
[ "$left" -gt 40 ] && timeout "$left" $B --cells 20,25 --configs ${gpus}x$threads --comm staged |
  tee -a "$out/lammps-${gpus}gpus.jsonl"
echo "done in $(( $(date +%s) - t0 )) s"
