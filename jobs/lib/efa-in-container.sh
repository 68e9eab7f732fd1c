#!/bin/sh
# Run inside a job's container on an EFA node (container-sanity.sbatch), before NCCL is started
# there: does this image load the node's EFA user space that image/enroot-hooks/60-aws-efa.sh
# mounts and puts on its LD_LIBRARY_PATH? One clear line and exit 1 where not, instead of NCCL's
# abort ("network Libfabric not found") in the middle of the all-reduce.
# Plain sh and the image's own dynamic loader only, tracing as ldd does (LD_TRACE_LOADED_OBJECTS=1:
# glibc elf/ldd.bash.in): any image that runs a dynamically linked program has those. Checks:
#   1. libfabric.so.1 and the aws-ofi-nccl plugin (the name NCCL opens: NCCL_NET_PLUGIN's, tried
#      as given and as libnccl-net-NAME.so, or libnccl-net.so: NVIDIA/nccl v2.29.7-1
#      src/plugin/plugin_open.cc) are on the loader's path, every library they link resolved by the
#      image (libibverbs and rdma-core's efa provider, libhwloc: the image's to bring);
#   2. libfabric lists its efa provider (`fi_info -p efa`, which opens the EFA device).
set -u
say() { echo "efa-in-container: $*"; }
fail() { echo "efa-in-container FAILED on $(cat /proc/sys/kernel/hostname 2>/dev/null): $*" >&2; exit 1; }

loader=
for candidate in /lib64/ld-linux-x86-64.so.2 /usr/lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2; do
  if [ -x "$candidate" ]; then loader=$candidate; break; fi
done
[ -n "$loader" ] || fail "the image has no dynamic loader (/lib64/ld-linux-x86-64.so.2)"

# on_path NAME: the first directory of LD_LIBRARY_PATH holding NAME, as the loader searches it.
on_path() {
  old_ifs=$IFS; IFS=:
  set -f
  for dir in ${LD_LIBRARY_PATH:-}; do
    if [ -n "$dir" ] && [ -e "$dir/$1" ]; then IFS=$old_ifs; set +f; echo "$dir/$1"; return 0; fi
  done
  IFS=$old_ifs; set +f
  return 1
}

# unresolved LIBRARY: the loader's "not found" lines for it (missing libraries, symbol versions),
# or its error where it cannot trace the library at all.
unresolved() {
  traced=$(LD_TRACE_LOADED_OBJECTS=1 "$loader" "$1" 2>&1) || { printf '%s; ' "$traced"; return 0; }
  printf '%s\n' "$traced" | while read -r line; do
    case $line in *"not found"*) printf '%s; ' "$line" ;; esac
  done
}

fabric=$(on_path libfabric.so.1) ||
  fail "libfabric.so.1 is not on the container's LD_LIBRARY_PATH (${LD_LIBRARY_PATH:-unset}): the node's EFA hook did not give this container /opt/amazon/efa"
problems=$(unresolved "$fabric")
[ -z "$problems" ] || fail "libfabric $fabric does not load in this image: $problems"
say "libfabric loads: $fabric"

plugin=
old_ifs=$IFS; IFS=,
for name in ${NCCL_NET_PLUGIN:-libnccl-net.so}; do
  IFS=$old_ifs
  for file in "$name" "libnccl-net-$name.so"; do
    case $file in */*) [ -e "$file" ] && plugin=$file ;; *) plugin=$(on_path "$file") || plugin= ;; esac
    [ -z "$plugin" ] || break 2
  done
done
IFS=$old_ifs
[ -n "$plugin" ] ||
  fail "NCCL's network plugin (NCCL_NET_PLUGIN=${NCCL_NET_PLUGIN:-unset}) is not on the container's LD_LIBRARY_PATH (${LD_LIBRARY_PATH:-unset})"
problems=$(unresolved "$plugin")
[ -z "$problems" ] || fail "the NCCL network plugin $plugin does not load in this image: $problems"
say "NCCL network plugin loads: $plugin"

fi_info=/opt/amazon/efa/bin/fi_info
[ -x "$fi_info" ] || fail "$fi_info is missing in the container"
listed=$("$fi_info" -p efa 2>&1) || fail "libfabric lists no efa provider in this container: $listed"
say "libfabric's efa provider answers (fi_info -p efa)"
