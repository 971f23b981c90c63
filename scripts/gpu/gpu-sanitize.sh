#!/usr/bin/env bash
# compute-sanitizer's four tools (memcheck, racecheck, initcheck, synccheck) over the GPU code:
# the CLI on a 64-atom Si cell in float32 and float64, gpu_device_graph, and gpu_vs_cpu without
# its deliberate out-of-memory case (--no-oom: the sanitizer reports every refused cudaMalloc).
# The CLI runs again in the lean buffer layout (FNQ_LEAN_MEMORY=1: the slots of the backward
# scratch and the node backward as kernels of their own) and with the node GEMMs, which 64
# atoms otherwise leave to the layer kernels' epilogues (FNQ_NODE_GEMM=1), and the LAMMPS
# pair style on the GPU (the lammps_gpu test: 1, 2 and 4 ranks, ghost rows exchanged) with
# every LAMMPS process under the tool (FNQ_LMP_WRAPPER, tests/lammps/lmputil.py; needs a LAMMPS build, scripts/gpu/gpu-lammps.sh).
# Any error fails. Device machine, after a build into build-gpu (scripts/gpu/gpu-build.sh).
# usage: gpu-sanitize.sh [--quick]   (--quick: gpu_vs_cpu under memcheck only)
# FNQ_SANITIZE_ONLY=REGEX runs the runs whose "tool label" matches; FNQ_SANITIZE_TIMEOUT (s) each.
set -uo pipefail
cd "$(dirname "$0")/../.."
quick=0
[ "${1:-}" = "--quick" ] && quick=1
export FUSEDNEQUIP_MODEL_DIR=${FUSEDNEQUIP_MODEL_DIR:-$PWD/.models}
b=build-gpu
python3 - > /tmp/fnq-si64.xyz <<'PY'
basis = [(0, 0, 0), (0, .5, .5), (.5, 0, .5), (.5, .5, 0),
         (.25, .25, .25), (.25, .75, .75), (.75, .25, .75), (.75, .75, .25)]
a = 5.43
pts = [((i + x) * a, (j + y) * a, (k + z) * a)
       for i in range(2) for j in range(2) for k in range(2) for x, y, z in basis]
print(len(pts))
print('Lattice="10.86 0 0 0 10.86 0 0 0 10.86" Properties=species:S:1:pos:R:3 pbc="T T T"')
for p in pts:
    print("Si %.6f %.6f %.6f" % p)
PY
failed=0
run() { # tool label command...
  local tool=$1 label=$2; shift 2
  [[ "$tool $label" =~ ${FNQ_SANITIZE_ONLY:-.} ]] || return 0
  local t0=$(date +%s) log=/tmp/fnq-sanitize-$tool-$label.log
  timeout "${FNQ_SANITIZE_TIMEOUT:-900}" compute-sanitizer --tool "$tool" --error-exitcode 99 "$@" > "$log" 2>&1
  local rc=$? summary
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
  printf "%-9s %-28s rc %3d  %4d s  %s\n" "$tool" "$label" "$rc" $(( $(date +%s) - t0 )) "$summary"
  if [ "$rc" -ne 0 ]; then failed=1; grep -E "=========" "$log" | head -20; fi
}
run_ctest() { # tool label function args...: the tool runs inside; its summaries are in the log
  local tool=$1 label=$2; shift 2
  [[ "$tool $label" =~ ${FNQ_SANITIZE_ONLY:-.} ]] || return 0
  local t0=$(date +%s) log=/tmp/fnq-sanitize-$tool-$label.log
  timeout "${FNQ_SANITIZE_TIMEOUT:-900}" "$@" > "$log" 2>&1
  local rc=$?
  printf "%-9s %-28s rc %3d  %4d s  %s\n" "$tool" "$label" "$rc" $(( $(date +%s) - t0 )) \
    "$(grep -cE "ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards" "$log") clean summaries"
  if [ "$rc" -ne 0 ]; then failed=1; grep -E "=========|FAIL" "$log" | head -20; fi
}
for tool in memcheck racecheck initcheck synccheck; do
  for dt in float32 float64; do
    run $tool "eval-si64-$dt" $b/cli/fusednequip eval --device cuda --dtype $dt nequix-mp-1 /tmp/fnq-si64.xyz
  done
  FNQ_LEAN_MEMORY=1 run $tool eval-si64-float32-lean $b/cli/fusednequip eval --device cuda \
    --dtype float32 nequix-mp-1 /tmp/fnq-si64.xyz
  FNQ_NODE_GEMM=1 run $tool eval-si64-float32-node-gemm $b/cli/fusednequip eval \
    --device cuda --dtype float32 nequix-mp-1 /tmp/fnq-si64.xyz
  run $tool gpu_device_graph $b/tests/gpu_device_graph
  # ctest's own exit status: LAMMPS' 99 from the tool fails the test
  [ -d $b/pair_style ] && FNQ_LMP_WRAPPER="compute-sanitizer --tool $tool --error-exitcode 99" \
    run_ctest $tool lammps_gpu ctest --test-dir $b -R '^lammps_gpu$' --output-on-failure \
    --timeout "${FNQ_SANITIZE_TIMEOUT:-900}"
done
run memcheck gpu_vs_cpu-no-oom $b/tests/gpu_vs_cpu --no-oom
# the ghost-atom path (compute_graph with ghosts, per-layer exchange, the node backward as its
# own kernel) on the GPU: mpi_halo's domains as threads; every case under memcheck, one case (2
# domains, float32, the GHOST backward pass) under the other tools, which are far slower
OMP_NUM_THREADS=1 run memcheck mpi_halo_gpu $b/tests/mpi_halo --device cuda
for tool in racecheck initcheck synccheck; do
  OMP_NUM_THREADS=1 run $tool mpi_halo_gpu-one-case $b/tests/mpi_halo --device cuda --one-case
done
if ((!quick)); then
  for tool in racecheck initcheck synccheck; do run $tool gpu_vs_cpu-no-oom $b/tests/gpu_vs_cpu --no-oom; done
fi
exit $failed
