#!/bin/bash
# Checks shared by the jobs; sourced. They need only EXPECT_EFA and DIST_BACKEND.

die() { echo "FAILED: $*" >&2; exit 1; }

# On an EFA cluster NCCL must have selected the efa provider on every rank and never fallen
# back to sockets.   check_transport LOG [EXPECTED_RANKS]
check_transport() {
  local log=$1 ranks=${2:-1} efa socket
  [ "${EXPECT_EFA:-0}" = 1 ] || { echo "transport: not checked (EXPECT_EFA=${EXPECT_EFA:-0})"; return 0; }
  [ "$DIST_BACKEND" = nccl ] || die "EXPECT_EFA=1 but DIST_BACKEND=$DIST_BACKEND: EFA is only used through NCCL"
  efa=$(grep -ciE 'NET/OFI.*Selected provider is efa' "$log" || true)
  socket=$(grep -cE 'NET/Socket|Using network Socket' "$log" || true)
  [ "$socket" -eq 0 ] || die "NCCL fell back to TCP sockets ($socket 'NET/Socket' lines in $log)"
  [ "$efa" -gt 0 ] || die "NCCL never selected the EFA provider (no 'NET/OFI ... Selected provider is efa' in $log)"
  [ "$efa" -ge "$ranks" ] || die "only $efa of $ranks ranks selected the EFA provider ($log)"
  echo "transport: EFA on every rank ($efa 'Selected provider is efa' lines for $ranks ranks, 0 socket lines)"
}
