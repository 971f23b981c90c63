#!/usr/bin/env bash
# Small systems (issue 47), A/B on one GPU after scripts/gpu/gpu-lammps.sh built this tree and,
# when $BASE names another tree built the same way (its build-gpu/), that one too: bench_cpu
# (library alone) and one LAMMPS rank (examples/si-diamond, float32, nequix-mp-1) at $CELLS
# diamond cells per edge, each tree in turn, this tree also with FNQ_ATOMS_PER_BLOCK=1,2,4.
# Lines of text and JSON into $OUT (default /tmp): small-ab.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp}
cells=${CELLS:-3,4,5,6,8,10,20}
steps=${STEPS:-400}
lmp=${FNQ_LMP:-/tmp/fnq-lammps/lmp}
export LD_LIBRARY_PATH=/tmp/fnq-deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0 FUSEDNEQUIP_MODEL_DIR=${FUSEDNEQUIP_MODEL_DIR:-$PWD/.models/nequix}
log=$out/small-ab.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$log"
trees=("$PWD")
[ -n "${BASE:-}" ] && trees=("$BASE" "$PWD")
library() { # tree label [env...]: bench_cpu at every size, the timing summary after each
  local tree=$1 label=$2; shift 2
  for c in ${cells//,/ }; do
    env "$@" FNQ_TIMING=1 "$tree/build-gpu/bench/bench_cpu" --device cuda --dtype float32 \
      --sizes "$c" --min-seconds "${MIN_SECONDS:-1}" 2>&1 | sed "s/^/$label library: /" >> "$log"
  done
}
lammps() { # tree label [env...]: one rank, thermo output every 5 steps as shipped
  local tree=$1 label=$2; shift 2
  local deck; deck=$(mktemp)
  printf 'plugin load %s\ninclude %s\n' "$tree/build-gpu/pair_style/fusednequipplugin.so" \
    "$PWD/examples/si-diamond/in.si-nvt" > "$deck"
  for c in ${cells//,/ }; do
    [ "$c" -le 10 ] || continue
    (cd examples/si-diamond && env "$@" FNQ_TIMING=1 "$lmp" -in "$deck" -log none \
      -var steps "$steps" -var cells "$c" -var device cuda -var dtype float32 2>&1) |
      grep -E "Loop time|timing" | sed "s/^/$label lammps $c: /" >> "$log"
  done
}
for round in 1 2; do
  for t in "${trees[@]}"; do
    label=$([ "$t" = "$PWD" ] && echo new || echo base)
    library "$t" "$label r$round"
    lammps "$t" "$label r$round"
  done
done
for apb in 1 2 4; do
  library "$PWD" "new apb$apb" FNQ_ATOMS_PER_BLOCK=$apb
done
for g in 0 1; do
  library "$PWD" "new nodegemm$g" FNQ_NODE_GEMM=$g
done
grep -E "ms_per_step|Loop time|timing" "$log" | sed -E 's/"(model|dtype|device|threads|bench|rattle_A|cpu_ms_per_step|us_per_atom_step|repeats)": [^,]*, //g' | cut -c1-220
