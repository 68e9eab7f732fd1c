#!/usr/bin/env bash
# Debian's Slurm, munge, PMIx and OpenMPI for the job tests (tests/local_slurm.py starts its own daemons).
# Installed, never started: a policy-rc.d we add for the install keeps apt from starting them.
set -euo pipefail
# libopenmpi-dev: nccl-tests-build.sbatch builds against the system OpenMPI, as in the image.
packages=(slurmctld slurmd slurm-client munge libpmix-dev libopenmpi-dev openmpi-bin)
installed=$(dpkg-query -W -f='${Status}\n' "${packages[@]}" 2>/dev/null | grep -c '^install ok installed$' || true)
if [ "$installed" -eq "${#packages[@]}" ]; then echo "Slurm packages present"; exit 0; fi
[ "$(id -u)" = 0 ] || { echo "installing ${packages[*]} needs root" >&2; exit 1; }
added_policy=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && added_policy=1
fi
trap '[ "$added_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d' EXIT
apt-get update -q >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null
echo "installed ${packages[*]}"
