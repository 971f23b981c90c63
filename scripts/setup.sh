#!/usr/bin/env bash
# Install what building fusednequip needs on Debian 12 (or Ubuntu), then configure and build
# into ./build. Safe to run again: packages already present are not reinstalled.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake libcjson-dev python3)
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

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${FNQ_CMAKE_ARGS:-} >/dev/null
cmake --build build -j "$(nproc)"
