#!/usr/bin/env bash
# Build-time assertions: fail the image build, not a GPU job twenty minutes later, when the
# EFA/NCCL stack is broken in a way that would silently fall back to TCP or not run at all.
#   assert-image.sh --slurm-version 26.05.5 [--root DIR]
# With --root, DIR is checked as a root filesystem (the tests' fake roots); libraries are then
# resolved through a loader cache ldconfig builds from DIR's /etc/ld.so.conf (image/loader.sh).
set -uo pipefail
ROOT=/
SLURM_VERSION=""
while [ $# -gt 0 ]; do
  case $1 in
    --root) ROOT=$2; shift 2 ;;
    --slurm-version) SLURM_VERSION=$2; shift 2 ;;
    *) echo "usage: $0 --slurm-version X [--root DIR]" >&2; exit 2 ;;
  esac
done
[ -n "$SLURM_VERSION" ] || { echo "usage: $0 --slurm-version X [--root DIR]" >&2; exit 2; }
ROOT=${ROOT%/}
failures=0
fail() { echo "ASSERT FAILED: $*" >&2; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

# shellcheck source=loader.sh
source "$(dirname "$0")/loader.sh"
loader_init "$ROOT"
run() { "$ROOT$1" "${@:2}"; }

# What ld.so would refuse in OBJECT: a NEEDED library that does not resolve, or a symbol version
# its library does not define. The DLC's libraries were built on Amazon Linux 2023 and run on
# this image's Ubuntu libraries: a newer glibc (2.39 against 2.34) defines every older version,
# but a library only Amazon Linux has, or a newer symbol version, fails only when loaded.
load_problems() {
  local missing versions
  missing=$(unresolved "$1" | tr '\n' ' ')
  versions=$(missing_versions "$1" | tr '\n' ' ')
  [ -z "$missing" ] || echo "unresolved libraries: $missing"
  [ -z "$versions" ] || echo "symbol versions not defined here: $versions"
}

# 1. libfabric, loading on this image's libraries, and its efa provider
fabric=$(resolve libfabric.so.1)
if [ -z "$fabric" ]; then fail "libfabric.so.1 does not resolve (expected in /opt/amazon/efa/lib64)"
else
  ok "libfabric: $fabric"
  problems=$(load_problems "$fabric")
  if [ -n "$problems" ]; then fail "libfabric $fabric does not load: $(tr '\n' ' ' <<< "$problems")"
  else ok "libfabric loads on this image's libraries"; fi
fi

# 2. fi_info, and the efa provider compiled into libfabric (listed without an EFA device)
if [ ! -x "$ROOT/opt/amazon/efa/bin/fi_info" ]; then fail "fi_info missing (/opt/amazon/efa/bin/fi_info)"
else
  providers=$(run /opt/amazon/efa/bin/fi_info --list 2>&1)  # whole output: no SIGPIPE under pipefail
  if grep -q '^efa' <<< "$providers"; then ok "fi_info lists the efa provider"
  else fail "libfabric has no efa provider (fi_info --list shows: $(tr '\n' ' ' <<< "$providers"))"; fi
fi

# 3. the aws-ofi-nccl plugin under the name NCCL opens, every dependency resolved. NCCL 2.27-2.29
# (NVIDIA/nccl v2.27.7-1, v2.29.7-1 src/plugin/net.cc, plugin_open.cc) dlopens "libnccl-net.so" unless
# NCCL_NET_PLUGIN is set; a NAME there is tried as given, then as "libnccl-net-NAME.so" (not
# when NAME has a '/' or is already lib*.so). /etc/nccl.conf is where the image sets it.
net_plugin=$(sed -n 's/^NCCL_NET_PLUGIN=//p' "$ROOT/etc/nccl.conf" 2>/dev/null | tail -n1)
names=()
if [ -z "$net_plugin" ]; then names=(libnccl-net.so)
else
  IFS=, read -ra listed <<< "$net_plugin"
  for n in "${listed[@]}"; do
    names+=("$n")
    [[ $n == */* || ( $n == lib* && $n == *.so ) ]] || names+=("libnccl-net-$n.so")
  done
fi
plugin=""
for n in "${names[@]}"; do plugin=$(resolve "$n"); [ -n "$plugin" ] && break; done
if [ -z "$plugin" ]; then
  fail "NCCL's network plugin does not open: none of ${names[*]} resolves through the loader (NCCL_NET_PLUGIN=${net_plugin:-unset} in /etc/nccl.conf)"
else
  problems=$(load_problems "$plugin")
  if [ -n "$problems" ]; then fail "aws-ofi-nccl plugin $plugin has $(tr '\n' ' ' <<< "$problems")"
  else ok "aws-ofi-nccl plugin opens as $n: $plugin"; fi
fi

# 4. NCCL's network pinned, so a plugin that cannot load aborts instead of using sockets
if ! grep -qE '^NCCL_NET=(Libfabric|OFI|AWS Libfabric)$' "$ROOT/etc/nccl.conf" 2>/dev/null; then
  fail "/etc/nccl.conf does not pin NCCL_NET to the OFI plugin (silent TCP fallback)"
else ok "NCCL_NET pinned in /etc/nccl.conf"; fi

# 5. the DLC's venv has an interpreter of its Python minor: pyvenv.cfg's `home` names the
# directory (venv docs, "How venvs work"), `version` (venv) or `version_info` (uv) the release
# the venv was made with; the venv's cp3XX extension modules need that minor.
venv_cfg="$ROOT/opt/venv/pyvenv.cfg"
if [ ! -f "$venv_cfg" ]; then fail "the DLC's venv is missing (/opt/venv/pyvenv.cfg)"
else
  home=$(sed -n 's/^home *= *//p' "$venv_cfg" | head -n1)
  minor=$(sed -nE 's/^version(_info)? *= *([0-9]+\.[0-9]+).*/\2/p' "$venv_cfg" | head -n1)
  if [ -z "$home" ] || [ -z "$minor" ]; then fail "$venv_cfg names no home or version"
  elif [ ! -x "$ROOT$home/python$minor" ]; then
    fail "the venv's interpreter $home/python$minor (Python $minor, pyvenv.cfg) is missing: install python$minor"
  else ok "venv interpreter: $home/python$minor"; fi
fi

# 6. the Python stack the jobs use, and libnccl being the one torch loads
py="$ROOT/usr/local/bin/python3"
if [ ! -x "$py" ]; then fail "python3 missing (/usr/local/bin/python3)"
else
  for m in torch transformers peft trl datasets; do
    err=$("$py" -c "import $m" 2>&1) || fail "python module $m does not import: $(tail -n1 <<< "$err")"
  done
  torch_nccl=$("$py" - <<'PY' 2>/dev/null
import torch  # noqa: F401  (loads libtorch_cuda, which maps libnccl)
with open("/proc/self/maps") as maps:
    print(next((line.split()[-1] for line in maps if "libnccl.so" in line), ""))
PY
)
  system_nccl=$(resolve libnccl.so.2)
  if [ -z "$system_nccl" ]; then fail "libnccl.so.2 does not resolve on the loader path"
  elif [ -z "$torch_nccl" ]; then fail "torch does not load libnccl (CPU-only torch?)"
  elif [ "$(readlink -f "$torch_nccl")" != "$(readlink -f "$system_nccl")" ]; then
    fail "libnccl.so.2 resolves to $system_nccl but torch loads $torch_nccl"
  else ok "libnccl: $system_nccl (torch's own)"; fi
fi

# 7. slurmd is the configured Slurm release (the chart's slurmctld must match it)
if [ ! -x "$ROOT/usr/sbin/slurmd" ]; then fail "slurmd missing (/usr/sbin/slurmd)"
else
  got=$(run /usr/sbin/slurmd -V 2>&1 | awk '{print $2}')
  if [ "$got" != "$SLURM_VERSION" ]; then fail "slurmd is Slurm '$got', expected $SLURM_VERSION"
  else ok "slurmd $got"; fi
fi

# 8. PMIx: Slurm's mpi/pmix plugin and the system OpenMPI load one libpmix.so.2. The plugin does
# not link libpmix; it dlopens it (SchedMD/slurm slurm-26-05-2-1 src/plugins/mpi/pmix/mpi_pmix.c
# _libpmix_open, auxdir/x_ac_pmix.m4): "libpmix.so.2" through its run path when built with rpath
# (the default), else "<PMIXP_LIBPATH>/libpmix.so.2", a directory compiled into the plugin.
pmix_plugin=$(find "$ROOT"/usr/lib/x86_64-linux-gnu/slurm* "$ROOT"/usr/lib64/slurm "$ROOT"/usr/lib/slurm \
                   "$ROOT"/usr/local/lib/slurm -maxdepth 1 -name 'mpi_pmix*.so' 2>/dev/null | sort | head -n1)
slurm_pmix=""
if [ -z "$pmix_plugin" ]; then fail "Slurm's mpi/pmix plugin (mpi_pmix*.so) not found"
else
  if [ -n "$(_run_path "$pmix_plugin")" ]; then slurm_pmix=$(resolve libpmix.so.2 "$pmix_plugin")
  else
    for dir in $(strings "$pmix_plugin" | grep -E '^/[^ ]*$'); do
      [ -e "$ROOT$dir/libpmix.so.2" ] && { slurm_pmix=$ROOT$dir/libpmix.so.2; break; }
    done
    [ -n "$slurm_pmix" ] || slurm_pmix=$(resolve libpmix.so.2)
  fi
  [ -n "$slurm_pmix" ] || fail "libpmix.so.2 that Slurm's $pmix_plugin dlopens does not exist (PMIx missing)"
fi
# The system OpenMPI's objects that link libpmix (Debian/Ubuntu 4.1: the mca_pmix_ext3x component).
ompi_pmix=""
mapfile -t ompi_objects < <(find "$ROOT"/usr/lib/x86_64-linux-gnu/openmpi/lib -name '*.so*' -type f 2>/dev/null | sort)
if [ "${#ompi_objects[@]}" -eq 0 ]; then fail "the system OpenMPI (/usr/lib/x86_64-linux-gnu/openmpi/lib) is missing"
else
  linking=""
  for object in "${ompi_objects[@]}"; do
    readelf -d "$object" 2>/dev/null | grep -q '(NEEDED).*\[libpmix\.so\.2\]' || continue
    linking=$object; ompi_pmix=$(resolve libpmix.so.2 "$object"); break
  done
  if [ -z "$linking" ]; then fail "the system OpenMPI links no libpmix.so.2"
  elif [ -z "$ompi_pmix" ]; then fail "the system OpenMPI's $linking cannot resolve libpmix.so.2"; fi
fi
if [ -n "$slurm_pmix" ] && [ -n "$ompi_pmix" ]; then
  if [ "$(readlink -f "$slurm_pmix")" != "$(readlink -f "$ompi_pmix")" ]; then
    fail "Slurm's mpi/pmix loads $slurm_pmix but the system OpenMPI loads $ompi_pmix: srun --mpi=pmix cannot launch MPI"
  else ok "libpmix: $(readlink -f "$slurm_pmix") for Slurm's mpi/pmix and the system OpenMPI"; fi
fi

if [ "$failures" -gt 0 ]; then echo "assert-image: $failures check(s) failed" >&2; exit 1; fi
echo "assert-image: all checks passed"
