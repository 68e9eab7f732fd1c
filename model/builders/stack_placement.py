"""Where the stack's pods go in an EKS cluster it shares with others (existingClusterName).

The node labels `role: core` and `role: gpu` (model/facts/contract.py) are not the stack's own: in
a shared cluster another team's nodes may carry them, and then Slurm's pods land there; and the
core nodes are untainted, so other teams' pods land beside slurmctld and the munge and JWT keys.
So in that mode every node of the stack carries STACK_LABEL=<clusterName>, every pod of the
stack selects it beside `role`, and the core nodes carry a NoSchedule taint of the same key that
only the stack's core pods tolerate (the GPU nodes are tainted already: GPU_TAINT). Kubernetes:
"Assigning Pods to Nodes", nodeSelector
(https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodeselector) and
"Taints and Tolerations"
(https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/).

Pure: one rule over any pod spec or chart values block that has a `nodeSelector`, applied to every
Kubernetes object and Helm release of the layer by components/_parts/stack_placement.py. Every
chart the stack installs takes `tolerations` beside each `nodeSelector` it takes (the Slinky
charts' values.yaml at v1.2.1: operator, webhook, podSpec; cert-manager, KEDA, Grafana, the load
balancer controller and cluster-autoscaler at the top and per component)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from model.facts.contract import CORE_LABELS, STACK_LABEL, Taint


@dataclass(frozen=True)
class StackPlacement:
    cluster_name: str  # clusterName: the label's and the taint's value

    @property
    def labels(self) -> dict[str, str]:
        """What every node group of the stack adds to its labels."""
        return {STACK_LABEL: self.cluster_name}

    @property
    def core_taint(self) -> Taint:
        """What the core node group carries: only the stack's core pods tolerate it."""
        return Taint(STACK_LABEL, self.cluster_name, "NoSchedule")

    def placed(self, block: Mapping[str, Any]) -> dict[str, Any]:
        """A block with a `nodeSelector` of the stack's (one that selects `role`), as it is
        placed in a shared cluster: the selector with the stack's label, and a block that
        selects the core nodes with the core taint's toleration among its tolerations. Any other
        block as it is."""
        selector = block.get("nodeSelector")
        if not isinstance(selector, Mapping) or "role" not in selector:
            return dict(block)
        out = {**block, "nodeSelector": {**selector, **self.labels}}
        if all(selector.get(k) == v for k, v in CORE_LABELS.items()):
            toleration = self.core_taint.toleration
            tolerations = list(block.get("tolerations") or [])
            if toleration not in tolerations:
                out["tolerations"] = [*tolerations, toleration]
        return out
