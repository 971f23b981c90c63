#!/usr/bin/env bash
# Print the path of a directory with the LAMMPS source headers (src/*.h, src/fmt/*.h) that match
# the installed Debian/Ubuntu LAMMPS (package liblammps-dev), fetching them on first use.
#
# Why: a pair style needs headers that liblammps-dev does not ship (fmt/, neigh_request.h,
# lammpsplugin.h, version.h), and they must be those of the exact version liblammps was built
# from. apt fetches the distribution's own source package; only its headers are kept (2.5 MB,
# under build/lammps-headers/<version>/), never committed. apt runs with private state and
# source lists (deb-src twins of the system's deb entries), so the system's apt configuration
# is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(dpkg-query -W -f='${source:Version}' liblammps-dev 2>/dev/null) || {
  echo "lammps-headers: liblammps-dev is not installed" >&2
  exit 1
}
package=$(dpkg-query -W -f='${source:Package}' liblammps-dev)
dest="$PWD/build/lammps-headers/$version"
if [ -f "$dest/.complete" ]; then
  echo "$dest"
  exit 0
fi

work="$PWD/build/lammps-headers/fetch"
rm -rf "$work" "$dest"
mkdir -p "$work/sources" "$work/lists/partial" "$work/cache/archives/partial" "$dest"

# deb-src entries: the system's deb entries with the type changed
for f in /etc/apt/sources.list.d/*.sources; do
  [ -e "$f" ] && sed -E 's/^Types:.*\bdeb\b.*/Types: deb-src/' "$f" >"$work/sources/$(basename "$f")"
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -e "$f" ] && sed -nE 's/^[[:space:]]*deb([[:space:]])/deb-src\1/p' "$f" >>"$work/sources/system.list"
done
apt_private=(-o "Dir::Etc::SourceList=$work/sources/system.list" -o "Dir::Etc::SourceParts=$work/sources"
  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache")
# as root, download as root too: the unprivileged _apt user cannot write into build/
[ "$(id -u)" -ne 0 ] || apt_private+=(-o "APT::Sandbox::User=root")
touch "$work/sources/system.list"

echo "lammps-headers: fetching the source package $package $version" >&2
apt-get -qq "${apt_private[@]}" update >&2
(cd "$work" && apt-get -qq "${apt_private[@]}" source --download-only "$package=$version" >&2)

tarball=$(ls "$work"/*.orig.tar.* | head -n 1)
tar -xf "$tarball" -C "$dest" --strip-components=2 --no-wildcards-match-slash --wildcards \
  '*/src/*.h' '*/src/fmt/*.h'
[ -f "$dest/pair.h" ] && [ -f "$dest/fmt/format.h" ] || {
  echo "lammps-headers: $tarball has no src/pair.h or src/fmt/format.h" >&2
  exit 1
}
rm -rf "$work"
touch "$dest/.complete"
echo "$dest"
