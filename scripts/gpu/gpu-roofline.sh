#!/usr/bin/env bash
# The fused kernels' achieved FLOP/s and bytes (Nsight Compute counters, clocks left alone) for
# bench/roofline.py: one evaluation of diamond Si by bench_cpu, every kernel, written as CSV.
# Device machine, after a build into build-gpu. usage: gpu-roofline.sh OUT.csv [SIZE] [DTYPE]
# (SIZE: cubic repeats, 10 -> 8,000 Si)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$1 size=${2:-10} dtype=${3:-float32}
export FNQ_NO_CUDA_GRAPH=1 # kernels one by one, as the graph replays them
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum
for op in fadd fmul ffma dadd dmul dfma; do
  metrics+=,sm__sass_thread_inst_executed_op_${op}_pred_on.sum
done
# bench_cpu with --min-seconds 0 evaluates twice (warm-up, one timed): both are profiled;
# bench/roofline.py keeps the second
ncu --clock-control none -f -o /tmp/roofline --metrics "$metrics" \
  build-gpu/bench/bench_cpu --device cuda --dtype "$dtype" --sizes "$size" --min-seconds 0 --rattle 0.1 >/dev/null
ncu --import /tmp/roofline.ncu-rep --csv --print-units base --page raw --metrics "$metrics" > "$out"
echo "wrote $out ($(wc -l < "$out") lines)"
