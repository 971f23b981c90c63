#!/usr/bin/env bash
# Where the time of the layer kernels goes: per-kernel durations (Nsight Compute, clocks left
# alone) of one evaluation with each stage left out in turn (FNQ_SKIP bits, model_dev.cuh; the
# results are wrong then, the timings are the point). Device machine; builds first.
# usage: gpu-stage-times.sh [SIZE] [SKIP_MASKS...]   (SIZE: cubic repeats, 10 -> 8000 Si)
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/gpu/gpu-build.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fnq-deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export FNQ_NO_CUDA_GRAPH=1
size=${1:-10}
shift || true
masks=("$@")
[ ${#masks[@]} -gt 0 ] || masks=(0 1 2 4 8 16 31)
printf "%-6s %s\n" skip "forward layers 0..3 | backward layers 3..0 | total (ms)"
for m in "${masks[@]}"; do
  FNQ_SKIP=$m ncu --clock-control none -f -o /tmp/stage --kernel-name regex:layer_ \
    --launch-skip 0 --launch-count 8 --metrics gpu__time_duration.sum \
    build-gpu/bench/bench_cpu --device cuda --dtype float32 --sizes "$size" --min-seconds 0 >/dev/null 2>&1 || true
  ncu --import /tmp/stage.ncu-rep --csv --page raw --metrics gpu__time_duration.sum |
    python3 -c '
import csv, sys
rows = list(csv.reader(sys.stdin)); h = rows[0]; d = h.index("gpu__time_duration.sum")
unit = rows[1][d]; scale = {"ms": 1, "us": 1e-3, "usecond": 1e-3, "ns": 1e-6, "nsecond": 1e-6, "msecond": 1}.get(unit, 1)
v = [float(r[d].replace(",", "")) * scale for r in rows[2:]]
print(sys.argv[1].ljust(6), " ".join(f"{x:7.2f}" for x in v[:4]), "|", " ".join(f"{x:7.2f}" for x in v[4:]), "|", f"{sum(v):7.2f}")
' "$m"
done
