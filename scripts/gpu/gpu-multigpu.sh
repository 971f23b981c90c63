#!/usr/bin/env bash
# The scaling runs on a machine of 2 or more GPUs (issue: runs on 2, 4 and 8 GPUs), as made on
# 4 H200s on 2026-11-26 (docs/multi-gpu.md): builds LAMMPS and the library
# (scripts/gpu/gpu-lammps.sh), runs the `multigpu` test (NCCL without the harness against 1 rank),
# then bench/bench_lammps.py with one rank per GPU through NCCL: weak scaling at 64,000 and
# 256,000 atoms per GPU (20^3 or 40x40x20 cells per GPU; LAMMPS splits the box evenly), strong
# scaling of 32,000 and 256,000 atoms, `comm staged` beside the 64,000-per-GPU rows, and an
# NVE run of 512,000 atoms x 1,000 steps on all the GPUs through 3 restarts (bench/bench_drift.py)
# if time is left. JSON lines, the test log and the drift report into $OUT. Each run is capped
# (scripts/gpu/gpu-multigpu-setup.sh). The exchange alone and its levers: scripts/gpu/gpu-exchange.sh.
# Needs .lammps-src, .deps and .models (with nequix/) carried.
#   usage (device machine): OUT=... scripts/gpu/gpu-multigpu.sh   (FNQ_SECONDS: the budget, 540)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. scripts/gpu/gpu-multigpu-setup.sh # environment, build, $gpus, $threads, $out, capped
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
nve_if_time 40 250
echo "done in $(( $(date +%s) - t0 )) s"
