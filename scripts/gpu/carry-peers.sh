#!/usr/bin/env bash
# On the CPU machine: what gpu-sevenn-batch.sh carries beside the build, made from the package
# registry (the GPU machines have no network; a call carries 64 MiB in all):
#   build-cmp/sevenn-lite  the sevenn 0.13.0 package with its checkpoints rewritten without their
#                          optimizer and scheduler state (10-14 -> 3.5-5 MB each) and without
#                          its LAMMPS/D3 shared objects, which the device never opens
#   build-cmp/peer         the pure-Python or py3.12 wheels sevenn, nequix, nequip 0.19.1 (to make
#                          the OAM-L-like model there: bench/make_nequip_peer_model.py, 40 s on
#                          this 2-core VM) and the benchmarks need beyond the device's torch,
#                          lightning, JAX and numpy, and OpenEquivariance's sdist
#   .models/nequix         nequix-mp-1 only (the other Nequix models would pass 64 MiB)
# Needs a Python with torch to rewrite the checkpoints: $TORCH_PYTHON, else a CPU-torch venv made
# once in /tmp/sevenn-venv.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${TORCH_PYTHON:-/tmp/sevenn-venv/bin/python}
if ! "$py" -c "import torch" 2> /dev/null; then
  python3 -m venv /tmp/sevenn-venv
  /tmp/sevenn-venv/bin/pip install -q --index-url https://download.pytorch.org/whl/cpu torch
  py=/tmp/sevenn-venv/bin/python
fi
dl=$(mktemp -d); trap 'rm -rf "$dl"' EXIT
"$py" -m pip download -q --no-deps -d "$dl" sevenn==0.13.0
rm -rf build-cmp/sevenn-lite && mkdir -p build-cmp/sevenn-lite
"$py" -m zipfile -e "$dl"/sevenn-0.13.0-*.whl build-cmp/sevenn-lite
pkg=build-cmp/sevenn-lite/sevenn
find "$pkg" -name '*.so' -delete
"$py" - "$pkg"/pretrained_potentials <<'EOF'
import glob, sys, torch
for path in glob.glob(sys.argv[1] + "/*/*.pth"):
    ck = torch.load(path, map_location="cpu", weights_only=False)
    for key in ("optimizer_state_dict", "scheduler_state_dict"):
        ck.pop(key, None)
    torch.save(ck, path)
EOF
P="--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
rm -rf build-cmp/peer && mkdir -p build-cmp/peer
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $P \
  -d build-cmp/peer ase==3.29.0 braceexpand e3nn==0.6.0 matscipy==1.3.1 nanobind opt_einsum \
  opt_einsum_fx platformdirs torch_geometric tqdm nequix==0.4.5 e3nn-jax==0.21.0 jraph \
  nequip==0.19.1 hydra-core==1.3.8 omegaconf==2.3.1 lmdb==3.0.0
"$py" -m pip wheel -q --no-deps -w build-cmp/peer antlr4-python3-runtime==4.9.3  # an sdist only
"$py" -m pip download -q --no-deps --no-binary=:all: -d build-cmp/peer openequivariance==0.7.0
mkdir -p .models/nequix && cp ../shared/models/nequix/nequix-mp-1.nqx .models/nequix/
du -sh build-cmp/sevenn-lite build-cmp/peer .models
