"""Wait for the Slinky operator's NodeSet rollout, then until every NodeSet node takes jobs,
resuming only what the rollout itself left stuck. `pulumi up` runs it in-cluster (the readiness
Job: `python -m cluster_programs.rollout`); `tools/verify.py --fix` runs the same `settle`.

What the operator does, SlinkyProject/slurm-operator v1.2.1:
- internal/controller/nodeset/nodeset_sync.go `syncRollingUpdate` / `splitUpdatePods` condemn old
  pods within maxUnavailable; `processCondemned` drains the Slurm node (reason prefixed
  "slurm-operator: ", slurmcontrol/slurmcontrol.go `nodeReasonPrefix`), re-checks every 30 s and
  deletes the pod only once drained;
- internal/builder/workerbuilder/worker_app.go: the slurmd preStop hook sets the node
  `state=down reason='slurm-operator: Pod is terminating'`;
- nodeset_sync_status.go `syncNodeSetStatus`: status.observedGeneration, replicas (created pods),
  updatedReplicas (pods of the update revision), readyReplicas, nodeSetHash (the revision every
  up-to-date pod carries as its `controller-revision-hash` label, `findUpdatedPods`);
- issue #249 (fixed after 1.2.1): a rolling update can wedge with the node drained ("Pod is
  terminating") and its replacement pod never created, until `scontrol update state=undrain`.

Standard library only: the Job runs it on a plain Python image.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Protocol

OPERATOR_PREFIX = "slurm-operator: "
# The node health check's drains (node_health.py REASON_PREFIX): a fault on the node, which the
# check itself undrains once it is gone (an Xid's holds until an administrator resumes the node);
# never resumed here.
HEALTH_PREFIX = "health: "
PRESTOP_REASON = "slurm-operator: Pod is terminating"
REVISION_LABEL = "controller-revision-hash"
# What slurmctld sets on a node that stops answering pings, and clears itself on registration
# (slurm src/slurmctld/ping_nodes.c; the operator's IsNodeDownForUnresponsive reads it).
SLURM_UNRESPONSIVE = "Not responding"
# Base states that run jobs, and the flags that do not keep a job off a node (scontrol's
# State=BASE+FLAG+..., slurm src/common/slurm_protocol_defs.c node_state_string_complete).
USABLE_BASES = frozenset({"IDLE", "MIXED", "ALLOCATED"})
HARMLESS_FLAGS = frozenset({"DYNAMIC_NORM", "COMPLETING", "PLANNED", "RESERVED", "CLOUD"})
STUCK_FLAGS = frozenset({"DOWN", "DRAIN"})
# A #249 stall is a drained node with no pod at all; a normal replacement leaves that gap for
# one reconcile (about 30 s), so five minutes without a pod is the operator being stuck.
STALL_AFTER_SECONDS = 300.0


class RolloutFailed(RuntimeError):
    """The rollout did not finish, or a node will not take jobs; the message says which and why."""


@dataclass(frozen=True)
class NodeSetStatus:
    name: str
    generation: int
    observed_generation: int
    desired: int  # spec.replicas
    replicas: int
    updated: int
    ready: int
    revision: str  # status.nodeSetHash
    selector: str

    @classmethod
    def from_object(cls, obj: Mapping) -> "NodeSetStatus":
        status = obj.get("status") or {}
        return cls(
            name=obj["metadata"]["name"],
            generation=int(obj["metadata"].get("generation", 0)),
            observed_generation=int(status.get("observedGeneration", 0)),
            desired=int(obj.get("spec", {}).get("replicas", 1)),
            replicas=int(status.get("replicas", 0)),
            updated=int(status.get("updatedReplicas", 0)),
            ready=int(status.get("readyReplicas", 0)),
            revision=status.get("nodeSetHash", ""),
            selector=status.get("selector", ""),
        )


@dataclass(frozen=True)
class WorkerPod:
    name: str
    slurm_node: str  # the pod's hostname (utils.go GetSlurmNodeName)
    revision: str
    terminating: bool
    ready: bool

    @classmethod
    def from_object(cls, obj: Mapping) -> "WorkerPod":
        meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
        ready = status.get("phase") == "Running" and any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
        )
        return cls(
            name=meta["name"],
            slurm_node=spec.get("hostname") or meta["name"],
            revision=(meta.get("labels") or {}).get(REVISION_LABEL, ""),
            terminating=bool(meta.get("deletionTimestamp")),
            ready=ready,
        )


@dataclass(frozen=True)
class SlurmNode:
    name: str
    state: str  # as scontrol prints it: IDLE+DRAIN+DYNAMIC_NORM
    reason: str = ""
    # The node health check's last result ("health <time>: ok" or its faults): node_health.py
    # leaves it in the node's Comment, which `scontrol show node` prints.
    comment: str = ""

    @property
    def base(self) -> str:
        return self.state.split("+")[0]

    @property
    def flags(self) -> frozenset[str]:
        return frozenset(self.state.split("+")[1:])

    @property
    def usable(self) -> bool:
        return self.base in USABLE_BASES and self.flags <= HARMLESS_FLAGS

    @property
    def stuck(self) -> bool:
        return bool(({self.base} | self.flags) & STUCK_FLAGS)

    @property
    def health_drained(self) -> bool:
        return "DRAIN" in self.flags and self.reason.startswith(HEALTH_PREFIX)

    def describe(self) -> str:
        return f"{self.name} {self.state}" + (f" reason {self.reason!r}" if self.reason else "")


def parse_scontrol(text: str) -> list[SlurmNode]:
    """`scontrol -o show node`: one record per line. Reason runs to its `[user@time]` stamp,
    Comment to the next field (Slurm prints Comment=(null) when there is none)."""
    nodes = []
    for line in text.splitlines():
        name = re.search(r"\bNodeName=(\S+)", line)
        state = re.search(r"\bState=(\S+)", line)
        if not (name and state):
            continue
        reason = re.search(r"\bReason=(.*?)(?:\s+\[[^\]]*\])?(?=\s+[A-Za-z]+=|\s*$)", line)
        comment = re.search(r"\bComment=(.*?)(?=\s+[A-Za-z]+=|\s*$)", line)
        comment_text = comment.group(1).strip() if comment else ""
        nodes.append(
            SlurmNode(
                name.group(1),
                state.group(1).upper(),
                reason.group(1).strip() if reason else "",
                "" if comment_text == "(null)" else comment_text,
            )
        )
    return nodes


def rollout_pending(nodeset: NodeSetStatus, pods: list[WorkerPod]) -> str:
    """Why the operator's rollout is not finished ('' when it is): the new generation observed,
    every replica created from the update revision and Ready, no old or terminating pod left."""
    if nodeset.observed_generation < nodeset.generation:
        return (
            f"the operator has not yet observed generation {nodeset.generation} "
            f"(observed {nodeset.observed_generation})"
        )
    d = nodeset.desired
    if (nodeset.updated, nodeset.ready, nodeset.replicas) != (d, d, d):
        return f"updated {nodeset.updated}/{d}, ready {nodeset.ready}/{d}, pods {nodeset.replicas}/{d}"
    old = [p.name for p in pods if p.terminating or p.revision != nodeset.revision or not p.ready]
    if old or len(pods) != d:
        return f"{len(pods)} pods, not yet on revision {nodeset.revision} and Ready: {', '.join(old) or '-'}"
    return ""


@dataclass(frozen=True)
class Step:
    """One look at the cluster: what to do now and what is still wrong."""

    done: bool
    blocked: bool  # a node is stuck for a reason that is not ours to clear
    message: str
    resume: tuple[str, ...] = ()
    undrain: tuple[str, ...] = ()
    stalled_since: Mapping[str, float] = field(default_factory=dict)


def assess(
    nodeset: NodeSetStatus,
    pods: list[WorkerPod],
    slurm: list[SlurmNode],
    node_prefix: str,
    now: float,
    stalled_since: Mapping[str, float],
    stall_after: float,
) -> Step:
    ours = sorted((n for n in slurm if n.name.startswith(node_prefix)), key=lambda n: n.name)
    pending = rollout_pending(nodeset, pods)
    if pending:
        # #249: drained by the operator, and no pod (not even a terminating one) for the node.
        with_pod = {p.slurm_node for p in pods}
        wedged = [
            n
            for n in ours
            if "DRAIN" in n.flags and n.reason.startswith(OPERATOR_PREFIX) and n.name not in with_pod
        ]
        since = {n.name: stalled_since.get(n.name, now) for n in wedged}
        undrain = tuple(n.name for n in wedged if now - since[n.name] >= stall_after)
        lines = [f"rollout of NodeSet {nodeset.name} in progress: {pending}"]
        for n in ours:
            if n.name in since:
                lines.append(f"  {n.describe()}: no pod for {now - since[n.name]:.0f}s")
            elif not n.usable:
                lines.append(f"  {n.describe()}")
        if undrain:
            lines.append(
                "  stalled as in SlinkyProject/slurm-operator#249 (replacement pod never created); "
                f"undraining {', '.join(undrain)} so the operator creates it"
            )
        return Step(False, False, "\n".join(lines), undrain=undrain, stalled_since=since)

    by_name = {n.name: n for n in ours}
    resume, blocked, waiting = [], [], []
    for pod in sorted(pods, key=lambda p: p.slurm_node):
        node = by_name.get(pod.slurm_node)
        if node is None:
            waiting.append(f"  {pod.slurm_node} (pod {pod.name}) not registered in Slurm yet")
        elif node.usable:
            continue
        elif node.stuck and node.reason == PRESTOP_REASON:
            # Left by the old pod's preStop; this pod is new (rollout finished) and Ready.
            resume.append(node.name)
            waiting.append(f"  {node.describe()}: left by the old pod's preStop; resuming")
        elif node.health_drained:
            blocked.append(
                f"  {node.describe()}: drained by the node health check, a fault on the node; "
                "left alone (the check undrains it once the fault is gone; an Xid's drain holds until "
                "an administrator resumes the node: docs/health.md)"
            )
        elif node.stuck and node.reason == SLURM_UNRESPONSIVE and "DRAIN" not in node.flags:
            waiting.append(f"  {node.describe()}: Slurm returns it when its slurmd registers")
        elif node.stuck:
            blocked.append(
                f"  {node.describe()}: not the rollout's doing; left alone "
                f"(`scontrol update nodename={node.name} state=resume` if it should take jobs)"
            )
        else:
            waiting.append(f"  {node.describe()}: not taking jobs yet")
    if not (resume or blocked or waiting):
        return Step(
            True,
            False,
            f"NodeSet {nodeset.name} rolled out (revision {nodeset.revision}); "
            f"{len(pods)} Slurm nodes take jobs",
        )
    usable = sum(1 for p in pods if p.slurm_node in by_name and by_name[p.slurm_node].usable)
    head = (
        f"NodeSet {nodeset.name} rolled out (revision {nodeset.revision}); "
        f"{usable} of {len(pods)} nodes take jobs"
    )
    return Step(False, bool(blocked), "\n".join([head, *blocked, *waiting]), resume=tuple(resume))


class Cluster(Protocol):
    def nodeset(self) -> Mapping: ...
    def pods(self, selector: str) -> list[Mapping]: ...
    def slurm(self, argv: list[str]) -> str: ...


def settle(
    cluster: Cluster,
    node_prefix: str,
    timeout: float,
    poll: float = 10.0,
    stall_after: float = STALL_AFTER_SECONDS,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    log: Callable[[str], None] = print,
) -> str:
    """Poll until the rollout is done and every node takes jobs; return the final line. Raise
    RolloutFailed at once for a node stuck for someone else's reason, or after `timeout`."""
    start = clock()
    stalled: Mapping[str, float] = {}
    last = ""
    while True:
        nodeset = NodeSetStatus.from_object(cluster.nodeset())
        pods = [WorkerPod.from_object(p) for p in cluster.pods(nodeset.selector)]
        nodes = parse_scontrol(cluster.slurm(["scontrol", "-o", "show", "node"]))
        now = clock()
        step = assess(nodeset, pods, nodes, node_prefix, now, stalled, stall_after)
        stalled = step.stalled_since
        if step.message != last:
            log(step.message)
            last = step.message
        for name in step.undrain:
            cluster.slurm(["scontrol", "update", f"nodename={name}", "state=undrain"])
        for name in step.resume:
            cluster.slurm(["scontrol", "update", f"nodename={name}", "state=resume"])
        if step.done:
            return step.message
        waited = now - start
        if step.blocked:
            raise RolloutFailed(f"after {waited:.0f}s: {step.message}")
        if waited >= timeout:
            raise RolloutFailed(f"not finished after {waited:.0f}s (limit {timeout:.0f}s): {step.message}")
        sleep(poll)


def main(argv: list[str] | None = None) -> int:
    from cluster_programs import incluster

    p = argparse.ArgumentParser(prog="rollout", description=__doc__.split("\n\n")[0])
    p.add_argument("--namespace", required=True)
    p.add_argument("--nodeset", required=True, help="the NodeSet object's name")
    p.add_argument("--node-prefix", required=True, help="its Slurm nodes' name prefix")
    p.add_argument("--slurm-pod", required=True, help="pod whose scontrol is used (exec)")
    p.add_argument("--slurm-container", required=True)
    p.add_argument("--timeout", type=float, required=True)
    p.add_argument("--stall-after", type=float, default=STALL_AFTER_SECONDS)
    args = p.parse_args(argv)
    try:
        cluster = incluster.InClusterNodeSet(
            incluster.Api.from_service_account(os.environ),
            args.namespace,
            args.nodeset,
            args.slurm_pod,
            args.slurm_container,
        )
        settle(cluster, args.node_prefix, args.timeout, stall_after=args.stall_after)
    except (RolloutFailed, incluster.ApiError) as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
