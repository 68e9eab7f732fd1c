#!/usr/bin/env bash
# Sourced by the build-time assertions: which file the dynamic loader maps for a library name,
# with the loader's own rules rather than a directory listing.
#   loader_init ROOT        ROOT "" is this system; a directory is a root filesystem (tests)
#   resolve NAME [OBJECT]   the file dlopen(NAME) / a NEEDED entry of OBJECT maps, or nothing
#   unresolved OBJECT       OBJECT's NEEDED names that do not resolve
#   missing_versions OBJECT the symbol versions OBJECT needs that the file it resolves for them
#                           does not define ("GLIBC_2.38 from libc.so.6"): what ld.so refuses
#                           with "version `GLIBC_2.38' not found", e.g. for a library built on a
#                           newer distribution than the one it is copied onto
# Order (ld.so(8), dlopen(3)): a NAME with '/' is a path; else OBJECT's DT_RPATH/DT_RUNPATH
# ($ORIGIN expanded), then the cache ldconfig builds from /etc/ld.so.conf, then the trusted
# directories. LD_LIBRARY_PATH is left out on purpose: jobs carry the login pod's environment.
# The cache comes from ldconfig itself, so its rules hold (for one, it does not cache a symlink
# whose name is not the target's soname, such as aws-ofi-nccl 1.15-1.16's libnccl-net.so).

LOADER_ROOT=""
LOADER_CACHE=""
TRUSTED_DIRS=(/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib /usr/lib)

_ldconfig() { if command -v ldconfig >/dev/null; then ldconfig "$@"; else /sbin/ldconfig "$@"; fi; }

# The directories ROOT's /etc/ld.so.conf names, following its include lines (glob relative to ROOT).
_conf_dirs() {
  local file=$1 line pattern f patterns
  [ -f "$LOADER_ROOT$file" ] || return 0
  while read -r line; do
    line=${line%%#*}
    case $line in
      include\ *)
        read -ra patterns <<< "${line#include }"  # split without globbing on this system
        for pattern in "${patterns[@]}"; do
          for f in "$LOADER_ROOT"$pattern; do [ -f "$f" ] && _conf_dirs "${f#"$LOADER_ROOT"}"; done
        done ;;
      /*) echo "$line" ;;
    esac
  done < "$LOADER_ROOT$file"
}

loader_init() {
  LOADER_ROOT=${1%/}
  if [ -z "$LOADER_ROOT" ]; then
    LOADER_CACHE=$(_ldconfig -p)
    return
  fi
  # A cache of ROOT alone: ldconfig over ROOT's configured and trusted directories, written
  # beside them (-X: leave ROOT's links alone), then only the entries inside ROOT.
  local work; work=$(mktemp -d)
  { _conf_dirs /etc/ld.so.conf; printf '%s\n' "${TRUSTED_DIRS[@]}"; } | sed "s|^|$LOADER_ROOT|" > "$work/ld.so.conf"
  _ldconfig -X -f "$work/ld.so.conf" -C "$work/ld.so.cache" 2>/dev/null
  LOADER_CACHE=$(_ldconfig -C "$work/ld.so.cache" -p | grep -F "=> $LOADER_ROOT/")
  rm -rf "$work"
}

# OBJECT's run path directories, root-relative, $ORIGIN expanded.
_run_path() {
  local object=$1 origin entry
  origin=$(dirname "${object#"$LOADER_ROOT"}")
  readelf -d "$object" 2>/dev/null | sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]/\2/p' | tr ':' '\n' |
    while read -r entry; do [ -n "$entry" ] && echo "${entry//\$ORIGIN/$origin}"; done
}

resolve() {
  local name=$1 object=${2:-} dir found
  if [[ $name == */* ]]; then [ -e "$LOADER_ROOT$name" ] && echo "$LOADER_ROOT$name"; return; fi
  if [ -n "$object" ]; then
    while read -r dir; do
      [ -e "$LOADER_ROOT$dir/$name" ] && { echo "$LOADER_ROOT$dir/$name"; return; }
    done < <(_run_path "$object")
  fi
  found=$(awk -v n="$name" '$1 == n && /x86-64/ {print $NF; exit}' <<< "$LOADER_CACHE")
  [ -n "$found" ] && { echo "$found"; return; }
  for dir in "${TRUSTED_DIRS[@]}"; do
    [ -e "$LOADER_ROOT$dir/$name" ] && { echo "$LOADER_ROOT$dir/$name"; return; }
  done
}

unresolved() {
  local object=$1 name
  readelf -d "$object" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | while read -r name; do
    [ -n "$(resolve "$name" "$object")" ] || echo "$name"
  done
}

# The versions a file defines (.gnu.version_d), one a line.
_defined_versions() {
  readelf -V "$1" 2>/dev/null | awk '/^Version definition section/ {d = 1; next}
    /^Version (needs|symbols) section/ {d = 0} d && /Name:/ {print $NF}'
}

missing_versions() {
  local object=$1 file version target
  # .gnu.version_r: a "File: NAME" line, then one "Name: VERSION" line per version from it.
  readelf -V "$object" 2>/dev/null | awk '/^Version needs section/ {n = 1; next}
    /^Version (definition|symbols) section/ {n = 0}
    n && /File:/ {for (i = 1; i <= NF; i++) if ($i == "File:") file = $(i + 1)}
    n && /Name:/ {for (i = 1; i <= NF; i++) if ($i == "Name:") print file, $(i + 1)}' |
    while read -r file version; do
      target=$(resolve "$file" "$object")
      [ -n "$target" ] || continue  # unresolved reports it
      grep -qxF "$version" <(_defined_versions "$target") || echo "$version from $file"
    done
}
