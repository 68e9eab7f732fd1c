"""The readiness wait of an autoscaling pool: rollout.settle over the pool's floor, its minNodes
Slurm nodes, and not over every replica the scaler asked for. A pool meant to be at zero waits for
no node; a pool KEDA took to four while its floor is one waits for one node rolled out and taking
jobs, and leaves the other three to the scaler (they may wait on EC2 capacity for many minutes,
which no `pulumi up` should fail for).

The NodeSet the operator reports is seen through FloorView: spec.replicas becomes
min(spec.replicas, minNodes) (KEDA may also hold a pool below its floor while idle:
idleReplicaCount 0), the status counts are capped at it, and only that many pods are looked at,
current ones first (on the update revision, Ready, not terminating). Everything else is
rollout.py's logic unchanged: the #249 stall, the preStop resume, the refusal to touch a node
drained for someone else's reason.

Standard library only: the Job runs it on a plain Python image, beside rollout.py and incluster.py.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from typing import Mapping

from cluster_programs import rollout


class FloorView:
    """A rollout.Cluster that shows a NodeSet as if its desired size were its floor."""

    def __init__(self, cluster: rollout.Cluster, min_nodes: int):
        self._cluster, self._min = cluster, min_nodes
        self._floor, self._revision = 0, ""

    def nodeset(self) -> Mapping:
        obj = copy.deepcopy(dict(self._cluster.nodeset()))
        spec, status = obj.setdefault("spec", {}), obj.setdefault("status", {})
        self._floor = min(int(spec.get("replicas", 1)), self._min)
        self._revision = status.get("nodeSetHash", "")
        spec["replicas"] = self._floor
        for count in ("replicas", "updatedReplicas", "readyReplicas"):
            status[count] = min(int(status.get(count, 0)), self._floor)
        return obj

    def pods(self, selector: str) -> list[Mapping]:
        pods = self._cluster.pods(selector)
        current = [p for p in pods if self._current(rollout.WorkerPod.from_object(p))]
        if len(current) >= self._floor:
            return current[: self._floor]
        # Short of the floor: every pod, so the wait says which are not there yet.
        return pods

    def slurm(self, argv: list[str]) -> str:
        return self._cluster.slurm(argv)

    def _current(self, pod: rollout.WorkerPod) -> bool:
        return pod.ready and not pod.terminating and pod.revision == self._revision


def main(argv: list[str] | None = None) -> int:
    from cluster_programs import incluster

    p = argparse.ArgumentParser(prog="pool_floor", description=__doc__.split("\n\n")[0])
    p.add_argument("--namespace", required=True)
    p.add_argument("--nodeset", required=True, help="the NodeSet object's name")
    p.add_argument("--node-prefix", required=True, help="its Slurm nodes' name prefix")
    p.add_argument("--slurm-pod", required=True, help="pod whose scontrol is used (exec)")
    p.add_argument("--slurm-container", required=True)
    p.add_argument("--timeout", type=float, required=True)
    p.add_argument("--stall-after", type=float, default=rollout.STALL_AFTER_SECONDS)
    p.add_argument("--min-nodes", type=int, required=True, help="the pool's minNodes: the nodes waited for")
    args = p.parse_args(argv)
    print(
        f"autoscaling pool: waiting for its floor of {args.min_nodes} node(s) (minNodes); the scaler owns the rest"
    )
    try:
        cluster = incluster.InClusterNodeSet(
            incluster.Api.from_service_account(os.environ),
            args.namespace,
            args.nodeset,
            args.slurm_pod,
            args.slurm_container,
        )
        rollout.settle(
            FloorView(cluster, args.min_nodes), args.node_prefix, args.timeout, stall_after=args.stall_after
        )
    except (rollout.RolloutFailed, incluster.ApiError) as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
