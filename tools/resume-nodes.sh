#!/bin/bash
# Runs inside the login pod (it has sinfo and scontrol): resume the Slurm nodes an image change
# left DOWN or DRAIN (dynamic nodes come back DOWN+DYNAMIC_NORM, or DRAIN with "Pod is
# terminating", and jobs then sit PENDING with no stated reason), then wait until EXPECTED nodes
# take jobs. Used by `tools/verify.py --fix` and, after every image change, by `pulumi up`.
#   resume-nodes.sh EXPECTED [TIMEOUT_SECONDS] [POLL_SECONDS]
set -uo pipefail
expected=${1:?expected node count}
timeout=${2:-1200}
poll=${3:-10}
deadline=$(( $(date +%s) + timeout ))
while :; do
  listing=$(sinfo -N -h -o '%N %T' 2>&1) || listing=""
  usable=$(awk '$2 ~ /^(idle|mixed|allocated)$/ {print $1}' <<< "$listing" | sort -u | wc -l)
  if [ "$usable" -ge "$expected" ]; then echo "nodes ready: $usable of $expected"; exit 0; fi
  stuck=$(awk '$2 ~ /down|drain/ {print $1}' <<< "$listing" | sort -u | paste -sd, -)
  wait_for=$poll
  if [ -n "$stuck" ]; then
    echo "resuming $stuck"
    scontrol update nodename="$stuck" state=resume || true
    wait_for=1
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "FAILED: $usable of $expected Slurm nodes take jobs after ${timeout}s:" >&2
    echo "$listing" >&2
    exit 1
  fi
  sleep "$wait_for"
done
