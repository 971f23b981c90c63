#!/usr/bin/env bash
# Where a small system's step goes (issue 47), on a GPU machine after scripts/gpu/gpu-lammps.sh:
# the library alone (bench_cpu, FNQ_TIMING) and one LAMMPS rank (the style's prepare / library /
# tally split, CUDA graphs instantiated) at $CELLS diamond cells per edge (default 3,4: 216 and
# 512 atoms), then an Nsight Systems timeline of each at 512 atoms, every kernel of the CUDA graph
# traced (--cuda-graph-trace=node), written as CSV into $OUT (default /tmp) for
# bench/timeline_budget.py. float32, nequix-mp-1.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp}
cells=${CELLS:-3,4}
lmp=${FNQ_LMP:-/tmp/fnq-lammps/lmp}
plugin=$PWD/build-gpu/pair_style/fusednequipplugin.so
export LD_LIBRARY_PATH=/tmp/fnq-deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0 FUSEDNEQUIP_MODEL_DIR=${FUSEDNEQUIP_MODEL_DIR:-$PWD/.models/nequix}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
bench="build-gpu/bench/bench_cpu --device cuda --dtype float32"
sizes=$(echo "$cells" | tr ',' ' ')
for c in $sizes; do
  FNQ_TIMING=1 $bench --sizes "$c" --min-seconds 2 2>&1 | tee -a "$out/library.txt"
done
deck=$(mktemp -d)/in.timeline
printf 'plugin load %s\ninclude %s\n' "$plugin" "$PWD/examples/si-diamond/in.si-nvt" > "$deck"
lammps() { # cells steps: one rank, float32, thermo output every 5 steps as shipped
  (cd examples/si-diamond && FNQ_TIMING=1 "$lmp" -in "$deck" -log none -var steps "$2" \
    -var cells "$1" -var device cuda -var dtype float32)
}
for c in $sizes; do
  lammps "$c" 400 > "$out/lammps-$c.txt" 2>&1
  grep -E "Loop time|^Pair|^Neigh|^Modify|^Other|timing|instantiated" "$out/lammps-$c.txt"
done
# Nsight Compute (the machines have no Nsight Systems): every kernel of one evaluation outside
# a graph (durations, grid, active warps), then the graph launches whole (their span: kernels
# plus the gaps between them on the GPU)
ncu_csv() { ncu --csv --clock-control none "$@" 2>/dev/null | grep '^"'; }
FNQ_NO_CUDA_GRAPH=1 ncu_csv --launch-skip 0 --launch-count 400 \
  --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,sm__warps_active.avg.pct_of_peak_sustained_active \
  $bench --sizes 4 --min-seconds 0 > "$out/kernels512.csv"
ncu_csv --graph-profiling graph --launch-skip 2 --launch-count 5 --metrics gpu__time_duration.sum \
  $bench --sizes 4 --min-seconds 0.2 > "$out/graph512.csv"
wc -l "$out"/*.csv
