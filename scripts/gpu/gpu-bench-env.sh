# Device-side environment for bench/bench_peers.py (source it from the repository root after
# scripts/gpu/gpu-build.sh): installs the carried peer wheels (.whl/) into /tmp/site, unpacks the
# OpenEquivariance source (it JIT-builds its extension on first use) and points Python at
# our library.
set -e
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/nequix-*.whl .whl/e3nn_jax-*.whl .whl/jraph-*.whl .whl/matscipy-*.whl .whl/ase-3*.whl .whl/ase_db_backends-*.whl
mkdir -p /tmp/oeq && tar xzf .whl/openequivariance-0.7.0.tar.gz -C /tmp/oeq
export PYTHONPATH=/tmp/site:/tmp/oeq/openequivariance-0.7.0:$PWD/python
export FNQ_LIBRARY=$PWD/build-gpu/core/libfusednequip.so LD_LIBRARY_PATH=/tmp/fnq-deps/usr/lib/x86_64-linux-gnu
export FUSEDNEQUIP_MODEL_DIR=$PWD/.models PYTHONUNBUFFERED=1
set +e
