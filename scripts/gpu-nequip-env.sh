# Device-side environment for bench/bench_nequip_peers.py and bench/make_nequip_peer_model.py
# (source it from the repository root; the GPU machines have no network). Installs the carried
# wheels of .whl/nequip/ (nequip >= 0.7 and what it needs beyond the machine's PyTorch, e3nn
# 0.6, e3nn-jax; lists: bench/NOTES.md) into /tmp/site-nequip, unpacks the OpenEquivariance
# source there (it JIT-builds its extension on first use) and points Python at our library:
# $FNQ_LIBRARY if set, else build-gpu/core/libfusednequip.so (scripts/gpu-build.sh). libcjson
# comes from the .deps/*.deb files when the system has none.
set -e
wheels=${FNQ_NEQUIP_WHEELS:-.whl/nequip}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site-nequip "$wheels"/*.whl
mkdir -p /tmp/site-nequip/oeq && tar xzf "$wheels"/openequivariance-*.tar.gz -C /tmp/site-nequip/oeq
oeq=$(ls -d /tmp/site-nequip/oeq/openequivariance-*/ | head -1)
if [ ! -f /usr/include/cjson/cJSON.h ] && [ -d .deps ] && [ ! -d /tmp/fnq-deps/usr ]; then
  mkdir -p /tmp/fnq-deps && for f in .deps/*.deb; do dpkg -x "$f" /tmp/fnq-deps; done
fi
export PYTHONPATH=/tmp/site-nequip:${oeq%/}:$PWD/python:$PWD/bench
export FNQ_LIBRARY=${FNQ_LIBRARY:-$PWD/build-gpu/core/libfusednequip.so}
export LD_LIBRARY_PATH=/tmp/fnq-deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
set +e
