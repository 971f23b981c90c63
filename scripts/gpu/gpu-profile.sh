#!/usr/bin/env bash
# Profile one kernel of a GPU evaluation with Nsight Compute and print where its warps stall,
# by source line (device machine; builds first). usage: gpu-profile.sh KERNEL_REGEX [SKIP] [SIZE]
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/gpu/gpu-build.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fnq-deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export FNQ_NO_CUDA_GRAPH=1
out=${OUT:-/tmp}
ncu -f -o /tmp/prof --kernel-name "regex:$1" --launch-skip "${2:-0}" --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section SourceCounters \
  --import-source yes build-gpu/bench/bench_cpu --device cuda --dtype float32 \
  --sizes "${3:-8}" --min-seconds 0 >/dev/null
ncu --import /tmp/prof.ncu-rep --print-summary per-kernel | grep -E "Duration|Occupancy|Registers|Cycles Per" || true
ncu --import /tmp/prof.ncu-rep --page source --csv --print-source sass > "$out/sass.csv"
ncu --import /tmp/prof.ncu-rep --page details --print-details all > "$out/details.txt" 2>&1 || true
python3 - "$out/sass.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
hdr = next(r for r in rows if any("Sampling" in h for h in r))
print("columns:", [h for h in hdr if "Sampl" in h or h in ("Address", "Source")])
start = rows.index(hdr) + 1
col = next(i for i, h in enumerate(hdr) if "Warp Stall Sampling (All" in h)
src = next(i for i, h in enumerate(hdr) if h == "Source")
data = []
for r in rows[start:]:
    try:
        data.append((float(r[col]), r[src]))
    except (ValueError, IndexError):
        pass
tot = sum(d[0] for d in data) or 1
print(f"{len(data)} SASS instructions, {tot:.0f} samples")
for v, text in sorted(data, reverse=True)[:45]:
    print(f"{100 * v / tot:5.1f}%  {text.strip()[:120]}")
PY
