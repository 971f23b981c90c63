#!/usr/bin/env bash
# On the CPU machine (nvcc, no GPU): the CUDA build for sm_90 into build-gpu/, configured as a
# GPU machine's checkout at the same path would be (LAMMPS headers from .lammps-src, the lmp
# that gpu-suite.sh builds there), then only what the GPU tests and benchmarks run is kept:
# objects, static libraries and the CPU-only programs linked against the static library go,
# and the tests' Python becomes the device's `python3`. The ~35 MB that remain travel as a
# carried path, so a device call tests the build without spending its time compiling
# (scripts/gpu/gpu-suite.sh). Needs the checkout at the path the device uses (/work/main).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -f .lammps-src/src/pair.h ] || { echo "carry-build: no .lammps-src (lammps-trim-source.sh)" >&2; exit 1; }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DFNQ_ENABLE_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="${FNQ_CUDA_ARCH:-90}" -DFNQ_LAMMPS_HEADERS="$PWD/.lammps-src/src" \
  -DFNQ_LAMMPS_LMP=/tmp/fnq-lammps/lmp > /dev/null
cmake --build build-gpu -j "$(nproc)"
python=$(sed -n 's/^_Python3_EXECUTABLE:INTERNAL=//p' build-gpu/CMakeCache.txt)
rm -rf build-carry && cp -a build-gpu build-carry
( cd build-carry && find . \( -name '*.o' -o -name '*.a' -o -name 'compiler_depend.*' \) -delete &&
  rm -rf CMakeFiles/[0-9]* */generated &&
  rm -f tests/unit_backend_registry tests/fuzz/fuzz_replay_* )
[ -n "$python" ] && grep -rl --include=CTestTestfile.cmake "$python" build-carry |
  xargs -r sed -i "s#$python#python3#g"
echo "carry-build: build-carry/ is $(du -sh build-carry | cut -f1); carry it as build-gpu:"
echo "  mv build-gpu build-gpu.full && mv build-carry build-gpu   (and back after the call)"
