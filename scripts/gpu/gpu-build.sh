#!/usr/bin/env bash
# Build with the CUDA backend into build-gpu/ on a GPU machine. Where libcjson is not installed
# and no package manager can reach the network (the lent GPU machines), Debian's libcjson .deb
# files carried in .deps/ are unpacked under /tmp/fnq-deps instead.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/gpu/device-deps.sh # extra: CMake arguments for the carried libcjson
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DFNQ_ENABLE_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="${FNQ_CUDA_ARCH:-90}" "${extra[@]}" ${FNQ_CMAKE_ARGS:-} >/dev/null
cmake --build build-gpu -j "$(nproc)"
