#!/usr/bin/env bash
# The security review's scanners (devkit/security-review-requirements.txt: checkov, parliament) in a
# virtualenv of their own, outside the checkout and outside .venv (checkov pins its own boto3,
# networkx, ... which the program's environment must not inherit). Prints the virtualenv's bin/.
#
# Cached like devkit/cached_install.sh: $SLINKY_EKS_CACHE (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/slinky-eks)/security-review-<key>, the key a hash of the pins,
# this script and the interpreter; built under a flock, complete only once .complete exists, so an
# interrupted build is redone. A warm run costs nothing; a cold one about 40 s with pip's cache.
set -euo pipefail
cd "$(dirname "$0")/.."
requirements=devkit/security-review-requirements.txt
cache=${SLINKY_EKS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/slinky-eks}
python=${PYTHON:-python3}
key=$({ for f in "$requirements" devkit/security_tools.sh; do echo "== $f"; cat "$f"; done
        "$python" -c 'import platform, sys; print(sys.version, platform.machine(), sys.base_prefix)'
      } | sha256sum | cut -c1-16)
dir=$cache/security-review-$key
if [ ! -e "$dir/.complete" ]; then
  mkdir -p "$cache"
  exec 9>"$dir.lock"
  flock 9
  if [ ! -e "$dir/.complete" ]; then
    rm -rf "$dir"
    start=$SECONDS
    "$python" -m venv "$dir"
    # pip's notes about the local package indexes go to a log: the caller reads stdout.
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" \
      >"$dir.log" 2>&1 || { cat "$dir.log" >&2; exit 1; }
    touch "$dir/.complete"
    echo "security-review tools built in $((SECONDS - start)) s ($dir)" >&2
  fi
  flock -u 9
  exec 9>&-
fi
echo "$dir/bin"
