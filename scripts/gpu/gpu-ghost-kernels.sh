#!/usr/bin/env bash
# What a domain's ghosts cost, kernel by kernel, on one GPU (issue: runs on 2, 4 and 8 GPUs;
# docs/multi-gpu.md "What the ghosts cost"). LAMMPS at 20^3 cells (64,000 atoms: a weak-scaling
# domain), 2 MD steps (3 evaluations) under ncu, once with the periodic images folded (one
# rank's default) and once exchanged as ghosts (FNQ_EXCHANGE_ONE_RANK=1, comm nccl: the same
# 30,231 ghosts as a domain of the 4-GPU box, and no peer to wait for); bench/ncu_kernels.py
# puts the two side by side. Then the pack and unpack rates of the exchange alone
# (bench/bench_halo, 2 ranks sharing the GPU through ipc).
# Needs .lammps-src, .deps and .models (with nequix/) carried.
#   usage (device machine): OUT=... scripts/gpu/gpu-ghost-kernels.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export FUSEDNEQUIP_MODEL_DIR=${FUSEDNEQUIP_MODEL_DIR:-$PWD/.models} OMP_NUM_THREADS=${OMP_NUM_THREADS:-8}
. scripts/gpu/device-deps.sh
[ -z "${FNQ_CMAKE_ARGS:-}" ] && [ -f /usr/lib/x86_64-linux-gnu/libnccl.so ] &&
  export FNQ_CMAKE_ARGS="-DFNQ_NCCL_LIBRARY=/usr/lib/x86_64-linux-gnu/libnccl.so"
out=${OUT:-/tmp} t0=$(date +%s)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1
bash scripts/gpu/gpu-lammps.sh > /tmp/build.log 2>&1 || { tail -20 /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
deck=/tmp/ghost-deck
mkdir -p $deck
printf "plugin load %s\ninclude %s\n" "$PWD/build-gpu/pair_style/fusednequipplugin.so" \
  "$PWD/examples/si-diamond/in.si-nvt" > $deck/in.run
profile() { # label comm [VAR=value ...]
  local label=$1 comm=$2
  shift 2
  (cd $deck && env "$@" timeout 240 ncu --clock-control none --metrics gpu__time_duration.sum \
    --csv --log-file "$out/ncu-$label.csv" /tmp/fnq-lammps/lmp -in in.run -log none \
    -var steps 2 -var device cuda -var dtype float32 -var cells 20 -var comm "$comm" \
    > "/tmp/lmp-$label.log" 2>&1)
  echo "$label: rc $? at $(( $(date +%s) - t0 )) s; $(grep -m1 'ghost exchange' /tmp/lmp-$label.log)"
}
profile folded auto
profile exchanged nccl FNQ_EXCHANGE_ONE_RANK=1
python3 bench/ncu_kernels.py "$out/ncu-folded.csv" "$out/ncu-exchanged.csv" --evals 3 \
  --labels folded,exchanged | tee "$out/ghost-kernels.txt"
for rows in 10000 30000; do
  timeout 60 mpirun -n 2 --bind-to none build-gpu/bench/bench_halo --transport ipc --rows $rows
done | tee "$out/halo-1gpu.jsonl"
echo "done in $(( $(date +%s) - t0 )) s"
