#!/usr/bin/env bash
# What `make test` installs, kept outside the checkout so a new clone or worktree reuses it:
#   cached_install.sh venv   the Python environment (requirements.txt + requirements-dev.txt, which
#                            pulls image/finetune-requirements.txt), linked at .venv
#   cached_install.sh cuda   CUDA 13.3 nvcc and NCCL from PyPI wheels (requirements-cuda.txt) laid
#                            out as a CUDA_HOME, linked at .cuda
# Each lives in $SLINKY_EKS_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/slinky-eks)/<kind>/<key>,
# the key a hash of everything that decides its contents: the requirement files, this script and
# the interpreter (version, machine, prefix). A changed input makes a new key; old keys stay
# until removed by hand. One build per key at a time (flock on <key>.lock); a directory counts as
# built only once its .complete marker exists, written last, so an interrupted build is removed
# and redone by the next run. pip's own wheel cache (~/.cache/pip) makes a new key cheap.
#
# Built in place rather than renamed into place: a venv is not relocatable (its bin/ scripts and
# pyvenv.cfg name its path; https://docs.python.org/3.11/library/venv.html, "How venvs work").
# .venv must stay at the checkout's .venv path: Pulumi.yaml's runtime virtualenv.
set -euo pipefail
cd "$(dirname "$0")/.."
# Inputs by their path in the checkout, so that every checkout computes the same key.
self=devkit/$(basename "$0")
cache=${SLINKY_EKS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/slinky-eks}
python=${PYTHON:-python3}
pip_flags=(--quiet --disable-pip-version-check)

key_of() {
  { for f in "$@" "$self"; do echo "== $f"; cat "$f"; done
    "$python" -c 'import platform, sys; print(sys.version, platform.machine(), sys.base_prefix)'
  } | sha256sum | cut -c1-16
}

# linkable NAME: NAME in the checkout may become a link: absent, a link, or a directory an older
# `make test` left there (it holds that make's .installed marker). Anything else is its owner's.
linkable() {
  if [ -d "$1" ] && [ ! -L "$1" ] && [ ! -e "$1/.installed" ]; then
    echo "FAILED: $1 is a directory make test did not write (no $1/.installed); move it away" \
         "so that $1 can link to the cache in $cache" >&2
    exit 1
  fi
}

# link NAME DIR: NAME becomes a link to DIR, replacing what linkable allowed.
link() {
  if [ -d "$1" ] && [ ! -L "$1" ]; then
    rm -rf "$1"
  fi
  ln -sfn "$2" "$1"
}

# build KIND KEY COMMAND...: run COMMAND (which fills $dir) unless $cache/KIND/KEY is complete.
build() {
  local kind=$1 key=$2
  shift 2
  dir=$cache/$kind/$key
  [ -e "$dir/.complete" ] && return 0
  mkdir -p "$cache/$kind"
  exec 9>"$cache/$kind/$key.lock"
  flock 9
  if [ ! -e "$dir/.complete" ]; then
    rm -rf "$dir"
    local start=$SECONDS
    "$@"
    touch "$dir/.complete"
    echo "$kind $key built in $((SECONDS - start)) s ($dir)"
  fi
  flock -u 9
  exec 9>&-
}

venv() {
  "$python" -m venv "$dir"
  "$dir/bin/python" -m pip install "${pip_flags[@]}" -r requirements.txt -r requirements-dev.txt
  # The markers the Makefile's `up` target and older checkouts look for.
  touch "$dir/.runtime" "$dir/.installed"
}

# nvcc's profile looks for its libraries in lib64, the toolkit's name; the wheels use lib.
cuda() {
  .venv/bin/python -m pip install "${pip_flags[@]}" --no-deps --target "$dir" -r requirements-cuda.txt
  ln -s lib "$dir/nvidia/cu13/lib64"
  touch "$dir/.installed"
}

case ${1:-} in
  venv) linkable .venv
        build venv "$(key_of requirements.txt requirements-dev.txt image/finetune-requirements.txt)" venv
        link .venv "$dir" ;;
  cuda) [ -x .venv/bin/python ] || { echo "FAILED: cuda needs .venv first (cached_install.sh venv)" >&2; exit 1; }
        linkable .cuda
        build cuda "$(key_of requirements-cuda.txt)" cuda
        link .cuda "$dir" ;;
  *) echo "usage: $0 venv|cuda (got '${1:-}')" >&2; exit 2 ;;
esac
