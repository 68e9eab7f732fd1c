#!/usr/bin/env bash
# Register the accelerator stack with the dynamic linker and pin NCCL's network plugin, so that
# Slurm jobs (which run with the login pod's environment, not this image's ENV) resolve EFA and
# NCCL through /etc/ld.so.conf.d, and a plugin that fails to load aborts NCCL instead of letting
# it fall back to TCP sockets (NCCL_NET: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html;
# the silent fallback: NVIDIA/nccl issue #162).
#   register-libraries.sh [--root DIR]      (DIR: a root filesystem; default /)
set -euo pipefail
ROOT=/
while [ $# -gt 0 ]; do
  case $1 in
    --root) ROOT=$2; shift 2 ;;
    *) echo "usage: $0 [--root DIR]" >&2; exit 2 ;;
  esac
done
ROOT=${ROOT%/}

# The layout of AWS's PyTorch DLC on Amazon Linux 2023 (image/README.md, "DLC"): torch in the
# venv /opt/venv, EFA's RPMs under /opt/amazon/*/lib64.
# torch's own NCCL first: the one nccl-tests links and the one training loads are then the same.
nccl_dir=$(find "$ROOT"/opt/venv/lib/python3*/site-packages/nvidia/nccl/lib -maxdepth 1 \
             -name 'libnccl.so.2' -printf '%h\n' 2>/dev/null | head -n1 || true)
# The directory that holds libfabric: lib64 where the EFA installer installs RPMs, lib where debs.
fabric_dir=""
for d in /opt/amazon/efa/lib64 /opt/amazon/efa/lib; do
  if [ -e "$ROOT$d/libfabric.so.1" ]; then fabric_dir=$d; break; fi
done
# The EFA installer moved the plugin between these: lib64 from EFA 1.44 (aws/deep-learning-containers
# scripts/docker/common/install_efa_amzn2023.sh), lib/x86_64-linux-gnu and lib before (awslabs/awsome-distributed-ai
# micro-benchmarks/nccl-tests/nccl-tests.Dockerfile keeps both on its library path): take whichever
# holds it.
plugin_dir=""
for d in /opt/amazon/ofi-nccl/lib64 /opt/amazon/ofi-nccl/lib /opt/amazon/ofi-nccl/lib/x86_64-linux-gnu; do
  if [ -e "$ROOT$d/libnccl-net-ofi.so" ] || [ -e "$ROOT$d/libnccl-net.so" ]; then plugin_dir=$d; break; fi
done
[ -n "$nccl_dir" ] || { echo "register-libraries: torch's libnccl.so.2 not found (/opt/venv/lib/python3*/site-packages/nvidia/nccl/lib)" >&2; exit 1; }
[ -n "$fabric_dir" ] || { echo "register-libraries: libfabric.so.1 not found (/opt/amazon/efa/lib64 or lib)" >&2; exit 1; }
[ -n "$plugin_dir" ] || { echo "register-libraries: aws-ofi-nccl plugin not found" >&2; exit 1; }

mkdir -p "$ROOT/etc/ld.so.conf.d"
# /opt/amazon/openmpi stays off this list on purpose: jobs use the system OpenMPI, which links the
# same libpmix as Slurm's mpi_pmix plugin; two libmpi.so.40 on the path would shadow each other.
printf '%s\n' "${nccl_dir#"$ROOT"}" "$fabric_dir" "$plugin_dir" /usr/local/cuda/lib64 /usr/local/lib \
  > "$ROOT/etc/ld.so.conf.d/00-slinky-eks.conf"
if [ "$ROOT" = "" ]; then ldconfig; fi

# NCCL reads /etc/nccl.conf whatever the job's environment (NVIDIA/nccl v2.27.7-1
# src/misc/param.cc). NCCL_NET_PLUGIN=ofi makes NCCL open libnccl-net-ofi.so, the plugin's real
# file: its default name libnccl-net.so is, in aws-ofi-nccl 1.15-1.16, a symlink that ldconfig
# does not cache (aws/aws-ofi-nccl src/Makefile.am, v1.16.0). "Libfabric" is the plugin's
# network name since aws-ofi-nccl 1.12 (aws/aws-ofi-nccl src/nccl_ofi_interface_nvidia.cpp, v1.21.1).
{ grep -vE '^NCCL_NET(_PLUGIN)?=' "$ROOT/etc/nccl.conf" 2>/dev/null || true
  echo "NCCL_NET_PLUGIN=ofi"; echo "NCCL_NET=Libfabric"; } > "$ROOT/etc/nccl.conf.new"
mv "$ROOT/etc/nccl.conf.new" "$ROOT/etc/nccl.conf"
echo "register-libraries: $(tr '\n' ' ' < "$ROOT/etc/ld.so.conf.d/00-slinky-eks.conf")"
