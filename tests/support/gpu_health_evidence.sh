#!/usr/bin/env bash
# GPU evidence, not CI: the shipped node health check (cluster_programs/node_health.py) on a lent
# GPU machine, run as slurmd runs it on a worker -- as root, no arguments, an environment holding
# only SLURMD_NODENAME, its pool's expected.json beside it (model/builders/node_health.py) -- first as the
# machine is, then with the GPU hidden from it in private mount namespaces: an empty directory
# bound over /proc/driver/nvidia/gpus, and/or a read-only /dev without /dev/nvidia0 (read-only so
# that nothing re-creates it). The machine has no Slurm, so the check finds no node to drain and
# says so; its verdict line and exit status are the evidence (tests/data/h200-health/README.md).
#   bash tests/support/gpu_health_evidence.sh PROGRAM EXPECTED_JSON OUTPUT_DIR
# EXPECTED_JSON names /shared; a tmpfs mounted there inside each namespace stands in for EFS.
set -u
program=${1:?program}; expected=${2:?expected.json}; out=${3:?output dir}
mkdir -p "$out"
W=/tmp/health
mkdir -p $W && cp "$program" $W/node-health && cp "$expected" $W/expected.json && chmod 555 $W/node-health
# The program's interpreter line is the slurmd image's /usr/local/bin/python3.
[ -x /usr/local/bin/python3 ] || ln -s "$(command -v python3)" /usr/local/bin/python3
export W
cat > $W/scenario.sh <<'INNER'
# $1: what to hide (none | dev | proc | both). Runs inside `unshare -m`.
mkdir -p /shared && mount -t tmpfs shared /shared
if [ "$1" = proc ] || [ "$1" = both ]; then
  mkdir -p /tmp/empty && mount --bind /tmp/empty /proc/driver/nvidia/gpus
fi
if [ "$1" = dev ] || [ "$1" = both ]; then
  mkdir -p /tmp/dev-nogpu
  cp -a /dev/null /dev/zero /dev/random /dev/urandom /dev/kmsg /dev/nvidiactl /dev/nvidia-uvm \
        /dev/nvidia-uvm-tools /dev/nvidia-caps /tmp/dev-nogpu/
  mount --bind /tmp/dev-nogpu /dev && mount -o remount,bind,ro /dev
fi
echo "\$ ls /dev | grep '^nvidia'"; ls /dev | grep '^nvidia'
echo "\$ ls /proc/driver/nvidia/gpus"; ls /proc/driver/nvidia/gpus
echo "\$ nvidia-smi -L"; nvidia-smi -L; echo "exit=$?"
echo "\$ env -i SLURMD_NODENAME=h200-0 $W/node-health"
env -i SLURMD_NODENAME=h200-0 $W/node-health; echo "exit=$?"
echo "\$ env -i SLURMD_NODENAME=h200-0 $W/node-health --dry-run"
env -i SLURMD_NODENAME=h200-0 $W/node-health --dry-run; echo "exit=$?"
INNER
{
  echo "# date: $(date -u +%FT%TZ)"
  echo "# kernel: $(uname -r)"
  echo "# gpu: $(nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv,noheader)"
  echo "# python3: $(readlink -f /usr/local/bin/python3) $(/usr/local/bin/python3 -V 2>&1)"
  echo "# node-health sha256: $(sha256sum $W/node-health | cut -d' ' -f1)"
  echo "# expected.json: $(tr -d '\n ' < $W/expected.json)"
} > "$out/environment.txt"
for s in none dev proc both; do
  timeout 120 unshare -m bash $W/scenario.sh $s > "$out/check-hidden-$s.txt" 2>&1
  echo "unshare exit=$?" >> "$out/check-hidden-$s.txt"
done
mv "$out/check-hidden-none.txt" "$out/check-pass.txt"
echo "# afterwards, outside the namespaces: $(nvidia-smi -L)" >> "$out/environment.txt"
