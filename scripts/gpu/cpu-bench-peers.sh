#!/usr/bin/env bash
# The CPU path against Nequix's own JAX and PyTorch backends on the CPU (bench/bench_cpu_peers.py),
# on this machine's cores: fusednequip float32 and float64 at THREADS (default 1,2,4,8,16),
# nequix-jax and nequix-torch at PEER_THREADS (default 16), Si 512 and 4,096 atoms (SIZES 4,8),
# JSON lines appended to $OUT/cpu-peers.jsonl (OUT default /tmp), then the table.
#
# Made for the GPU machines' 16-core host (offline): it builds a CPU-only library in build-cpu/
# (cjson from .deps/*.deb where it is not installed, as scripts/gpu/gpu-build.sh does) and installs
# the peers' wheels carried in .whl/ into /tmp/site, as scripts/gpu/gpu-bench-env.sh does:
#   nequix-*.whl e3nn_jax-*.whl jraph-*.whl matscipy-*.whl ase-3*.whl ase_db_backends-*.whl
# (jax, torch, e3nn, torch_geometric, equinox, numpy, scipy are preinstalled there). The model is
# .models/nequix/nequix-mp-1.nqx (MODEL overrides). Each worker is pinned to the first T CPUs.
# One device command may run 10 minutes: split the work, and give WORKER_TIMEOUT (s) below the
# call's limit: a `timeout` around this script ends the script, not the workers it started, and
# those then load the host for the next call (2026-11-25). E.g.
#   PEERS=fnq-f32,fnq-f64 scripts/gpu/cpu-bench-peers.sh   (MODES=model: the model call only)
#   PEERS=nequix-jax SIZES=4 scripts/gpu/cpu-bench-peers.sh   (then SIZES=8, then nequix-torch)
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp}
. scripts/gpu/device-deps.sh # extra: CMake arguments for the carried libcjson
if [ ! -f build-cpu/core/libfusednequip.so ]; then
  cmake -S . -B build-cpu -DCMAKE_BUILD_TYPE=Release -DFNQ_ENABLE_CUDA=OFF -DFNQ_BUILD_TESTS=OFF \
    -DFNQ_BUILD_LAMMPS=OFF "${extra[@]}" >/dev/null || exit 1
  cmake --build build-cpu -j "$(nproc)" --target fusednequip >/dev/null || exit 1
fi
if ls .whl/nequix-*.whl >/dev/null 2>&1 && [ ! -d /tmp/site/nequix ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    .whl/nequix-*.whl .whl/e3nn_jax-*.whl .whl/jraph-*.whl .whl/matscipy-*.whl .whl/ase-3*.whl \
    .whl/ase_db_backends-*.whl
fi
export PYTHONPATH=/tmp/site:$PWD/python PYTHONUNBUFFERED=1
export FNQ_LIBRARY=$PWD/build-cpu/core/libfusednequip.so
lscpu | grep -E "^Model name|^CPU\(s\)|^Thread|^NUMA node\(s\)" || true
python3 bench/bench_cpu_peers.py --model "${MODEL:-$PWD/.models/nequix/nequix-mp-1.nqx}" \
  --sizes "${SIZES:-4,8}" --threads "${THREADS:-1,2,4,8,16}" \
  --peer-threads "${PEER_THREADS:-16}" \
  --peers "${PEERS:-fnq-f32,fnq-f64,nequix-jax,nequix-torch}" \
  --min-seconds "${MIN_SECONDS:-5}" --min-repeats "${MIN_REPEATS:-3}" --modes "${MODES:-model,ase}" \
  --worker-timeout "${WORKER_TIMEOUT:-7200}" \
  --out "$out/cpu-peers.jsonl" 2>&1 | grep -v '^{'
