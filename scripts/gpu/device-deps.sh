# Sourced by the device scripts (gpu-build.sh, cpu-bench-peers.sh): on a machine without
# libcjson-dev, unpack the carried .deps/*.deb into /tmp/fnq-deps and set `extra` to the CMake
# arguments that find it (and the library path that loads it); else `extra` is empty.
extra=()
if [ ! -f /usr/include/cjson/cJSON.h ] && [ -d .deps ]; then
  mkdir -p /tmp/fnq-deps
  for f in .deps/*.deb; do dpkg -x "$f" /tmp/fnq-deps; done
  extra+=(-DCMAKE_INCLUDE_PATH=/tmp/fnq-deps/usr/include
          -DCMAKE_LIBRARY_PATH=/tmp/fnq-deps/usr/lib/x86_64-linux-gnu)
  export LD_LIBRARY_PATH=/tmp/fnq-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
