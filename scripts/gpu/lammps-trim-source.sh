#!/usr/bin/env bash
# Make .lammps-src/: the part of a LAMMPS source tarball needed to build an lmp with the PLUGIN
# package (cmake/, src/'s top-level files, fmt/, PLUGIN/, MANYBODY/, MOLECULE/; about 12 MB),
# small enough to carry to a GPU machine that has no LAMMPS and no network, where
# scripts/gpu/gpu-lammps.sh builds it. Never committed (.gitignore).
#   scripts/gpu/lammps-trim-source.sh lammps_20220106.git7586adbb6a+ds1.orig.tar.xz
# (the tarball: `apt-get source --download-only lammps` on Debian 12, as scripts/lammps-headers.sh
# fetches it)
set -euo pipefail
tarball=$(realpath "${1:?usage: lammps-trim-source.sh LAMMPS_SOURCE_TARBALL}")
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xf "$tarball" -C "$work"
top=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
rm -rf .lammps-src
mkdir -p .lammps-src/src
cp -r "$top/cmake" .lammps-src/
find "$top/src" -maxdepth 1 -type f -exec cp {} .lammps-src/src/ \;
for d in fmt PLUGIN MANYBODY MOLECULE; do cp -r "$top/src/$d" .lammps-src/src/; done
du -sh .lammps-src
