#!/usr/bin/env bash
# Where the exchange's time goes on a machine of 2 or more GPUs (issue: runs on 2, 4 and 8 GPUs;
# docs/multi-gpu.md "The exchange alone" and "What the ghosts cost"): builds LAMMPS and the
# library (scripts/gpu/gpu-lammps.sh), times the exchange alone (bench/bench_halo.c: no model, every
# exchange started together on idle streams) through nccl, ipc and staged at 1,000 to 30,000
# rows of 704 float32 values per peer; then LAMMPS at 64,000 atoms per GPU: 1 GPU (its periodic
# images folded, and exchanged as ghosts: FNQ_EXCHANGE_ONE_RANK=1) beside all the GPUs through
# nccl and ipc, and through nccl with every ghost exchanged (FNQ_FOLD_OWN_IMAGES=0) instead of
# the own images folded. Each run is capped (scripts/gpu/gpu-multigpu-setup.sh); the long NVE run
# is scripts/gpu/gpu-nve-long.sh's.
# (NCCL_MIN_P2P_NCHANNELS=32 was measured here on 2 H200s and changed nothing.)
# Needs .lammps-src, .deps and .models (with nequix/) carried.
#   usage (device machine): OUT=... scripts/gpu/gpu-exchange.sh   (FNQ_SECONDS: the budget, 540)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. scripts/gpu/gpu-multigpu-setup.sh # environment, build, $gpus, $threads, $out, capped
H="mpirun -n $gpus --bind-to none build-gpu/bench/bench_halo"
for rows in 1000 3000 10000 30000; do
  for t in nccl ipc staged; do capped $H --transport $t --rows $rows; done
done | tee "$out/halo-${gpus}gpus.jsonl"
B="python3 bench/bench_lammps.py --lmp /tmp/fnq-lammps/lmp
   --plugin build-gpu/pair_style/fusednequipplugin.so --device cuda --dtype float32 --steps 20"
declare -A box64=([2]=40x20x20 [4]=40x40x20 [8]=40x40x40)
R=$out/lammps-levers-${gpus}gpus.jsonl
capped $B --cells 20 --configs "1x$threads" | tee -a "$R"
# the same GPU with its periodic images exchanged as ghosts: the ghosts' work, with no waits
capped env FNQ_EXCHANGE_ONE_RANK=1 $B --cells 20 --configs "1x$threads" --comm nccl | tee -a "$R"
capped $B --cells "${box64[$gpus]}" --configs "${gpus}x$threads" --comm nccl,ipc | tee -a "$R"
capped env FNQ_FOLD_OWN_IMAGES=0 $B --cells "${box64[$gpus]}" --configs "${gpus}x$threads" \
  --comm nccl | tee -a "$R"
echo "done in $(( $(date +%s) - t0 )) s"
