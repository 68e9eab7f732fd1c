"""Instance replacement: what turns a broken node into a new one without an operator.

Two AWS parts work together (EKS user guide, "Enable node auto repair and investigate node health
issues", awsdocs/amazon-eks-user-guide latest/ug/nodes/node-health.adoc, and "Automatically repair
nodes in EKS clusters", latest/ug/nodes/node-repair.adoc at dbc0b72986433b6f3ee9b5bcff7119048d5b2786):
- the node monitoring agent, an EKS add-on: a DaemonSet that reads each node's logs and devices and
  sets a node condition per kind of fault (AcceleratedHardwareReady for GPUs, NetworkingReady,
  KernelReady, StorageReady, ContainerRuntimeReady);
- node auto repair, a setting of each managed node group: when a condition stays bad, EKS cordons
  the node and replaces (or, for some GPU faults, reboots) the instance. By itself it sees only the
  kubelet's Ready; the agent's conditions are what let it act on GPU and network faults.
What happens to the Slurm node and its pod meanwhile: docs/node-repair.md; why these and not
our own remediation: docs/decisions/node-repair.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional

from model.facts.contract import GPU_TOLERATION

# The add-on's name as EKS spells it (node-health.adoc; workloads-add-ons-available-eks.adoc
# "Node monitoring agent"). That page also says it "doesn't require additional permissions": no
# Pod Identity association, no IAM role (its DaemonSet writes node conditions through its own
# Kubernetes RBAC: aws/eks-node-monitoring-agent charts/eks-node-monitoring-agent/templates/
# clusterrole.yaml at v1.7.0).
MONITORING_AGENT_ADDON = "eks-node-monitoring-agent"
# The port of the add-on's DCGM host engine on every NVIDIA node: dcgm-server runs
# `nv-hostengine -n -b ALL` (all interfaces) and publishes container port 5555 as host port 5555,
# on the node's own IP (aws/eks-node-monitoring-agent charts/eks-node-monitoring-agent/templates/
# dcgm-daemonset.yaml at v1.7.0; DCGM 4.6.1, its Dockerfile's DCGM_VERSION). The DCGM exporter
# reads the GPUs through it too (components/dcgm_exporter.py), so a node runs one engine.
DCGM_HOST_ENGINE_PORT = 5555


def monitoring_agent_configuration() -> str:
    """The add-on's configuration values (aws.eks.Addon configuration_values, a JSON string; its
    schema: aws/eks-node-monitoring-agent charts/configuration.schema.json at v1.7.0).

    On NVIDIA nodes the agent reads GPU health, Xid errors included, from DCGM: it connects to an
    nv-hostengine on localhost:5555, which the add-on's second DaemonSet, dcgm-server, runs
    (charts/eks-node-monitoring-agent/README.md "DCGM host engine", monitors/nvidia/monitor.go and
    monitors/nvidia/dcgm/dcgm_policies.go at v1.7.0). The agent's own DaemonSet tolerates every
    taint, but dcgm-server tolerates none by default (values.yaml: nodeAgent.tolerations
    [{operator: Exists}], dcgmAgent.tolerations []), so on GPU nodes tainted for GPU work only it
    would never start and the agent would report DCGMError instead of the GPU's faults. Its node
    affinity already limits it to NVIDIA instance types (every type of model/facts/catalog.py is listed
    there)."""
    # sort_keys: the same config yields the same string, so no diff on an unchanged stack.
    return json.dumps({"dcgmAgent": {"tolerations": [dict(GPU_TOLERATION)]}}, sort_keys=True)


@dataclass(frozen=True)
class RepairPolicy:
    """A managed node group's node auto repair setting (EKS NodeRepairConfig)."""

    enabled: bool
    # At most this many of the group's nodes under repair at once; None leaves it to EKS, which
    # caps nothing below its own stop (node-repair.adoc: a group of more than five nodes stops
    # repairing while more than 20% of them are unhealthy).
    max_parallel_nodes_repaired_count: Optional[int]
    why: str


# A GPU node with a fault takes jobs and fails them (issue 27): replace it. EKS's defaults fit: a
# GPU condition is acted on after 10 minutes, Replace or Reboot by the fault's code; network,
# kernel, storage, runtime and kubelet Ready after 30 (node-repair.adoc, table).
GPU_REPAIR = RepairPolicy(
    enabled=True,
    max_parallel_nodes_repaired_count=None,
    why="a GPU, network or kubelet fault replaces the instance; the pool's NodeSet pod comes back on "
    "the new node",
)

# The core group too: it runs slurmctld, the operator, CoreDNS and the controllers, and a core node
# stuck NotReady stops the whole cluster until someone replaces it by hand. Only the conditions a
# CPU node can have apply (Ready, networking, kernel, storage, runtime; each after 30 minutes).
# One node at a time: the group is small (coreNodeCount, 2 by default) and a fault that hits every
# node at once, such as lost contact with the control plane, must not take both away together.
CORE_REPAIR = RepairPolicy(
    enabled=True,
    max_parallel_nodes_repaired_count=1,
    why="a core node stuck unhealthy for 30 minutes is replaced, one node at a time",
)
