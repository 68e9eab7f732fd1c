"""A NodeSet's pods coming and going on the local test cluster (local_slurm.py) as the Slinky
operator v1.2.1 makes them come and go when the NodeSet's replica count changes: no Kubernetes
here, so this is the operator's scale path replayed against the real slurmctld, step for step.

Read from SlinkyProject/slurm-operator at tag v1.2.1:
- Scale-up (internal/controller/nodeset/nodeset_sync.go syncNodeSetPods, newNodeSetPodOrdinal): a
  pod per missing ordinal, whose slurmd registers a dynamic node named after the pod's hostname
  (internal/builder/workerbuilder/worker_app.go slurmdArgs: `-Z --conf-server ... --conf
  'Features=<nodeset> ...'`). The partition is `Nodes=<nodeset>` over the NodeSet line
  `NodeSet=<nodeset> Feature=<nodeset>` (internal/builder/controllerbuilder/controller_config.go
  buildNodeSetConf), so slurm.conf is the same at 0 replicas as at 10: a pool at zero is a
  partition whose NodeSet matches no registered node.
- Which pod goes (nodeset_sync.go syncNodeSetPods -> nodesetutils.SplitActivePods;
  internal/controller/nodeset/utils/sort.go ActivePods.Less). Every pod here is scheduled,
  Running and ready with no pod-deletion-cost, so the keys that decide are: the earlier
  `slinky.slurm.net/pod-deadline` (nodeset_sync.go syncSlurmDeadline from slurmcontrol.go
  GetNodeDeadlines: the latest StartTime + TimeLimit over the node's RUNNING jobs; no annotation,
  the zero time, for a node running nothing), then cordoned before not, then the higher ordinal.
- What happens to it (nodeset_sync.go processCondemned): if slurmcontrol.go IsNodeDrained (DRAIN
  set, UNDRAIN not, none of ALLOCATED, MIXED, COMPLETING) the pod is deleted, which runs its
  preStop hook (worker_app.go: `scontrol update nodename=$(hostname) state=down reason=...`) and
  stops slurmd; otherwise makePodCordonAndDrain cordons the pod and drains the node with
  "Pod (<namespace>/<pod>) is pending termination for scale-in" (slurmcontrol.go MakeNodeDrain,
  FormatNodeReason prefixes "slurm-operator: "), and the NodeSet is requeued after 30 s.
- The Slurm node record stays after the pod goes (DOWN+DRAIN with the preStop's reason): the
  operator prunes records only in daemonset scaling mode (nodeset_sync.go
  syncSlurmNodeRecordsNodeNotFound). When a later scale-up brings the ordinal back, the pods kept
  are uncordoned and undrained (doPodScale -> syncPodUncordon -> makePodUncordonAndUndrain,
  slurmcontrol.go MakeNodeUndrain: state UNDRAIN) where the node's reason is the operator's own
  (IsNodeReasonOurs: empty or prefixed "slurm-operator: "), and slurmd's registration returns the
  DOWN node to service (ReturnToService=2 in the program's slurm.conf).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tests.support.local_slurm import LocalSlurm
from tests.support.slinky_conf import nodeset_name

# slurmcontrol.go FormatNodeReason: the operator's prefix on every reason it sets.
OPERATOR_PREFIX = "slurm-operator: "
# nodeset_sync.go processCondemned: durationStore.Push(nodesetKey, 30*time.Second).
REQUEUE_S = 30
# The node states IsNodeDrained treats as work (slurmcontrol.go: ALLOCATED, MIXED, COMPLETING).
BUSY = {"ALLOCATED", "MIXED", "COMPLETING"}


def scale_in_reason(namespace: str, pod: str) -> str:
    return f"{OPERATOR_PREFIX}Pod ({namespace}/{pod}) is pending termination for scale-in"


@dataclass
class Pod:
    ordinal: int
    node: str  # the Slurm node: the pod's hostname
    name: str  # the pod: <NodeSet object>-<ordinal>
    cordoned: bool = False  # slinky.slurm.net/pod-cordon, set by makePodCordon


@dataclass
class Decision:
    """One reconcile of a condemned pod: drained (and its pod deleted) or drained only."""

    pod: str
    node: str
    deleted: bool
    node_state: str


@dataclass
class NodeSetPods:
    cluster: LocalSlurm
    pods: dict[str, Pod] = field(default_factory=dict)
    log: list[Decision] = field(default_factory=list)

    @property
    def nodeset(self) -> dict:
        return self.cluster.nodeset

    @property
    def namespace(self) -> str:
        return self.nodeset["metadata"]["namespace"]

    # -- scale-up ----------------------------------------------------------------------------

    def scale_up(self, replicas: int) -> list[str]:
        """Create the pods for the missing ordinals and start their slurmd; the new node names."""
        new = []
        for ordinal in range(replicas):
            node = f"{nodeset_name(self.nodeset)}-{ordinal}"
            if node in self.pods:
                continue
            self.pods[node] = Pod(ordinal, node, f"{self.nodeset['metadata']['name']}-{ordinal}")
            if node not in self.cluster.nodes:
                self._resolvable(node)
            self.cluster.start_slurmd(node)
            new.append(node)
        self.sync_kept()
        return new

    def sync_kept(self) -> None:
        """syncPodUncordon over every pod kept: undrain a node the operator drained."""
        for pod in self.pods.values():
            try:
                state = self.node_state(pod.node)
            except LookupError:  # not registered yet: tolerateError, nothing to undrain
                continue
            reason = self.reason(pod.node)
            if (
                "DRAIN" in state
                and "UNDRAIN" not in state
                and (not reason or reason.startswith(OPERATOR_PREFIX))
            ):
                done = self.cluster.run(["scontrol", "update", f"nodename={pod.node}", "state=undrain"])
                if done.returncode != 0:
                    raise RuntimeError(f"undrain of {pod.node} failed: {done.stderr}")
            pod.cordoned = False

    def reason(self, node: str) -> str:
        """The node's reason ("none" is sinfo's word for no reason)."""
        out = self.cluster.run(["sinfo", "-h", "-N", "-n", node, "-o", "%E"]).stdout.strip()
        return "" if out == "none" else out

    def _resolvable(self, node: str) -> None:
        """The cluster DNS answering for the new pod (appended in place: every pod bind-mounts
        the one hosts file)."""
        self.cluster.nodes.append(node)
        with open(self.cluster.dir / "hosts", "a") as hosts:
            hosts.write(f"127.0.1.{len(self.cluster.nodes)} {node}\n")

    # -- what the operator reads from Slurm --------------------------------------------------

    def node_state(self, node: str) -> set[str]:
        """The node's state as slurmrestd's state list has it: base state and flags."""
        out = self.cluster.run(["scontrol", "show", "node", "-o", node]).stdout
        found = re.search(r"\bState=(\S+)", out)
        if not found:
            raise LookupError(f"no node {node} in slurmctld: {out}")
        return set(found.group(1).split("+"))

    def is_node_drained(self, node: str) -> bool:
        state = self.node_state(node)
        return "DRAIN" in state and "UNDRAIN" not in state and not state & BUSY

    def deadlines(self) -> dict[str, datetime]:
        """GetNodeDeadlines: per node, the latest StartTime + TimeLimit of its RUNNING jobs."""
        out = self.cluster.run(["scontrol", "show", "job", "-o"]).stdout
        found: dict[str, datetime] = {}
        for line in out.splitlines():
            if "JobState=RUNNING" not in line:
                continue
            start = datetime.fromisoformat(re.search(r"\bStartTime=(\S+)", line).group(1))
            limit = _time_limit(re.search(r"\bTimeLimit=(\S+)", line).group(1))
            end = datetime.max if limit is None else start + limit
            hosts = re.search(r"\bNodeList=(\S+)", line).group(1)
            names = self.cluster.run(["scontrol", "show", "hostnames", hosts]).stdout.split()
            for name in names:
                found[name] = max(found.get(name, end), end)
        return found

    # -- scale-down --------------------------------------------------------------------------

    def condemned(self, replicas: int) -> list[Pod]:
        """SplitActivePods(pods, len(pods) - replicas)'s first half, in ActivePods.Less order."""
        deadlines = self.deadlines()
        zero = datetime.min

        def key(pod: Pod):
            return (deadlines.get(pod.node, zero), not pod.cordoned, -pod.ordinal)

        ranked = sorted(self.pods.values(), key=key)
        return ranked[: max(len(self.pods) - replicas, 0)]

    def reconcile_scale_down(self, replicas: int, drain: bool = True) -> list[Decision]:
        """One pass of processCondemned over each pod to go. drain=False deletes without asking
        Slurm: what a controller that did not drain first would do (the tests' broken case)."""
        decisions = []
        for pod in self.condemned(replicas):
            if not drain or self.is_node_drained(pod.node):
                self.delete_pod(pod)
                decision = Decision(pod.name, pod.node, True, "+".join(sorted(self.node_state(pod.node))))
            else:
                pod.cordoned = True
                drained = self.cluster.run(
                    [
                        "scontrol",
                        "update",
                        f"nodename={pod.node}",
                        "state=drain",
                        f"reason={scale_in_reason(self.namespace, pod.name)}",
                    ]
                )
                if drained.returncode != 0:
                    raise RuntimeError(f"drain of {pod.node} failed: {drained.stderr}")
                decision = Decision(pod.name, pod.node, False, "+".join(sorted(self.node_state(pod.node))))
            decisions.append(decision)
        self.log += decisions
        return decisions

    def scale_down(
        self, replicas: int, requeue_s: float = 0.5, timeout: float = 120, drain: bool = True
    ) -> list[Decision]:
        """Reconcile until only `replicas` pods are left, requeueing as processCondemned does
        (every `requeue_s` here instead of the operator's REQUEUE_S, so a test takes seconds)."""
        deadline = time.monotonic() + timeout
        while len(self.pods) > replicas:
            self.reconcile_scale_down(replicas, drain)
            if len(self.pods) <= replicas:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"pods {sorted(self.pods)} not gone after {timeout} s: {self.log}")
            time.sleep(requeue_s)
        return self.log

    def delete_pod(self, pod: Pod) -> None:
        """The pod's deletion: its preStop hook, then slurmd stopped (the container's SIGTERM)."""
        self.cluster.prestop(pod.node)
        self.cluster.stop_slurmd(pod.node)
        del self.pods[pod.node]


def _time_limit(text: str) -> timedelta | None:
    """Slurm's TimeLimit ([days-]hours:minutes:seconds, minutes:seconds); None for UNLIMITED
    (the operator's infiniteDuration: such a node's deadline sorts last)."""
    if text in ("UNLIMITED", "Partition_Limit"):
        return None
    days, _, clock = text.rpartition("-")
    parts = [int(p) for p in clock.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0)
    return timedelta(days=int(days or 0), hours=parts[0], minutes=parts[1], seconds=parts[2])
