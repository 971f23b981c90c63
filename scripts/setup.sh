#!/usr/bin/env bash
# Install what building fusednequip needs on Debian 12 (or Ubuntu), then configure and build
# into ./build: the library, the command-line tool and the LAMMPS pair style (against the
# distribution's LAMMPS, with its source headers from scripts/lammps-headers.sh). With --python,
# also make build/venv with the packages the Python tests use (ASE, NumPy, pytest, from the
# package registry), and install Debian's torch and PyYAML for the system Python, which the
# NequIP 0.6 converter test uses, and build/torchsim-venv (torch, torch-sim) for the TorchSim
# interface test. Safe to run again.
#
# FNQ_ENABLE_CUDA=AUTO|ON|OFF (default AUTO: the CUDA backend is built where nvcc is found)
# and FNQ_TARGETS (default: everything; e.g. "lmp_fusednequip") choose what is built;
# FNQ_CMAKE_ARGS adds CMake arguments.
set -euo pipefail
cd "$(dirname "$0")/.."

with_python=0
[ "${1:-}" = "--python" ] && with_python=1

packages=(build-essential cmake libcjson-dev python3 python3-venv
  lammps liblammps-dev openmpi-bin libopenmpi-dev)
if ((with_python)); then packages+=(python3-torch python3-yaml python3-numpy); fi
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake_args=(-DCMAKE_BUILD_TYPE=Release -DFNQ_LAMMPS_HEADERS="$(scripts/lammps-headers.sh)"
  -DFNQ_ENABLE_CUDA="${FNQ_ENABLE_CUDA:-AUTO}")
if ((with_python)); then
  if [ ! -f build/venv/.fnq-ready ]; then
    echo "setup: creating build/venv (ase, numpy, pytest)"
    mkdir -p build
    python3 -m venv build/venv
    build/venv/bin/pip install -q --upgrade pip
    build/venv/bin/pip install -q "ase>=3.23,<4" "numpy>=1.24" "pytest>=7"
    # the SevenNet checkpoints the sevenn fixture test converts (files only: torch is Debian's)
    build/venv/bin/pip install -q --no-deps "sevenn==0.13.0"
    touch build/venv/.fnq-ready
  fi
  cmake_args+=(-DPython3_EXECUTABLE="$PWD/build/venv/bin/python")
  # TorchSim's interface test (python_torchsim) in its own venv: torch-sim pins its torch, and
  # the library and its other tests stay torch-free. PyPI's torch is its CUDA build (~3 GB with
  # the NVIDIA libraries, 2-4 minutes); FNQ_TORCHSIM=0 leaves it out (the test then is disabled)
  if [ "${FNQ_TORCHSIM:-1}" != 0 ]; then
    if [ ! -f build/torchsim-venv/.fnq-ready ]; then
      echo "setup: creating build/torchsim-venv (torch-sim-atomistic 0.3.0, pytest)"
      python3 -m venv build/torchsim-venv
      build/torchsim-venv/bin/pip install -q --upgrade pip
      build/torchsim-venv/bin/pip install -q "torch-sim-atomistic==0.3.0" "ase>=3.23,<4" "pytest>=7"
      touch build/torchsim-venv/.fnq-ready
    fi
    cmake_args+=(-DFNQ_TORCHSIM_PYTHON="$PWD/build/torchsim-venv/bin/python")
  fi
fi

cmake -S . -B build "${cmake_args[@]}" ${FNQ_CMAKE_ARGS:-} >/dev/null
targets=()
for t in ${FNQ_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build build -j "$(nproc)" "${targets[@]}"
