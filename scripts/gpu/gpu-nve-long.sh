#!/usr/bin/env bash
# The multi-GPU issue's long NVE run, 10,000 steps of 512,000 atoms (40^3 cells) on all the
# node's GPUs, which takes longer than one session's device time: bench/bench_drift.py runs
# chunks of 500 steps joined by restart files and stops before the call's budget is spent
# (writing a partial report); this script then returns the run's state (state.json, the logs,
# the last restart: ~45 MB) to $OUT as parts of 15 MiB, since the device returns no file over
# 16 MiB. Copy those parts into .nve-state/ here; a later call on a fresh machine that carries
# .nve-state (with .models/nequix/nequix-mp-1.nqx and .lammps-src, or .lammps-src.tar.xz to stay
# under the 64 MiB carry) unpacks them and continues the same run. A warm machine keeps its
# state in build-gpu/nve-long between calls.
#   usage (device machine): OUT=... FNQ_SECONDS=560 scripts/gpu/gpu-nve-long.sh
#   (FNQ_NVE_CELLS, FNQ_NVE_STEPS, FNQ_NVE_CHUNK: 40, 10000, 500)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
if [ ! -f .lammps-src/src/pair.h ] && [ -f .lammps-src.tar.xz ]; then tar xJf .lammps-src.tar.xz; fi
. scripts/gpu/gpu-multigpu-setup.sh # environment, build, $gpus, $threads, $out, $t0
work=build-gpu/nve-long
if [ ! -f $work/state.json ] && ls .nve-state/nve-state.part-* > /dev/null 2>&1; then
  mkdir -p $work && cat .nve-state/nve-state.part-* | tar x -C $work &&
    echo "continuing the run carried in .nve-state"
fi
left=$(( ${FNQ_SECONDS:-540} - $(date +%s) + t0 ))
python3 bench/bench_drift.py --cells "${FNQ_NVE_CELLS:-40}" --steps "${FNQ_NVE_STEPS:-10000}" \
  --chunk "${FNQ_NVE_CHUNK:-500}" --thermo 50 --ranks "$gpus" --threads "$threads" --comm nccl \
  --lmp /tmp/fnq-lammps/lmp --plugin build-gpu/pair_style/fusednequipplugin.so \
  --workdir $work --max-seconds $(( left - 20 )) --results-dir "$out"
echo "bench_drift rc $?"
# the state back: everything but restarts other than the last (bench_drift removes those)
(cd $work && tar cf - --exclude='*.tmp' .) | split -b 15M -d - "$out/nve-state.part-"
ls -l "$out"
echo "done in $(( $(date +%s) - t0 )) s"
