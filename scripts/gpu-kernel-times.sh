#!/usr/bin/env bash
# Per-kernel durations of one GPU evaluation (Nsight Compute, clocks left alone), and where the
# warps of one kernel stall, summed per CUDA source line (device machine; builds first).
# usage: gpu-kernel-times.sh [SIZE] [KERNEL_REGEX SKIP]   (SIZE: cubic repeats, 10 -> 8000 Si)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/gpu-build.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fnq-deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export FNQ_NO_CUDA_GRAPH=1
out=${OUT:-/tmp}
size=${1:-10}
# the first evaluation (the warm-up) and the start of the second
ncu --clock-control none -f -o /tmp/times --section SpeedOfLight --launch-count 30 \
  build-gpu/bench/bench_cpu --device cuda --dtype float32 --sizes "$size" --min-seconds 0 >/dev/null
ncu --import /tmp/times.ncu-rep --csv --page raw --metrics gpu__time_duration.sum \
  > "$out/kernel_times.csv"
python3 - "$out/kernel_times.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
h = rows[0]; k = h.index("Kernel Name"); d = h.index("gpu__time_duration.sum")
tot = 0
for r in rows[2:]:
    v = float(r[d].replace(",", "")); tot += v
    print(f"{v/1e6:9.3f} ms  {r[k][:90]}")
print(f"{tot/1e6:9.3f} ms  total")
PY
[ $# -ge 3 ] || exit 0
ncu --clock-control none -f -o /tmp/prof --kernel-name "regex:$2" --launch-skip "$3" --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section SourceCounters \
  --section LaunchStats --import-source yes \
  build-gpu/bench/bench_cpu --device cuda --dtype float32 --sizes "$size" --min-seconds 0 >/dev/null
ncu --import /tmp/prof.ncu-rep --page details --print-details all > "$out/details.txt" 2>&1 || true
grep -E "Duration|Registers Per|Achieved Occ|Cycles Per Issued|Stall (Long|Barrier|Short|Wait|No Inst|MIO|Math)|Shared Memory Per Block|Dynamic Shared" "$out/details.txt" || true
ncu --import /tmp/prof.ncu-rep --page source --csv --print-source cuda > "$out/cuda_lines.csv" 2>&1 || true
python3 - "$out/cuda_lines.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
try:
    hi = next(i for i, r in enumerate(rows) if any("Warp Stall Sampling (All" in h for h in r))
except StopIteration:
    print("no source table:", rows[:3]); sys.exit(0)
hdr = rows[hi]
col = hdr.index(next(h for h in hdr if "Warp Stall Sampling (All" in h))
src = hdr.index("Source") if "Source" in hdr else 1
line = hdr.index("Line") if "Line" in hdr else 0
data = []
for r in rows[hi + 1:]:
    try: data.append((float(r[col]), r[line], r[src]))
    except (ValueError, IndexError): pass
tot = sum(d[0] for d in data) or 1
print(f"{tot:.0f} samples")
for v, ln, text in sorted(data, reverse=True)[:40]:
    print(f"{100*v/tot:5.1f}% {ln:>5} {text.strip()[:110]}")
PY
