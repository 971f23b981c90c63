#!/usr/bin/env bash
# On a GPU machine: the style in a LAMMPS built with KOKKOS for CUDA, as GPU users run it
# (issue 49). The lmp comes from gpu-lammps-kokkos.sh, built here (a call that runs out of
# $FNQ_BUILD_SECONDS stops; the next call goes on with the build); the style from
# build-kokkos/ (built here by gpu-lammps-kokkos.sh, or carried: configured for
# /tmp/fnq-lammps-kokkos-cuda/lmp). Runs the kokkos test (`-k on g 1`, and on a machine of
# several GPUs again with one GPU per rank), then bench/bench_lammps.py, one rank, diamond Si
# cells per edge $CELLS (default 10,20: 8,000 and 64,000 atoms) without Kokkos, with
# `-k on g 1 -sf kk` and the plain style, and with fusednequip/kk, the same lmp and plugin,
# $REPEATS times (default 1). PARTS=tests or PARTS=bench runs one of the two (default both);
# PARTS=sanitize runs compute-sanitizer's memcheck and racecheck (any error fails) over the /kk
# style's GPU code: build-kokkos/tests/gpu_device_graph, and the small case of lammps_kokkos
# (FNQ_KOKKOS_QUICK=1: Si, one rank, and the NVE run whose steps go through
# fnq_ctx_compute_graph_repeat_device) with every LAMMPS process under the tool.
# Logs and JSON lines into $OUT (default /tmp).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export FUSEDNEQUIP_MODEL_DIR=${FUSEDNEQUIP_MODEL_DIR:-$PWD/.models}
. scripts/gpu/device-deps.sh
lmp=/tmp/fnq-lammps-kokkos-cuda/lmp
gpus=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/kokkos.txt"
# the trimmed source, carried as it is or packed (31 MB -> 5 MB)
[ -d .lammps-kokkos-src ] || tar -xJf build-lmp-kokkos/lammps-kokkos-src.tar.xz
if [ ! -x $lmp ]; then
  # with a carried build-kokkos only the lmp is built here
  [ -f build-kokkos/pair_style/fusednequipplugin.so ] && export FNQ_KOKKOS_LMP_ONLY=1
  t=$(date +%s)
  timeout "${FNQ_BUILD_SECONDS:-560}" bash scripts/gpu/gpu-lammps-kokkos.sh > "$out/kokkos-build.log" 2>&1
  rc=$?
  echo "gpu-lammps-kokkos.sh rc $rc in $(( $(date +%s) - t )) s" | tee -a "$out/kokkos.txt"
  [ -x $lmp ] || { tail -30 "$out/kokkos-build.log"; exit 1; }
fi
$lmp -h | grep -E "KOKKOS package API|Large-scale" | tee -a "$out/kokkos.txt"
parts=${PARTS:-tests,bench} # which parts run: a call of ~10 min holds the build and the tests
for g in $([[ $parts == *tests* ]] && echo 1 $([ "$gpus" -ge 2 ] && echo "$gpus")); do
  FNQ_KOKKOS_GPUS=$g timeout "${FNQ_TEST_SECONDS:-300}" ctest --test-dir build-kokkos \
    -R '^lammps_kokkos$' -V > "$out/kokkos-test-g$g.log" 2>&1
  echo "lammps_kokkos with -k on g $g: rc $?" | tee -a "$out/kokkos.txt"
  grep -E "rank|NVE|Kokkos backends|fusednequip/kk|FAIL|SKIP" "$out/kokkos-test-g$g.log" | sed 's/^[0-9]*: //' |
    tee -a "$out/kokkos.txt"
done
if [[ $parts == *sanitize* ]]; then
  for tool in ${SANITIZE_TOOLS:-memcheck racecheck}; do
    t=$(date +%s)
    timeout "${FNQ_TEST_SECONDS:-400}" compute-sanitizer --tool $tool --error-exitcode 99 \
      build-kokkos/tests/gpu_device_graph \
      > "$out/sanitize-$tool-gpu_device_graph.log" 2>&1
    echo "$tool gpu_device_graph: rc $? in $(( $(date +%s) - t )) s;" \
      "$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/sanitize-$tool-gpu_device_graph.log" | tail -1)" |
      tee -a "$out/kokkos.txt"
    t=$(date +%s)
    # every LAMMPS process writes its own report (%p: its pid)
    FNQ_KOKKOS_QUICK=1 FNQ_LMP_WRAPPER="compute-sanitizer --tool $tool --error-exitcode 99
      --log-file $out/sanitize-$tool-lmp-%p.log" \
      timeout "${FNQ_TEST_SECONDS:-400}" ctest --test-dir build-kokkos -R '^lammps_kokkos$' -V \
      > "$out/sanitize-$tool-lammps_kokkos.log" 2>&1
    echo "$tool lammps_kokkos (small case): rc $? in $(( $(date +%s) - t )) s;" \
      "$(cat "$out"/sanitize-$tool-lmp-*.log | grep -cE "ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards")" \
      "clean of $(cat "$out"/sanitize-$tool-lmp-*.log | grep -cE "ERROR SUMMARY|RACECHECK SUMMARY") LAMMPS runs;" \
      "$(grep -E "fusednequip/kk:" "$out/sanitize-$tool-lammps_kokkos.log" | tail -1 | sed 's/^[0-9]*: //')" |
      tee -a "$out/kokkos.txt"
  done
fi
B="python3 bench/bench_lammps.py --lmp $lmp --plugin build-kokkos/pair_style/fusednequipplugin.so
   --device cuda --dtype float32 --steps ${STEPS:-50} --configs 1x16"
cells=${CELLS:-10,20}
[[ $parts == *bench* ]] || cells=
# per size: no Kokkos; Kokkos with the plain style (FNQ_NO_KOKKOS_STYLE=1: LAMMPS moves the
# arrays through the host for it); Kokkos with fusednequip/kk (the arrays stay on the GPU)
K="-k on g 1 -sf kk -pk kokkos newton on neigh half"
for c in ${cells//,/ }; do
  for rep in $(seq "${REPEATS:-1}"); do
    $B --cells "$c" | sed 's/^{/{"variant": "plain", /' | tee -a "$out/kokkos-bench.jsonl"
    FNQ_NO_KOKKOS_STYLE=1 $B --cells "$c" --lmp-args="$K" | sed 's/^{/{"variant": "kokkos, plain style", /' |
      tee -a "$out/kokkos-bench.jsonl"
    $B --cells "$c" --lmp-args="$K" | sed 's/^{/{"variant": "kokkos, fusednequip\/kk", /' |
      tee -a "$out/kokkos-bench.jsonl"
  done
done
# $STRONG (e.g. 10x10x10,20x20x10: 8,000 and 32,000 atoms): strong scaling on 1, 2, 4 ... GPUs,
# one rank per GPU through NCCL, this lmp without Kokkos (issue 47)
if [ -n "${STRONG:-}" ] && [ "$gpus" -ge 2 ]; then
  for n in 1 2 4 8; do
    [ "$n" -gt "$gpus" ] && break
    $B --cells "$STRONG" --configs "${n}x$(( $(nproc) / gpus > 16 ? 16 : $(nproc) / gpus ))" \
      --comm nccl --steps "${STRONG_STEPS:-100}" | tee -a "$out/strong.jsonl"
  done
fi
