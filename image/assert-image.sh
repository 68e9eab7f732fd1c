#!/usr/bin/env bash
# Build-time assertions: fail the image build, not a GPU job twenty minutes later, when the
# EFA/NCCL stack is broken in a way that would silently fall back to TCP or not run at all.
#   assert-image.sh --slurm-version 26.05.2 [--root DIR]
# With --root, DIR is checked as a root filesystem (the tests' fake roots); libraries are then
# resolved through DIR's /etc/ld.so.conf.d instead of this system's loader cache.
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

# Library directories as the loader sees them (the job environment adds none): the configured
# ones, then the loader's trusted defaults.
mapfile -t libdirs < <({ cat "$ROOT"/etc/ld.so.conf.d/*.conf 2>/dev/null | grep -v '^\s*#'
                         printf '%s\n' /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib /usr/lib; } | sed "s|^|$ROOT|")
search_path=$(IFS=:; echo "${libdirs[*]}")
resolve() {  # resolve NAME: the file the loader would map for a soname, or nothing
  if [ -z "$ROOT" ]; then ldconfig -p | awk -v n="$1" '$1 == n && /x86-64/ {print $NF; exit}'
  else for d in "${libdirs[@]}"; do [ -e "$d/$1" ] && { echo "$d/$1"; return; }; done; fi
}
unresolved() {  # unresolved FILE: the sonames FILE needs that the loader cannot find
  if [ -z "$ROOT" ]; then env -u LD_LIBRARY_PATH ldd "$1" 2>&1 | awk '/not found/ {print $1}'
  else LD_LIBRARY_PATH=$search_path ldd "$1" 2>&1 | awk '/not found/ {print $1}'; fi
}
run() { "$ROOT$1" "${@:2}"; }

# 1. libfabric and its efa provider
fabric=$(resolve libfabric.so.1)
if [ -z "$fabric" ]; then fail "libfabric.so.1 does not resolve (expected in /opt/amazon/efa/lib)"
else ok "libfabric: $fabric"; fi

# 2. fi_info, and the efa provider compiled into libfabric (listed without an EFA device)
if [ ! -x "$ROOT/opt/amazon/efa/bin/fi_info" ]; then fail "fi_info missing (/opt/amazon/efa/bin/fi_info)"
else
  providers=$(run /opt/amazon/efa/bin/fi_info --list 2>&1)  # whole output: no SIGPIPE under pipefail
  if grep -q '^efa' <<< "$providers"; then ok "fi_info lists the efa provider"
  else fail "libfabric has no efa provider (fi_info --list shows: $(tr '\n' ' ' <<< "$providers"))"; fi
fi

# 3. the aws-ofi-nccl plugin: found where the loader looks, every dependency resolved
plugin=$(resolve libnccl-net-ofi.so); [ -n "$plugin" ] || plugin=$(resolve libnccl-net.so)
if [ -z "$plugin" ]; then fail "aws-ofi-nccl plugin (libnccl-net-ofi.so / libnccl-net.so) not found on the loader path"
else
  missing=$(unresolved "$plugin" | tr '\n' ' ')
  if [ -n "$missing" ]; then fail "aws-ofi-nccl plugin $plugin has unresolved libraries: $missing"
  else ok "aws-ofi-nccl plugin: $plugin"; fi
fi

# 4. NCCL's network pinned, so a plugin that cannot load aborts instead of using sockets
if ! grep -qE '^NCCL_NET=(Libfabric|OFI|AWS Libfabric)$' "$ROOT/etc/nccl.conf" 2>/dev/null; then
  fail "/etc/nccl.conf does not pin NCCL_NET to the OFI plugin (silent TCP fallback)"
else ok "NCCL_NET pinned in /etc/nccl.conf"; fi

# 5. the Python stack the jobs use, and libnccl being the one torch loads
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

# 6. slurmd is the configured Slurm release (the chart's slurmctld must match it)
if [ ! -x "$ROOT/usr/sbin/slurmd" ]; then fail "slurmd missing (/usr/sbin/slurmd)"
else
  got=$(run /usr/sbin/slurmd -V 2>&1 | awk '{print $2}')
  if [ "$got" != "$SLURM_VERSION" ]; then fail "slurmd is Slurm '$got', expected $SLURM_VERSION"
  else ok "slurmd $got"; fi
fi

# 7. PMIx: the library and Slurm's mpi/pmix plugin (srun --mpi=pmix)
if [ -z "$(resolve libpmix.so.2)" ]; then fail "libpmix.so.2 does not resolve (PMIx missing)"
else ok "libpmix: $(resolve libpmix.so.2)"; fi
pmix_plugin=$(find "$ROOT"/usr/lib/x86_64-linux-gnu/slurm* "$ROOT"/usr/lib64/slurm "$ROOT"/usr/lib/slurm \
                   "$ROOT"/usr/local/lib/slurm -maxdepth 1 -name 'mpi_pmix*.so' 2>/dev/null | head -n1)
if [ -z "$pmix_plugin" ]; then fail "Slurm's mpi/pmix plugin (mpi_pmix*.so) not found"
else
  missing=$(unresolved "$pmix_plugin" | tr '\n' ' ')
  if [ -n "$missing" ]; then fail "Slurm's pmix plugin $pmix_plugin has unresolved libraries: $missing"
  else ok "mpi/pmix plugin: $pmix_plugin"; fi
fi

if [ "$failures" -gt 0 ]; then echo "assert-image: $failures check(s) failed" >&2; exit 1; fi
echo "assert-image: all checks passed"
