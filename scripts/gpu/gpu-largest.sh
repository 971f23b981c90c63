#!/usr/bin/env bash
# The largest diamond Si that runs on all the node's GPUs, and the error one size above (issue:
# runs on 2, 4 and 8 GPUs; as run by hand on 4 H200s, bench/results/2026-11-26-h200x4-largest.txt):
# LAMMPS in.si-nvt, float32, one rank per GPU, comm nccl, 3 steps of N^3 cells for each N given.
# Each size prints LAMMPS' loop time, the library's memory line (layout, bytes per atom), its
# step timing on rank 0, and, for a size that does not fit, the out-of-memory message. Each run
# is capped (scripts/gpu/gpu-multigpu-setup.sh: FNQ_SECONDS, FNQ_RUN_SECONDS).
# Default sizes: 4,096,000 / 6,229,504 / 8,000,000 atoms (80, 92, 100) on up to 4 GPUs;
# 8,000,000 / 12,487,168 / 16,003,008 (100, 116, 126) on 8, where the issue asks >= 8 M.
# Needs .lammps-src, .deps and .models (with nequix/) carried.
#   usage (device machine): OUT=... scripts/gpu/gpu-largest.sh [N ...]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. scripts/gpu/gpu-multigpu-setup.sh # environment, build, $gpus, $threads, $out, capped
sizes=("$@")
if [ ${#sizes[@]} -eq 0 ]; then
  if [ "$gpus" -ge 8 ]; then sizes=(100 116 126); else sizes=(80 92 100); fi
fi
deck=/tmp/largest-deck
mkdir -p $deck
printf "plugin load %s\ninclude %s\n" "$PWD/build-gpu/pair_style/fusednequipplugin.so" \
  "$PWD/examples/si-diamond/in.si-nvt" > $deck/in.run
R=$out/largest-${gpus}gpus.txt
echo "# largest Si on $gpus x $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1), $(date +%F): in.si-nvt, float32, $gpus ranks, comm nccl, 3 steps, FNQ_TIMING=1 FNQ_VERBOSE=1" > "$R"
for n in "${sizes[@]}"; do
  log=$out/largest-$n.log
  (cd $deck && capped env OMP_NUM_THREADS="$threads" FNQ_TIMING=1 FNQ_VERBOSE=1 \
    mpirun -n "$gpus" --bind-to none /tmp/fnq-lammps/lmp -in in.run -log none -var steps 3 \
    -var cx "$n" -var cy "$n" -var cz "$n" -var device cuda -var dtype float32 -var comm nccl \
    > "$log" 2>&1)
  rc=$?
  { echo; echo "## cells $n^3 (rc $rc)"
    grep -E "Loop time|ERROR|cuda memory|layout does not fit|timing \(rank 0" "$log" | awk '!seen[$0]++' | head -8
  } | tee -a "$R"
done
echo "done in $(( $(date +%s) - t0 )) s"
