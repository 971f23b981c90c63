# Device-side environment for bench/bench_nequip_peers.py and bench/make_nequip_peer_model.py
# (source it from the repository root; the GPU machines have no network). Installs the carried
# wheels of .whl/nequip/ (nequip >= 0.7 and what it needs beyond the machine's PyTorch, e3nn
# 0.6, e3nn-jax, OpenEquivariance; lists: bench/NOTES.md) into /tmp/site-nequip and points
# Python at our library: $FNQ_LIBRARY if set, else build-gpu/core/libfusednequip.so
# (scripts/gpu/gpu-build.sh). libcjson comes from the .deps/*.deb files when the system has none.
# OpenEquivariance: its wheel built with its precompiled (stable-ABI) extension, which
# AOTInductor packages load (bench/NOTES.md says how it is made); else its sdist, whose
# precompiled extension is built here once per machine with CMake against this machine's
# PyTorch and CUDA (what `pip wheel` of the sdist does, offline: nanobind from the carried
# wheels; log /tmp/oeq-build.log), the source tree then on PYTHONPATH. If that build fails the
# tree JIT-builds its extension on first use (fine for eager use, not for nequip-compile's
# AOTInductor: that run crashed, 2026-11-24). cuEquivariance (nequip's enable_CuEquivariance):
# the cuequivariance, cuequivariance-torch and cuequivariance-ops(-torch)-cu13 wheels unpacked
# into one tar.xz (cueq-*.tar.xz; the wheels are 74 MB, over what a call carries), unpacked here.
set -e
wheels=${FNQ_NEQUIP_WHEELS:-.whl/nequip}
# once per machine: scripts sourcing this side by side must not reinstall under each other
[ -f /tmp/site-nequip/.fnq-installed ] ||
  { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site-nequip "$wheels"/*.whl && touch /tmp/site-nequip/.fnq-installed; }
for t in "$wheels"/cueq-*.tar.xz; do
  [ -f "$t" ] && [ ! -d /tmp/site-nequip/cuequivariance_torch ] && tar xJf "$t" -C /tmp/site-nequip
done
oeq=
if ! ls "$wheels"/openequivariance-*.whl > /dev/null 2>&1 && \
    ls "$wheels"/openequivariance-*.tar.gz > /dev/null 2>&1; then
  mkdir -p /tmp/site-nequip/oeq
  ls -d /tmp/site-nequip/oeq/openequivariance-*/ > /dev/null 2>&1 ||
    tar xzf "$wheels"/openequivariance-*.tar.gz -C /tmp/site-nequip/oeq
  oeq=$(ls -d /tmp/site-nequip/oeq/openequivariance-*/ | head -1)
  oeq=${oeq%/}
  if [ ! -f "$oeq/openequivariance/_torch/extlib/liboeq_stable_cuda_aoti.so" ]; then
    torchdir=$(python3 -c "import os, torch; print(os.path.dirname(torch.__file__))")
    { PYTHONPATH=/tmp/site-nequip cmake -S "$oeq" -B /tmp/oeq-build -G Ninja \
        -DCMAKE_BUILD_TYPE=Release -DFETCHCONTENT_SOURCE_DIR_LIBTORCH="$torchdir" \
        -DPython_EXECUTABLE="$(command -v python3)" &&
      cmake --build /tmp/oeq-build && cmake --install /tmp/oeq-build; } > /tmp/oeq-build.log 2>&1 ||
      echo "gpu-nequip-env: OpenEquivariance's extension did not build (/tmp/oeq-build.log)" >&2
  fi
  oeq=:$oeq
fi
if [ ! -f /usr/include/cjson/cJSON.h ] && [ -d .deps ] && [ ! -d /tmp/fnq-deps/usr ]; then
  mkdir -p /tmp/fnq-deps && for f in .deps/*.deb; do dpkg -x "$f" /tmp/fnq-deps; done
fi
export PYTHONPATH=/tmp/site-nequip$oeq:$PWD/python:$PWD/bench
export FNQ_LIBRARY=${FNQ_LIBRARY:-$PWD/build-gpu/core/libfusednequip.so}
# OpenEquivariance's AOTInductor library is opened from C++: PyTorch's and its CUDA
# libraries (nvrtc, cublas) must be found by name
torchlibs=$(python3 -c "import os, glob, torch; d = os.path.dirname(torch.__file__); print(':'.join([d + '/lib'] + sorted(glob.glob(os.path.dirname(d) + '/nvidia/*/lib'))))")
export LD_LIBRARY_PATH=/tmp/fnq-deps/usr/lib/x86_64-linux-gnu:$torchlibs:${LD_LIBRARY_PATH:-}
# AOTInductor's wrapper .so carries its own copy of libstdc++'s locale code, and Python opens
# torch (and with it the system libstdc++) privately: the wrapper's std::regex then takes a facet
# by the wrong id and dies with SIGSEGV (bench/NOTES.md, 2026-11-26). One libstdc++ in the global
# scope, preloaded, serves both, and the package loads.
export LD_PRELOAD=$(g++ -print-file-name=libstdc++.so.6)${LD_PRELOAD:+:$LD_PRELOAD}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
set +e
