#!/usr/bin/env bash
# On a GPU machine (no network): fusednequip against nequip's own inference (AOTInductor +
# OpenEquivariance or cuEquivariance, eager PyTorch) and a 3-layer JAX NequIP,
# bench/bench_nequip_peers.py, JSON lines into $OUT (default /tmp): nequip-peers[-ARCH].jsonl,
# its table in nequip-peers[-ARCH].txt, logs.
# Needs the wheels in .whl/nequip/ (scripts/gpu/gpu-nequip-env.sh) and our library: builds it with
# scripts/gpu/gpu-build.sh unless $FNQ_LIBRARY names one (in the background while the wheels
# install and OpenEquivariance's extension builds).
# $NEQUIP_ARCHS (default m): the models, bench/make_nequip_peer_model.py --arch (m, oam-l, xl),
# each in .models/nequip-peer (m; or $NEQUIP_PEER_MODELS) or .models/nequip-ARCH, made here when
# the folder has none (nequip-train on the CPU, nequip-package, our converter, then the
# conversion check: check-ARCH.log). $ACCELS (default oeq; oeq cueq for both) and $TARGET
# (default pair_nequip; ase for the bench's ase mode): the AOTInductor packages compiled here
# when missing (specific to this GPU and this PyTorch), all at once. Arguments go to the bench,
# e.g. --sizes 8,10,16 --peers fnq,nequip-compiled --modes model,ase; $SIZES and $MIN_SECONDS
# set the defaults. $LARGEST_SIZES (e.g. 40,50,56): then fnq alone (own neighbour list) on the
# first model at these sizes, until one is out of memory (largest-ARCH.jsonl).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp}
archs=${NEQUIP_ARCHS:-m}
accels=${ACCELS:-oeq}
target=${TARGET:-pair_nequip}
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
dir() { if [ "$1" = m ]; then echo "${NEQUIP_PEER_MODELS:-.models/nequip-peer}"; else echo ".models/nequip-$1"; fi; }
sfx() { if [ "$1" = m ]; then echo ""; else echo "-$1"; fi; }
if [ -z "${FNQ_LIBRARY:-}" ] && [ ! -f build-gpu/core/libfusednequip.so ]; then
  (bash scripts/gpu/gpu-build.sh > "$out/build.log" 2>&1; echo $? > "$out/build.rc") &
  build=$!
fi
source scripts/gpu/gpu-nequip-env.sh
el "environment ready"
python3 -c "import torch, nequip, jax; print('torch', torch.__version__, 'nequip', nequip.__version__, 'jax', jax.__version__, jax.devices())"
python3 -c "import openequivariance._torch.extlib as e; print('openequivariance: precompiled extension', e.USE_PRECOMPILED_EXTENSION, 'loaded', e.BUILT_EXTENSION, e.BUILT_EXTENSION_ERROR or '')" 2>&1 | tail -1
# make converts the package with our library: the build must be done first
if [ -n "${build:-}" ]; then wait $build; el "built build-gpu (rc $(cat "$out/build.rc"))"; build=; fi
made=() pids=()
for a in $archs; do
  if [ ! -f "$(dir $a)/nequip-peer.fnqm" ]; then
    python3 bench/make_nequip_peer_model.py make "$(dir $a)" --arch $a --no-check \
      > "$out/make$(sfx $a).log" 2>&1 &
    made+=($a) pids+=($!)
  fi
done
for p in "${pids[@]}"; do wait $p || el "a make failed: $(tail -n 3 "$out"/make*.log)"; done
[ ${#made[@]} = 0 ] || el "made: ${made[*]}"
for a in $archs; do
  for c in $accels; do
    f=$(dir $a)/nequip-peer-$c$([ "$target" = ase ] && echo -ase).nequip.pt2
    [ -f "$f" ] || python3 bench/make_nequip_peer_model.py compile "$(dir $a)" --accel $c \
      --target "$target" > "$out/compile$(sfx $a)-$c.log" 2>&1 &
  done
done
for a in "${made[@]}"; do
  python3 bench/make_nequip_peer_model.py check "$(dir $a)" > "$out/check-$a.log" 2>&1
  el "check $a rc $?"; grep "largest relative" "$out/check-$a.log"
done
wait
for a in $archs; do for c in $accels; do
  l=$out/compile$(sfx $a)-$c.log
  [ -f "$l" ] && { el "compile $a $c: $(tail -1 "$l")"; grep -q "^wrote" "$l" || tail -25 "$l"; }
done; done
for a in $archs; do
  python3 bench/bench_nequip_peers.py --models "$(dir $a)" --sizes "${SIZES:-8,10,16,20,25,32,40}" \
    --min-seconds "${MIN_SECONDS:-1}" --out "$out/nequip-peers$(sfx $a).jsonl" "$@" \
    > "$out/nequip-peers$(sfx $a).txt" 2> "$out/nequip-peers$(sfx $a).err"
  el "bench $a rc $?"
  grep -v '^{' "$out/nequip-peers$(sfx $a).txt"; tail -40 "$out/nequip-peers$(sfx $a).err"
done
if [ -n "${LARGEST_SIZES:-}" ]; then
  a=${archs%% *}
  python3 bench/bench_nequip_peers.py --models "$(dir $a)" --peers fnq --modes periodic \
    --sizes "$LARGEST_SIZES" --min-seconds 0 --max-repeats 3 --out "$out/largest$(sfx $a).jsonl" \
    > "$out/largest$(sfx $a).txt" 2>&1
  el "largest $a rc $?"; grep -v '^{"environment' "$out/largest$(sfx $a).txt" | head -20
fi
