#!/usr/bin/env bash
# On a GPU machine after scripts/gpu/gpu-lammps.sh (build-gpu/ and /tmp/fnq-lammps/lmp): the
# performance run of docs/performance.md, fusednequip and nequix + OpenEquivariance side by side
# (bench/bench_peers.py, Si 512 .. 64,000 atoms) and LAMMPS on the GPU (bench/bench_lammps.py),
# JSON lines into $OUT (default /tmp). Needs the carried peer wheels in .whl/ and the models in
# .models/ (scripts/gpu/gpu-bench-env.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp}
source scripts/gpu/gpu-bench-env.sh
python3 -m pytest -q -rs python/tests/test_device_graph.py 2>&1 | tail -3
python3 bench/bench_peers.py --model "$PWD/.models/nequix/nequix-mp-1.nqx" --sizes 4,8,10,16,20 \
  --peers fnq,nequix-oeq --min-seconds 2 --out "$out/peers.jsonl" 2>&1 | grep -v "^{" | tail -30
python3 bench/bench_lammps.py --lmp /tmp/fnq-lammps/lmp \
  --plugin build-gpu/pair_style/fusednequipplugin.so --device cuda --dtype float32 \
  --cells 4,10,20 --configs 1x16 > "$out/lammps.jsonl" 2> "$out/lammps.err"
tail -3 "$out/lammps.err"
cut -c1-300 "$out/lammps.jsonl"
