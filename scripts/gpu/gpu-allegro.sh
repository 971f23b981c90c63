#!/usr/bin/env bash
# The CUDA Allegro engine (kernels/allegro/allegro_engine.cu) on a GPU machine, in parts (PARTS, default
# "tests"; several: PARTS="tests peer"):
#   tests  the Allegro GPU tests on a carried or built build-gpu/: gpu_allegro's pytest run (the
#          fixtures in both precisions, ghosts, small chunks, bitwise repeats; pytest from
#          .whl/lite), lammps_allegro_fixtures_gpu (LAMMPS built into /tmp/fnq-lammps first
#          if missing) and gpu_gemm_3xtf32 (the engine's tensor-core GEMM against double)
#   sanitize  compute-sanitizer memcheck and initcheck over the engine's GPU tests (every cuda
#          case, and the structures cut into chunks of 60 edges: FNQ_ALLEGRO_CHUNK) and over
#          gpu_gemm_3xtf32, and racecheck over gpu_gemm_3xtf32 alone (its stages are shared
#          between threads); any error fails. No racecheck over the engine's tests: its other
#          kernels share no memory between threads (their shared memory is per thread), and
#          under it cuBLAS's float64 GEMMs took the host's 128 GB (session 44)
#   peer   the Allegro-OAM-L-width model (two species, float32) made by nequip-allegro itself
#          (tests/fixtures/allegro/generate.py --full-width) into $PEER_DIR (/tmp/allegro-peer:
#          kept for the next call while the machine is warm; a few minutes to make), our
#          conversion checked against nequip-allegro's outputs on the GPU, nequip-allegro's
#          compiled peer (AOTInductor, Triton contracter, target ase) and both timed by
#          bench/bench_nequip_peers.py (SIZES, default 8,10,16,20: 4,096 to 64,000 atoms; MODES,
#          default model,ase)
#          (and fnq alone again with FNQ_TF32=1: allegro-peers-tf32.jsonl, and with cuBLAS'
#          float32 GEMMs instead of gemm_3xtf32, FNQ_ALLEGRO_GEMM=cublas: allegro-peers-cublas.jsonl)
#   profile  bench/profile_call.py on the same model (PROFILE_SIZES, default 8: 4,096 atoms),
#          without and with FNQ_TF32=1: where a call's time goes, by kernel
#   model  the model of peer made, nothing timed (to run beside the tests, before the timed
#          parts); prepare: that and nequip-allegro's compiled peer
#   weak   weak scaling in LAMMPS (bench/bench_lammps.py, in.si-nvt, float32, the peer part's
#          model: made first if missing): 8^3 diamond cells (4,096 atoms) on one rank and GPU,
#          then 16x8x8 cells on 2 ranks and GPUs, and 16x16x8 on 4 when the machine has 4 GPUs
#          (WEAK_STEPS steps, default 10; WEAK_THREADS OpenMP threads a rank, default the
#          cores over the GPUs); JSON lines in $OUT/allegro-weak.jsonl
#   largest  the same model on one GPU at LARGEST_SIZES (default "32 40": 262,144 and 512,000
#          atoms of the mixed lattice), one call each with the library's own neighbour list
#          (compute): seconds, edges, GPU memory in use after it (the engine works in chunks,
#          so the host's memory bounds it); JSON lines in $OUT/allegro-largest.jsonl
# Needs .deps (with lammps-src.tar.xz, .lammps-src packed: unpacked here when missing),
# .whl/lite (nequip, nequip-allegro and what they need beyond the machine's PyTorch and pytest:
# scripts/gpu/README.md), .models/nequix (nequix-mp-1, for the GPU check of
# the LAMMPS test) and, for tests without a carried build-gpu/, .lammps-src.
set -euo pipefail
cd "$(dirname "$0")/../.."
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp}
parts=" ${PARTS:-tests} "
[ -d .lammps-src ] || [ ! -f .deps/lammps-src.tar.xz ] || tar xJf .deps/lammps-src.tar.xz
source scripts/gpu/device-deps.sh
[ -x build-gpu/cli/fusednequip ] || bash scripts/gpu/gpu-lammps.sh
export FNQ_NEQUIP_WHEELS=.whl/lite FUSEDNEQUIP_MODEL_DIR=$PWD/.models
source scripts/gpu/gpu-nequip-env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

build_lammps() { # LAMMPS alone, as gpu-suite.sh (~70 s)
  [ -x /tmp/fnq-lammps/lmp ] && return
  cmake -S .lammps-src/cmake -B /tmp/fnq-lammps -DCMAKE_BUILD_TYPE=Release -DBUILD_MPI=on \
    -DPKG_PLUGIN=on -DPKG_MANYBODY=on -DPKG_MOLECULE=on -DBUILD_SHARED_LIBS=on \
    -DLAMMPS_EXCEPTIONS=on -DWITH_JPEG=off -DWITH_PNG=off -DWITH_GZIP=off -DWITH_FFMPEG=off \
    > /dev/null
  cmake --build /tmp/fnq-lammps -j "$(nproc)" > "$OUT/lammps-build.log" 2>&1
}
dir=${PEER_DIR:-/tmp/allegro-peer}
make_model() { # the Allegro-OAM-L-width model, once per machine
  [ -f "$dir/nequip-peer.fnqm" ] && return
  mkdir -p "$dir"
  ( cd "$dir" && python3 "$OLDPWD/tests/fixtures/allegro/generate.py" --full-width \
      --model-dtype float32 "$dir" ) > "$OUT/allegro-generate.log" 2>&1 ||
    { tail -30 "$OUT/allegro-generate.log"; exit 1; }
  tail -8 "$OUT/allegro-generate.log"
  cp "$dir/allegro_oam_l_widths_2sp.fnqm" "$dir/nequip-peer.fnqm"
  cp "$dir/allegro_oam_l_widths_2sp.nequip.zip" "$dir/nequip-peer.nequip.zip"
  python3 -c "import json; json.dump({'type_names': ['Si', 'O'], 'options': {'r_max': 7.0}},
                                     open('$dir/nequip-peer.json', 'w'))"
}

compile_peer() { # nequip-allegro's compiled model (AOTInductor, Triton), once per machine
  [ -f "$dir/nequip-peer-triton-ase.nequip.pt2" ] && return
  python3 bench/make_nequip_peer_model.py compile "$dir" --accel triton --target ase \
    > "$OUT/allegro-compile.log" 2>&1 || { tail -30 "$OUT/allegro-compile.log"; exit 1; }
}

if [[ $parts == *" model "* || $parts == *" prepare "* ]]; then
  make_model
fi
if [[ $parts == *" prepare "* ]]; then
  compile_peer
fi

if [[ $parts == *" tests "* ]]; then
  build_lammps
  # gpu_allegro's command with this environment's Python path (pytest from .whl/lite)
  python3 tests/gpu_pytest.py python/tests/test_allegro_engine.py -k "cuda or gpu or auto" \
    2>&1 | tee "$OUT/allegro-tests.txt"
  ctest --test-dir build-gpu --output-on-failure -R "lammps_allegro_fixtures_gpu|gpu_gemm_3xtf32" \
    2>&1 | tee -a "$OUT/allegro-tests.txt"
fi

if [[ $parts == *" sanitize "* ]]; then
  for tool in memcheck initcheck; do
    rc=0
    FNQ_ALLEGRO_CHUNK=60 timeout 900 compute-sanitizer --tool $tool --error-exitcode 99 \
      python3 tests/gpu_pytest.py python/tests/test_allegro_engine.py -k "cuda or gpu_chunks" \
      > "$OUT/allegro-$tool.log" 2>&1 || rc=$?
    echo "allegro $tool rc $rc $(grep -E "ERROR SUMMARY" "$OUT/allegro-$tool.log" | sort |
      uniq -c | tr '\n' ' ')$(grep -E "passed|failed" "$OUT/allegro-$tool.log" | tail -1)"
    rc=0 # the tensor-core GEMM alone (TMA, wgmma), its test's shapes
    timeout 600 compute-sanitizer --tool $tool --error-exitcode 99 build-gpu/tests/gpu_gemm_3xtf32 \
      > "$OUT/gemm-$tool.log" 2>&1 || rc=$?
    echo "gemm_3xtf32 $tool rc $rc $(grep -E "ERROR SUMMARY" "$OUT/gemm-$tool.log" | tail -1)"
  done
  rc=0
  timeout 600 compute-sanitizer --tool racecheck --error-exitcode 99 \
    build-gpu/tests/gpu_gemm_3xtf32 > "$OUT/gemm-racecheck.log" 2>&1 || rc=$?
  echo "gemm_3xtf32 racecheck rc $rc $(grep -E "RACECHECK SUMMARY" "$OUT/gemm-racecheck.log" | tail -1)"
fi

if [[ $parts == *" peer "* ]]; then
  make_model
  # our GPU engine on the converted float32 model against nequip-allegro's float32 outputs
  python3 - "$dir" <<'EOF'
import json, os, sys
import numpy as np
from ase.io import read
from fusednequip import FusedNequIPCalculator, Model
d = sys.argv[1]
model = Model(os.path.join(d, "nequip-peer.fnqm"))
ref = json.load(open(os.path.join(d, "allegro_oam_l_widths_2sp.json")))
for dtype, tf32 in (("float32", "0"), ("float32", "1"), ("float64", "0")):
    os.environ["FNQ_TF32"] = tf32  # read when the calculator's context is made
    calc = FusedNequIPCalculator(model, device="cuda", dtype=dtype)
    for case, want in sorted(ref["cases"].items()):
        atoms = read(os.path.join(d, want["xyz"]))
        atoms.calc = calc
        dev = {k: np.abs(np.asarray(got) - np.asarray(want[k])).max() /
                  np.abs(np.asarray(want[k])).max()
               for k, got in (("energy", atoms.get_potential_energy()),
                              ("energies", atoms.get_potential_energies()),
                              ("forces", atoms.get_forces()))}
        print(f"GPU {dtype}{' FNQ_TF32=1' * (tf32 == '1')} vs nequip-allegro float32, {case}: " +
              ", ".join(f"{k} {v:.2e}" for k, v in dev.items()))
EOF
  compile_peer
  python3 bench/bench_nequip_peers.py --models "$dir" --peers fnq,nequip-triton \
    --modes "${MODES:-model,ase}" --sizes "${SIZES:-8,10,16,20}" --min-seconds 1 \
    --out "$OUT/allegro-peers.jsonl" 2>&1 | tee "$OUT/allegro-peers.txt"
  FNQ_TF32=1 python3 bench/bench_nequip_peers.py --models "$dir" --peers fnq \
    --modes "${MODES:-model,ase}" --sizes "${SIZES:-8,10,16,20}" --min-seconds 1 \
    --out "$OUT/allegro-peers-tf32.jsonl" 2>&1 | tee "$OUT/allegro-peers-tf32.txt"
  FNQ_ALLEGRO_GEMM=cublas python3 bench/bench_nequip_peers.py --models "$dir" --peers fnq \
    --modes "${MODES:-model,ase}" --sizes "${SIZES:-8,10,16,20}" --min-seconds 1 \
    --out "$OUT/allegro-peers-cublas.jsonl" 2>&1 | tee "$OUT/allegro-peers-cublas.txt"
fi

if [[ $parts == *" profile "* ]]; then
  make_model
  for tf32 in 0 1; do
    FNQ_TF32=$tf32 python3 bench/profile_call.py --models "$dir" --sizes "${PROFILE_SIZES:-8}" \
      --calls 5 2>&1 | tee -a "$OUT/allegro-profile.txt"
  done
fi

if [[ $parts == *" weak "* ]]; then
  build_lammps & make_model; wait
  gpus=$(nvidia-smi -L | wc -l) threads=${WEAK_THREADS:-$(( $(nproc) / gpus ))}
  weak() { python3 bench/bench_lammps.py --lmp /tmp/fnq-lammps/lmp \
    --plugin build-gpu/pair_style/fusednequipplugin.so \
    --device cuda --dtype float32 --model "$dir/nequip-peer.fnqm" --steps "${WEAK_STEPS:-10}" \
    --cells "$1" --configs "$2x$threads" | tee -a "$OUT/allegro-weak.jsonl"; }
  weak 8 1
  [ "$gpus" -lt 2 ] || weak 16x8x8 2
  [ "$gpus" -lt 4 ] || weak 16x16x8 4
fi

if [[ $parts == *" largest "* ]]; then
  make_model
  for rep in ${LARGEST_SIZES:-32 40}; do
    FNQ_TIMING=1 python3 - "$dir" "$rep" <<'PY' 2>&1 | tee -a "$OUT/allegro-largest.jsonl"
import json, resource, subprocess, sys, time
import numpy as np
from fusednequip import Context, Model
from mixed_workload import mixed_crystal
d, rep = sys.argv[1], int(sys.argv[2])
model = Model(d + "/nequip-peer.fnqm")
atoms = mixed_crystal(rep, ["Si", "O"])
ctx = Context(model, device="cuda", dtype="float32")
sp = np.array(model.species_indices(atoms.get_chemical_symbols()), dtype=np.int32)
t = time.perf_counter()
e = ctx.compute(atoms.positions, sp, atoms.cell.array, atoms.pbc)[0]
t = time.perf_counter() - t
used = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                      capture_output=True, text=True).stdout.split()[0]
print(json.dumps({"bench": "allegro-largest", "atoms": len(atoms), "edges": ctx.last_num_edges,
                  "seconds": round(t, 2), "energy": e, "finite": bool(np.isfinite(e)),
                  "gpu_memory_used_mib_after": int(used), "host_max_rss_gb":
                  round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 1)}), flush=True)
PY
  done
fi
