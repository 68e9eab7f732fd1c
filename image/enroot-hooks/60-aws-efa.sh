#!/usr/bin/env bash
# slinky-eks: the node's EFA user space inside every container started on a node with EFA devices.
#
# An enroot pre-start hook (NVIDIA/enroot v4.1.2 doc/configuration.md, "Pre-start hook scripts"):
# run by bash, with full capabilities, before the container switches to its root, with the job's
# environment (pyxis hands it to enroot less a deny list: NVIDIA/pyxis v0.24.0
# pyxis_slurmstepd.c, enroot_deny_env) and ENROOT_ROOTFS, ENROOT_MOUNTS and ENROOT_ENVIRON. The
# lines it appends to $ENROOT_MOUNTS are mounted after the hooks (src/runtime.sh, runtime::_do_hooks);
# $ENROOT_ENVIRON is the container's environment, the image's own first (its /etc/environment,
# runtime::_do_environ), loaded line by line with the last value of a name winning
# (bin/common.h, load_environment). As the GPU hook (conf/hooks/98-nvidia.sh) brings the driver,
# this one brings the fabric: enroot's standard hooks bring no EFA library (doc/standard-hooks.md;
# 99-mellanox.sh is for Mellanox HCAs only).
#
# What a container's NCCL needs for EFA: libfabric with its efa provider (/opt/amazon/efa) and the
# aws-ofi-nccl network plugin (/opt/amazon/ofi-nccl), built against libfabric and hwloc
# (aws/aws-ofi-nccl v1.21.1 README.md and INSTALL.md: Libfabric v1.18.0 or newer and HWLOC;
# configure.ac, CHECK_PKG_HWLOC), which NCCL dlopens by NCCL_NET_PLUGIN's name
# through the dynamic loader's search path (NVIDIA/nccl v2.29.7-1 src/plugin/plugin_open.cc,
# src/plugin/net.cc; image/assert-image.sh step 3). The loader's path in the container is the
# image's LD_LIBRARY_PATH, which pyxis lets win over the job's (pyxis_slurmstepd.c,
# spank_import_container_env), and the job's LD_LIBRARY_PATH never reaches enroot (the deny list):
# so the directories are prepended here, to the image's own value. NCCL reads the container's
# /etc/nccl.conf, not the node's: the node's plugin name is passed on unless the job or the
# image names one. The container must bring what these link from the system (libibverbs with
# rdma-core's efa provider, libhwloc): jobs/container-sanity.sbatch checks that in the container.
set -euo pipefail
shopt -s nullglob

efa=/opt/amazon/efa
ofi=/opt/amazon/ofi-nccl
# EFA devices in this pod: the EFA device plugin gives the pod /dev/infiniband/uverbs*
# (aws-efa-k8s-device-plugin), and enroot binds the pod's /dev into the container
# (conf/mounts/10-system.fstab). None: nothing to bring.
devices=(/dev/infiniband/uverbs*)
[ "${#devices[@]}" -gt 0 ] || exit 0
# An image with its own libfabric where the EFA installer puts it (AWS's Deep Learning Containers
# carry libfabric and aws-ofi-nccl there, built against the image's own CUDA and NCCL) keeps its own:
# the node's copies are for images that bring none.
own=("$ENROOT_ROOTFS$efa"/lib*/libfabric.so*)
[ "${#own[@]}" -eq 0 ] || exit 0

libraries=()
for dir in "$efa/lib64" "$efa/lib" "$ofi/lib64" "$ofi/lib"; do
  [ -d "$dir" ] && libraries+=("$dir")
done
if [ ! -d "$efa" ] || [ ! -d "$ofi" ] || [ "${#libraries[@]}" -eq 0 ]; then
  echo "60-aws-efa.sh: this node has EFA devices but no $efa and $ofi libraries to give the container" >&2
  exit 1
fi

printf '%s %s none x-create=dir,bind,ro,nosuid,nodev,private\n' "$efa" "$efa" "$ofi" "$ofi" >> "$ENROOT_MOUNTS"

image_path=$(sed -n 's/^LD_LIBRARY_PATH=//p' "$ENROOT_ENVIRON" | tail -n1)
joined=$(IFS=:; echo "${libraries[*]}")
echo "LD_LIBRARY_PATH=$joined${image_path:+:$image_path}" >> "$ENROOT_ENVIRON"

if [ -z "${NCCL_NET_PLUGIN+set}" ] && [ -r /etc/nccl.conf ] && ! grep -q '^NCCL_NET_PLUGIN=' "$ENROOT_ENVIRON"; then
  plugin=$(sed -n 's/^NCCL_NET_PLUGIN=//p' /etc/nccl.conf | tail -n1)
  [ -z "$plugin" ] || echo "NCCL_NET_PLUGIN=$plugin" >> "$ENROOT_ENVIRON"
fi
exit 0
