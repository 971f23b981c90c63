#!/usr/bin/env bash
# On a GPU machine (no network): fusednequip against nequip's own inference (AOTInductor +
# OpenEquivariance, eager PyTorch) and a 3-layer JAX NequIP, bench/bench_nequip_peers.py, JSON
# lines into $OUT (default /tmp): nequip-peers.jsonl, its table in nequip-peers.txt, logs.
# Needs the wheels in .whl/nequip/ (scripts/gpu/gpu-nequip-env.sh) and our library: builds it with
# scripts/gpu/gpu-build.sh unless $FNQ_LIBRARY names one. The model folder ($NEQUIP_PEER_MODELS,
# default .models/nequip-peer) gets the model from bench/make_nequip_peer_model.py when it has
# none (made on the CPU there, or carried), and the AOTInductor .nequip.pt2 when missing
# (compiled here: it is specific to this GPU and this PyTorch). Arguments go to the bench,
# e.g. --sizes 8,10,16 --peers fnq,nequip-compiled; $SIZES and $MIN_SECONDS set the defaults.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp}
models=${NEQUIP_PEER_MODELS:-.models/nequip-peer}
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [ -z "${FNQ_LIBRARY:-}" ] && [ ! -f build-gpu/core/libfusednequip.so ]; then
  bash scripts/gpu/gpu-build.sh > "$out/build.log" 2>&1 || { el "build failed"; tail -20 "$out/build.log"; exit 1; }
  el "built build-gpu"
fi
source scripts/gpu/gpu-nequip-env.sh
python3 -c "import torch, nequip, jax; print('torch', torch.__version__, 'nequip', nequip.__version__, 'jax', jax.__version__, jax.devices())"
python3 -c "import openequivariance._torch.extlib as e; print('openequivariance: precompiled extension', e.USE_PRECOMPILED_EXTENSION, 'loaded', e.BUILT_EXTENSION, e.BUILT_EXTENSION_ERROR or '')" 2>&1 | tail -1
if [ ! -f "$models/nequip-peer.fnqm" ]; then
  python3 bench/make_nequip_peer_model.py make "$models" > "$out/make.log" 2>&1
  el "make rc $?"; grep -E "relative|FAILED" "$out/make.log"
fi
if [ ! -f "$models/nequip-peer-oeq.nequip.pt2" ]; then
  python3 bench/make_nequip_peer_model.py compile "$models" > "$out/compile.log" 2>&1
  rc=$?; el "nequip-compile (AOTInductor + OpenEquivariance) rc $rc"; [ $rc = 0 ] || tail -25 "$out/compile.log"
fi
python3 bench/bench_nequip_peers.py --models "$models" --sizes "${SIZES:-8,10,16,20,25,32,40}" \
  --min-seconds "${MIN_SECONDS:-1}" --out "$out/nequip-peers.jsonl" "$@" \
  > "$out/nequip-peers.txt" 2> "$out/nequip-peers.err"
el "bench rc $?"
grep -v '^{' "$out/nequip-peers.txt"; tail -40 "$out/nequip-peers.err"
