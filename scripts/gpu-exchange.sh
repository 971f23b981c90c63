#!/usr/bin/env bash
# Where the exchange's time goes on a machine of 2 or more GPUs (issue: runs on 2, 4 and 8 GPUs;
# docs/multi-gpu.md "Where the exchange time goes"): builds LAMMPS and the library
# (scripts/gpu-lammps.sh), times the exchange alone (bench/bench_halo.c: no model, every
# exchange started together on idle streams) through nccl, ipc and staged, and nccl with
# NCCL_MIN_P2P_NCHANNELS=32, at 1,000 to 30,000 rows of 704 float32 values per peer; then the
# same levers in LAMMPS at 64,000 atoms per GPU beside each GPU alone, and an NVE run of 64,000 atoms x
# 1,000 steps on all the GPUs through one restart (bench/bench_drift.py). Each run is capped.
# Needs .lammps-src, .deps and .models (with nequix/) carried.
#   usage (device machine): OUT=... scripts/gpu-exchange.sh   (FNQ_SECONDS: the budget, 540)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export FUSEDNEQUIP_MODEL_DIR=${FUSEDNEQUIP_MODEL_DIR:-$PWD/.models}
. scripts/device-deps.sh # the carried libcjson on the library path
[ -z "${FNQ_CMAKE_ARGS:-}" ] && [ -f /usr/lib/x86_64-linux-gnu/libnccl.so ] &&
  export FNQ_CMAKE_ARGS="-DFNQ_NCCL_LIBRARY=/usr/lib/x86_64-linux-gnu/libnccl.so"
out=${OUT:-/tmp} t0=$(date +%s)
gpus=$(nvidia-smi -L | wc -l)
threads=$(( $(nproc) / gpus )); [ "$threads" -gt 16 ] && threads=16
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
nvidia-smi topo -m | head -$(( gpus + 1 ))
bash scripts/gpu-lammps.sh > /tmp/build.log 2>&1 || { tail -20 /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
capped() { # run "$@" if 40 s are left, for at most FNQ_RUN_SECONDS or what is left
  local left=$(( ${FNQ_SECONDS:-540} - $(date +%s) + t0 )) cap=${FNQ_RUN_SECONDS:-120}
  [ "$left" -lt 40 ] && { echo "skipped (time): $*"; return 1; }
  timeout $(( left < cap ? left : cap )) "$@"
}
H="mpirun -n $gpus --bind-to none build-gpu/bench/bench_halo"
for rows in 1000 3000 10000 30000; do
  for t in nccl ipc staged; do capped $H --transport $t --rows $rows; done
  capped env NCCL_MIN_P2P_NCHANNELS=32 $H --transport nccl --rows $rows
done | tee "$out/halo-${gpus}gpus.jsonl"
B="python3 bench/bench_lammps.py --lmp /tmp/fnq-lammps/lmp
   --plugin build-gpu/pair_style/fusednequipplugin.so --device cuda --dtype float32 --steps 20"
declare -A box64=([2]=40x20x20 [4]=40x40x20 [8]=40x40x40)
R=$out/lammps-levers-${gpus}gpus.jsonl
# 1 GPU at a time: a slower GPU makes its peers wait at every exchange
for ((g = 0; g < gpus; g++)); do
  capped env CUDA_VISIBLE_DEVICES=$g $B --cells 20 --configs "1x$threads" |
    sed "s/\"gpus\": 1,/\"gpus\": 1, \"cuda_visible_devices\": $g,/" | tee -a "$R"
done
capped $B --cells "${box64[$gpus]}" --configs "${gpus}x$threads" --comm nccl,ipc | tee -a "$R"
capped env NCCL_MIN_P2P_NCHANNELS=32 $B --cells "${box64[$gpus]}" --configs "${gpus}x$threads" \
  --comm nccl | sed 's/"comm": "nccl"/"comm": "nccl", "nccl_min_p2p_nchannels": 32/' | tee -a "$R"
left=$(( ${FNQ_SECONDS:-540} - $(date +%s) + t0 ))
[ "$left" -gt 100 ] && timeout $(( left - 20 )) python3 bench/bench_drift.py --cells 20 \
  --steps 1000 --chunk 500 --thermo 50 --ranks "$gpus" --threads "$threads" --comm nccl \
  --lmp /tmp/fnq-lammps/lmp --plugin build-gpu/pair_style/fusednequipplugin.so \
  --results-dir "$out" --fresh | tail -12
echo "done in $(( $(date +%s) - t0 )) s"
