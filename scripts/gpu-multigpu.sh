#!/usr/bin/env bash
# The scaling runs on a machine of 2 or more GPUs (issue: runs on 2, 4 and 8 GPUs), as made on
# 4 H200s on 2026-11-26 (docs/multi-gpu.md): builds LAMMPS and the library
# (scripts/gpu-lammps.sh), runs the `multigpu` test (NCCL without the harness against 1 rank),
# then bench/bench_lammps.py with one rank per GPU through NCCL: weak scaling at 64,000 and
# 256,000 atoms per GPU (20^3 or 40x40x20 cells per GPU; LAMMPS splits the box evenly), strong
# scaling of 32,000 and 256,000 atoms, `comm staged` beside the 64,000-per-GPU rows, `comm ipc`
# and NCCL_MIN_P2P_NCHANNELS=32 on all the GPUs (on 2 H200s: no change), and an NVE
# run of 512,000 atoms x 1,000 steps on all the GPUs through 3 restarts (bench/bench_drift.py)
# if time is left. JSON lines, the test log and the drift report into $OUT. Each run is capped
# (FNQ_RUN_SECONDS, 150), so one that hangs cannot take the rest of the budget.
# Needs .lammps-src, .deps and .models (with nequix/) carried.
#   usage (device machine): OUT=... scripts/gpu-multigpu.sh   (FNQ_SECONDS: the budget, 540)
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
threads=$(( $(nproc) / gpus )); [ "$threads" -gt 16 ] && threads=16
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
bash scripts/gpu-lammps.sh > /tmp/build.log 2>&1 || { tail -20 /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
# capped: run "$@" if 40 s are left, for at most FNQ_RUN_SECONDS or what is left
capped() {
  local left=$(( ${FNQ_SECONDS:-540} - $(date +%s) + t0 )) cap=${FNQ_RUN_SECONDS:-150}
  [ "$left" -lt 40 ] && { echo "skipped (time): $*"; return 1; }
  timeout $(( left < cap ? left : cap )) "$@"
}
(cd build-gpu && capped ctest -R '^lammps_multigpu$' -V > "$out/multigpu.log" 2>&1
 echo "lammps_multigpu rc $?"; grep -E "rel|bitwise|SKIP|FAIL|passed|Failed" "$out/multigpu.log" | tail -25)
B="python3 bench/bench_lammps.py --lmp /tmp/fnq-lammps/lmp
   --plugin build-gpu/pair_style/fusednequipplugin.so --device cuda --dtype float32 --steps 20"
R=$out/lammps-${gpus}gpus.jsonl
declare -A box64=([1]=20 [2]=40x20x20 [4]=40x40x20 [8]=40x40x40)    # 64,000 atoms per GPU
declare -A box256=([1]=40x40x20 [2]=40x40x40 [4]=80x40x40 [8]=80x80x40)
for n in 1 2 4 8; do
  [ "$n" -gt "$gpus" ] && break
  comm=nccl; [ "$n" -gt 1 ] && comm=nccl,staged
  capped $B --cells "${box64[$n]}" --configs "${n}x$threads" --comm $comm | tee -a "$R"
  capped $B --cells "${box256[$n]}" --configs "${n}x$threads" --comm nccl | tee -a "$R"
  [ "$n" -gt 1 ] && capped $B --cells 20x20x10,40x40x20 --configs "${n}x$threads" --comm nccl | tee -a "$R"
done
capped $B --cells 20x20x10 --configs "1x$threads" | tee -a "$R"
# the exchange's two levers on all the GPUs: CUDA IPC copies across GPUs, and more NCCL channels
# per peer (on 2 H200s both within 3 % of plain NCCL: docs/multi-gpu.md)
all=${box64[$gpus]:-40x40x20}
capped $B --cells "$all" --configs "${gpus}x$threads" --comm ipc | tee -a "$R"
capped env NCCL_MIN_P2P_NCHANNELS=32 $B --cells "$all" --configs "${gpus}x$threads" --comm nccl |
  sed 's/"comm": "nccl"/"comm": "nccl", "nccl_min_p2p_nchannels": 32/' | tee -a "$R"
left=$(( ${FNQ_SECONDS:-540} - $(date +%s) + t0 ))
[ "$left" -gt 150 ] && timeout $(( left - 30 )) python3 bench/bench_drift.py --cells 40 \
  --steps 1000 --chunk 250 --thermo 50 --ranks "$gpus" --threads "$threads" --comm nccl \
  --lmp /tmp/fnq-lammps/lmp --plugin build-gpu/pair_style/fusednequipplugin.so \
  --results-dir "$out" --fresh | tail -12
echo "done in $(( $(date +%s) - t0 )) s"
