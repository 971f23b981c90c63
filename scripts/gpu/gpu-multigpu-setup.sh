# Sourced by the scripts that measure on a machine of several GPUs (gpu-multigpu.sh,
# gpu-exchange.sh), from the repository root: the environment (NVLink multicast off, mpirun as
# root, the carried models and libcjson, the system's NCCL), one rank per GPU with up to 16
# threads each ($gpus, $threads), the build (scripts/gpu/gpu-lammps.sh), $out, $t0, and two helpers:
# `capped` runs a command only if 40 s of the budget are left (FNQ_SECONDS, 540), for at most
# FNQ_RUN_SECONDS (150), so that one run that hangs cannot take the rest; `nve_if_time`.
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export FUSEDNEQUIP_MODEL_DIR=${FUSEDNEQUIP_MODEL_DIR:-$PWD/.models}
. scripts/gpu/device-deps.sh # the carried libcjson on the library path
# the system's NCCL, which every earlier device build was given through FNQ_CMAKE_ARGS
[ -z "${FNQ_CMAKE_ARGS:-}" ] && [ -f /usr/lib/x86_64-linux-gnu/libnccl.so ] &&
  export FNQ_CMAKE_ARGS="-DFNQ_NCCL_LIBRARY=/usr/lib/x86_64-linux-gnu/libnccl.so"
out=${OUT:-/tmp} t0=$(date +%s)
gpus=$(nvidia-smi -L | wc -l)
threads=$(( $(nproc) / gpus )); [ "$threads" -gt 16 ] && threads=16
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
nvidia-smi topo -m | head -$(( gpus + 1 ))
bash scripts/gpu/gpu-lammps.sh > /tmp/build.log 2>&1 || { tail -20 /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
capped() {
  local left=$(( ${FNQ_SECONDS:-540} - $(date +%s) + t0 )) cap=${FNQ_RUN_SECONDS:-150}
  [ "$left" -lt 40 ] && { echo "skipped (time): $*"; return 1; }
  timeout $(( left < cap ? left : cap )) "$@"
}
# NVE of $1^3 cells x 1,000 steps on all the GPUs, chunks of $2 steps joined by restarts, with
# what is left of the budget (from 120 s)
nve_if_time() {
  local left=$(( ${FNQ_SECONDS:-540} - $(date +%s) + t0 ))
  [ "$left" -gt 120 ] || { echo "skipped (time): NVE"; return 1; }
  timeout $(( left - 20 )) python3 bench/bench_drift.py --cells "$1" --steps 1000 --chunk "$2" \
    --thermo 50 --ranks "$gpus" --threads "$threads" --comm nccl --lmp /tmp/fnq-lammps/lmp \
    --plugin build-gpu/pair_style/fusednequipplugin.so --results-dir "$out" --fresh | tail -12
}
