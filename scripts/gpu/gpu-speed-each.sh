#!/usr/bin/env bash
# Is one GPU of the machine slower than the others? (A slower GPU makes its peers wait at every
# ghost exchange: docs/multi-gpu.md.) Each GPU alone, then all at once, twice: 64,000 rattled Si,
# float32, model only (bench_cpu). Device machine, from the repository root, after a build into
# build-gpu, or with FNQ_BIN naming a folder that holds bench_cpu and libfusednequip.so.0 built
# for the GPU (carried). Needs .models (with nequix/) and .deps.
cd "$(dirname "$0")/../.." || exit 1
export FUSEDNEQUIP_MODEL_DIR=${FUSEDNEQUIP_MODEL_DIR:-$PWD/.models}
. scripts/gpu/device-deps.sh # the carried libcjson on the library path
bin=${FNQ_BIN:-build-gpu/bench}
export LD_LIBRARY_PATH=$PWD/$bin:$PWD/build-gpu/core:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=index,name,pci.bus_id,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu --format=csv
B="$bin/bench_cpu --model nequix-mp-1 --dtype float32 --device cuda --sizes 20 --rattle 0.1 --min-seconds 4"
n=$(nvidia-smi -L | wc -l)
for r in 1 2; do
  for ((g = 0; g < n; g++)); do echo "alone gpu $g: $(CUDA_VISIBLE_DEVICES=$g timeout 40 $B)"; done
  for ((g = 0; g < n; g++)); do CUDA_VISIBLE_DEVICES=$g timeout 40 $B > /tmp/all$g & done; wait
  for ((g = 0; g < n; g++)); do echo "together gpu $g: $(cat /tmp/all$g)"; done
done
nvidia-smi --query-gpu=index,clocks.sm,power.draw,temperature.gpu --format=csv
