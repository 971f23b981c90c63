#!/usr/bin/env bash
# Build with the CUDA backend into build-gpu/ on a GPU machine. Where libcjson is not installed
# and no package manager can reach the network (the lent GPU machines), Debian's libcjson .deb
# files carried in .deps/ are unpacked under /tmp/fnq-deps instead.
set -euo pipefail
cd "$(dirname "$0")/.."
extra=()
if [ ! -f /usr/include/cjson/cJSON.h ] && [ -d .deps ]; then
  mkdir -p /tmp/fnq-deps
  for f in .deps/*.deb; do dpkg -x "$f" /tmp/fnq-deps; done
  extra+=(-DCMAKE_INCLUDE_PATH=/tmp/fnq-deps/usr/include
          -DCMAKE_LIBRARY_PATH=/tmp/fnq-deps/usr/lib/x86_64-linux-gnu)
fi
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DFNQ_ENABLE_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="${FNQ_CUDA_ARCH:-90}" "${extra[@]}" ${FNQ_CMAKE_ARGS:-} >/dev/null
cmake --build build-gpu -j "$(nproc)"
