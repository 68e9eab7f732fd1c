#!/usr/bin/env bash
# Build-time assertions for container jobs: fail the image build, not the first
# `srun --container-image` on the cluster, when pyxis, enroot or the GPU hook's CLI is not what
# the pins say.
#   assert-containers.sh --slurm-version 26.05.5 --pyxis-version 0.24.0 --enroot-version 4.1.2
#                        --nvidia-container-cli-version 1.17.8 [--root DIR]
# With --root, DIR is checked as a root filesystem (the tests' stand-in roots, the test root).
set -uo pipefail
ROOT=/
SLURM_VERSION="" PYXIS_VERSION="" ENROOT_VERSION="" CLI_VERSION=""
usage() {
  echo "usage: $0 --slurm-version X --pyxis-version X --enroot-version X --nvidia-container-cli-version X [--root DIR]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case $1 in
    --root) ROOT=$2 ;;
    --slurm-version) SLURM_VERSION=$2 ;;
    --pyxis-version) PYXIS_VERSION=$2 ;;
    --enroot-version) ENROOT_VERSION=$2 ;;
    --nvidia-container-cli-version) CLI_VERSION=$2 ;;
    *) usage ;;
  esac
  shift 2
done
[ -n "$SLURM_VERSION" ] && [ -n "$PYXIS_VERSION" ] && [ -n "$ENROOT_VERSION" ] && [ -n "$CLI_VERSION" ] || usage
ROOT=${ROOT%/}
failures=0
fail() { echo "ASSERT FAILED: $*" >&2; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

# Where plugstack.conf's `required` line names the plugin (model/builders/containers.py
# PYXIS_PLUGIN; tests/unit/image/test_container_assertions.py holds the two equal).
PYXIS_PLUGIN=/usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so
# The library that carries the SPANK API and Slurm's logging for plugins: slurm-smd's (Slinky's
# image) or Debian's slurm-wlm layout (the test root).
LIBSLURM_DIRS=(/usr/lib/x86_64-linux-gnu/slurm /usr/lib/x86_64-linux-gnu/slurm-wlm)

# The unsigned 32-bit value of data symbol NAME in ELF object FILE: its address, less its
# section's address, plus that section's offset in the file (readelf -Ws, -SW).
symbol_value() {
  local file=$1 name=$2 addr ndx saddr soff
  read -r addr ndx < <(readelf -Ws "$file" 2>/dev/null | awk -v n="$name" '$8 == n || index($8, n "@") == 1 { print $2, $7; exit }')
  [ -n "${ndx:-}" ] || return 1
  read -r _ _ saddr soff _ < <(readelf -SW "$file" | sed -n "s/^ *\[ *$ndx\] *//p")
  [ -n "${soff:-}" ] || return 1
  od -An -tu4 -j $((0x$addr - 0x$saddr + 0x$soff)) -N4 "$file" | tr -d ' '
}

# 1. pyxis: the plugin where plugstack.conf names it, at its pin.
plugin=$ROOT$PYXIS_PLUGIN
if [ ! -s "$plugin" ]; then fail "pyxis's plugin is missing ($PYXIS_PLUGIN, where plugstack.conf names it)"
else
  if grep -qaF "pyxis: version v$PYXIS_VERSION" "$plugin"; then ok "pyxis $PYXIS_VERSION at $PYXIS_PLUGIN"
  else fail "$PYXIS_PLUGIN is not pyxis $PYXIS_VERSION (no 'pyxis: version v$PYXIS_VERSION' in it)"; fi

  # 2. ...built for this Slurm: every symbol it leaves to the process that loads it (undefined,
  # unversioned: not the C library's) is one this root's libslurmfull defines, and its
  # plugin_version is this Slurm's SLURM_VERSION_NUMBER, which Slurm's plugin loader compares
  # (slurm/slurm_version.h: (major << 16) + (minor << 8) + micro).
  libslurm=""
  for dir in "${LIBSLURM_DIRS[@]}"; do
    [ -e "$ROOT$dir/libslurmfull.so" ] && { libslurm=$ROOT$dir/libslurmfull.so; break; }
  done
  if [ -z "$libslurm" ]; then fail "libslurmfull.so is missing (looked in ${LIBSLURM_DIRS[*]})"
  else
    defined=$(nm -D --defined-only "$libslurm" | awk '{ sub(/@.*/, "", $3); print $3 }' | sort -u)
    needed=$(nm -D --undefined-only "$plugin" | awk '$1 == "U" && $2 !~ /@/ { print $2 }' | sort -u)
    missing=$(comm -23 <(echo "$needed") <(echo "$defined") | grep . | paste -sd' ' -)
    if [ -z "$needed" ]; then fail "$PYXIS_PLUGIN needs nothing from Slurm: not a SPANK plugin"
    elif [ -n "$missing" ]; then fail "$PYXIS_PLUGIN needs symbols ${libslurm#"$ROOT"} does not define: $missing"
    else ok "pyxis's $(wc -w <<< "$needed") Slurm symbols are defined by ${libslurm#"$ROOT"}"; fi
  fi
  IFS=. read -r major minor micro <<< "$SLURM_VERSION"
  want=$(( (10#$major << 16) + (10#$minor << 8) + 10#${micro:-0} ))
  got=$(symbol_value "$plugin" plugin_version) || got=""
  if [ -z "$got" ]; then fail "$PYXIS_PLUGIN has no plugin_version symbol"
  elif [ "$got" != "$want" ]; then
    fail "$PYXIS_PLUGIN was built for Slurm $(printf '%d.%02d.%d' $((got >> 16)) $(((got >> 8) & 255)) $((got & 255))), this image runs $SLURM_VERSION"
  else ok "pyxis built for Slurm $SLURM_VERSION (plugin_version $got)"; fi
fi

# 3. enroot at its pin, and the helpers a `docker://` import runs with the capabilities of
# enroot's Makefile setcap target (NVIDIA/enroot v4.1.2).
if [ ! -x "$ROOT/usr/bin/enroot" ]; then fail "enroot is missing (/usr/bin/enroot)"
else
  # enroot sources its library from ENROOT_LIBRARY_PATH (the environment's first: enroot.in
  # config::export), here the checked root's.
  got=$(ENROOT_LIBRARY_PATH="$ROOT/usr/lib/enroot" "$ROOT/usr/bin/enroot" version 2>&1)
  if [ "$got" != "$ENROOT_VERSION" ]; then fail "enroot version says '$got', the pin is $ENROOT_VERSION"
  else ok "enroot $got"; fi
fi
for expected in "enroot-mksquashovlfs cap_sys_admin=ep" "enroot-aufs2ovlfs cap_sys_admin,cap_mknod=ep"; do
  helper=/usr/bin/${expected%% *} caps=${expected#* }
  if [ ! -e "$ROOT$helper" ]; then fail "enroot's helper $helper is missing"; continue; fi
  # getcap prints "FILE CAPS" (libcap 2.4x and later) or "FILE = CAPS" with +ep (older).
  got=$(getcap "$ROOT$helper" | sed -e "s|^$ROOT$helper *=* *||" -e 's/+ep$/=ep/')
  if [ "$got" != "$caps" ]; then fail "$helper has capabilities '${got:-none}', enroot+caps gives it $caps"
  else ok "$helper $caps"; fi
done

# 4. The GPU hook enabled, and the nvidia-container-cli it calls at its pin.
if [ ! -x "$ROOT/etc/enroot/hooks.d/98-nvidia.sh" ]; then fail "enroot's GPU hook is not enabled (/etc/enroot/hooks.d/98-nvidia.sh)"
else ok "enroot's GPU hook enabled"; fi
cli=""
for dir in /usr/bin /usr/local/bin; do [ -x "$ROOT$dir/nvidia-container-cli" ] && { cli=$ROOT$dir/nvidia-container-cli; break; }; done
if [ -z "$cli" ]; then fail "nvidia-container-cli is missing (libnvidia-container-tools), which enroot's GPU hook calls"
else
  version=$("$cli" --version 2>&1)
  if grep -qx "cli-version: $CLI_VERSION" <<< "$version"; then ok "nvidia-container-cli $CLI_VERSION"
  else fail "nvidia-container-cli is not $CLI_VERSION: $(head -n1 <<< "$version")"; fi
fi

if [ "$failures" -gt 0 ]; then echo "assert-containers: $failures check(s) failed" >&2; exit 1; fi
echo "assert-containers: all checks passed"
