#!/usr/bin/env bash
# The root filesystems the test clusters' daemons run in (tests/support/local_slurm.py): Debian unstable
# with Slurm 26.05 (what the cluster runs) and trixie with Slurm 24.11 + PMIx + OpenMPI. Both need
# a newer glibc than this machine's Debian 12, hence whole roots rather than host packages.
#
# Usage: build-roots.sh [DIR]   (default build/slurm-roots, where tests/support/local_slurm.py looks)
# The roots live outside the checkout, so every clone and worktree shares them: in
# $SLINKY_EKS_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/slinky-eks)/slurm-roots/<suite>-<key>,
# the key the hash of its package list and this script (the stamp inside holds all of it), and
# DIR/<suite> links there. A changed input makes a new key. One build per key at a time (flock on
# <suite>-<key>.lock). Built into a temporary directory and renamed, so an interrupted build never
# leaves a half root behind a valid stamp.
#
# A suite may also build software from pinned upstream archives: roots/<suite>.sources lists them
# as `sha256sum -c` reads them, roots/<suite>.build is run inside the root in a directory holding
# them (sid: pyxis and enroot). The archives come from the reference data's src/, found as
# devkit/reference_data.py finds it: $SLINKY_EKS_REF, ../shared/ref beside the checkout, the cache.
# The build script runs the slurmd image's own recipe (image/container-runtime.sh, which
# image/Dockerfile runs too), copied in beside it. All three files are part of the key.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../build/slurm-roots}
cache=${SLINKY_EKS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/slinky-eks}/slurm-roots
# The mirror is a dated snapshot whose Release file has expired.
mirror=${SLURM_ROOT_MIRROR:-http://deb.debian.org/debian}
# pyxis and enroot as the slurmd image builds them (a suite's build script runs it).
recipe=$here/../../image/container-runtime.sh

[ "$(id -u)" = 0 ] || { echo "building the Slurm roots needs root (mmdebstrap, chroot)" >&2; exit 1; }
if ! command -v mmdebstrap >/dev/null; then
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mmdebstrap >/dev/null
fi
mkdir -p "$out" "$cache"
ref_src() {
  local dir
  for dir in ${SLINKY_EKS_REF:+"$SLINKY_EKS_REF"} "$here/../../../shared/ref" "$cache/../ref"; do
    [ -d "$dir/src" ] && { (cd "$dir/src" && pwd); return; }
  done
  echo "no reference data with src/ (looked at \$SLINKY_EKS_REF, ../shared/ref, $cache/../ref)" >&2
  return 1
}

for list in "$here"/roots/*.packages; do
  suite=$(basename "$list" .packages)
  build=$here/roots/$suite.build sources=$here/roots/$suite.sources
  hooks=() inputs=()
  if [ -f "$build" ]; then
    if [ ! -f "$recipe" ]; then
      echo "FAILED: $suite root: its build runs the image's recipe $recipe, which is missing" >&2
      exit 1
    fi
    inputs=("$build" "$sources" "$recipe")
    src=$(ref_src)
    if ! (cd "$src" && sha256sum --quiet -c "$sources" >&2); then
      echo "FAILED: $suite root: the archives in $src do not match $sources" >&2
      exit 1
    fi
    # copy-in and chroot: mmdebstrap(1) HOOKS; "$1" is the root being built.
    hooks=(--customize-hook="mkdir \"\$1/usr/src/build\""
      --customize-hook="copy-in $(cut -d' ' -f3 "$sources" | sed "s|^|$src/|" | paste -sd' ' -) $build $recipe /usr/src/build"
      --customize-hook="chroot \"\$1\" sh -c 'cd /usr/src/build && sh ./$suite.build'"
      --customize-hook="rm -rf \"\$1/usr/src/build\"")
  fi
  stamp=$(cat "$0" "$list" ${inputs[@]+"${inputs[@]}"} | sha256sum | cut -d' ' -f1)
  key=$suite-${stamp:0:16}
  root=$cache/$key
  exec 9>"$cache/$key.lock"
  flock 9
  if [ "$(cat "$root/.slinky-stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "Slurm root $suite up to date ($root)"
  else
    packages=$(grep -v '^#' "$list" | grep -v '^$' | paste -sd, -)
    work=$cache/.$key.new
    log=$cache/$key.log
    rm -rf "$work"
    start=$(date +%s)
    if ! mmdebstrap --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' \
         --include="$packages" ${hooks[@]+"${hooks[@]}"} "$suite" "$work" "$mirror" >"$log" 2>&1; then
      rm -rf "$work"
      missing=$(grep -oE "Version '[^']+' for '[^']+' was not found" "$log" | sort -u | paste -sd';' - || true)
      if [ -n "$missing" ]; then
        echo "FAILED: $suite root: the mirror no longer has the pinned package ($missing); see $list" >&2
      else
        echo "FAILED: mmdebstrap $suite (log: $log):" >&2
        tail -5 "$log" >&2
      fi
      exit 1
    fi
    echo "$stamp" >"$work/.slinky-stamp"
    rm -rf "$root"
    mv "$work" "$root"
    echo "Slurm root $suite built in $(($(date +%s) - start)) s ($root)"
  fi
  flock -u 9
  exec 9>&-
  # A root an older version of this script built in place is replaced by the link.
  if [ -d "$out/$suite" ] && [ ! -L "$out/$suite" ]; then
    rm -rf "${out:?}/$suite"
  fi
  ln -sfn "$root" "$out/$suite"
done
