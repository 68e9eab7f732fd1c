"""Where each GPU pool's nodes sit in the network, for Slurm's placement (docs/topology.md): each
pool's placement (tree where EC2's topology covers its type, block on a Capacity Block, flat
otherwise), its partition's topology, and the writer that keeps the Controller's topology.yaml and
the nodes' `topology.slinky.slurm.net/spec` annotations current: its configuration, its rights and
its Deployment. Pure. The writer's rules (the skeleton, the annotation, the order) live once, in
the program itself: cluster_programs/network_topology.py, which reads this module's configuration
(writer_config); the placement kinds are the strings both sides name."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

from model.builders.pod_security import NOBODY, pod_security
from model.builders.program_job import code_volume, program_container
from model.checks.gpu_pools import POOL_LABEL, GpuPool
from model.facts import instance_topology
from model.facts.capacity import Reservation
from model.facts.contract import CORE_LABELS, GPU_LABELS, RELEASE

# A partition's topology, and the name topology.yaml gives it (the writer's KINDS).
TREE = "tree"
BLOCK = "block"
FLAT = "flat"
KINDS = (TREE, BLOCK, FLAT)


@dataclass(frozen=True)
class PoolPlacement:
    """How one GPU pool's partition is placed: on the tree of network nodes, on its Capacity
    Block, or flat (no place known)."""

    pool: str
    kind: str  # TREE, BLOCK or FLAT
    block: str = ""  # BLOCK: the Capacity Block's reservation id (cr-...), the block's name
    block_size: int = 0  # BLOCK: the reservation's instance count

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"placement kind {self.kind!r}: one of {', '.join(KINDS)}")
        if (self.kind == BLOCK) != bool(self.block and self.block_size > 0):
            raise ValueError(f"pool {self.pool}: a block placement, and only one, names its block and size")

    @property
    def topology(self) -> str:
        """The topology its partition runs on (the partition's `Topology=`)."""
        return self.kind

    def as_config(self) -> dict:
        """What the writer reads for the pool."""
        return asdict(self)


def placement(pool: str, instance_type: str, capacity_block: str = "", block_size: int = 0) -> PoolPlacement:
    """A pool's placement: block on a Capacity Block (its reservation id and instance count
    given), tree where EC2 covers the type, flat otherwise."""
    if capacity_block:
        return PoolPlacement(pool, BLOCK, capacity_block, block_size)
    if instance_topology.is_covered(instance_type):
        return PoolPlacement(pool, TREE)
    return PoolPlacement(pool, FLAT)


def pool_placements(pools: Sequence[GpuPool], reservations: Mapping[str, Reservation]) -> list[PoolPlacement]:
    """Every pool's placement: a pool launching into a Capacity Block (its reservation as EC2
    described it at preview, StackConfig.reservations) is on that block, sized by its instance
    count; the others by their type."""
    out = []
    for pool in pools:
        reservation = reservations.get(pool.capacity_reservation_id)
        if reservation is not None and reservation.is_capacity_block:
            out.append(
                placement(pool.name, pool.gpu.name, reservation.reservation_id, reservation.total_instances)
            )
        else:
            out.append(placement(pool.name, pool.gpu.name))
    return out


def places_any(placements: Sequence[PoolPlacement]) -> bool:
    """Whether any pool has a place: the writer is installed and topology.yaml written only then."""
    return any(p.kind != FLAT for p in placements)


def partition_topologies(placements: Sequence[PoolPlacement]) -> dict[str, str]:
    """The `Topology=` of each placed pool's partition, by pool; a flat pool's partition (and the
    `all` partition) takes the cluster default, flat, and is not listed."""
    return {p.pool: p.topology for p in placements if p.kind != FLAT}


# The writer's objects (ServiceAccount, roles, Deployment) in the Slurm namespace.
WRITER = "slurm-network-topology"
# The chart's extra config ConfigMap, which the Controller mounts under /etc/slurm (Slinky chart
# release-1.2 templates/controller/_helpers.tpl slurm.controller.configName: `<fullname>-config-extra`,
# listed in the Controller's configFileRefs by templates/controller/controller-cr.yaml). The
# writer owns its topology.yaml key; the chart's values never set it. They must not: Helm's
# three-way patch on an upgrade sets every key the chart renders back to the chart's value,
# whatever the live object holds, even when the chart's value did not change since the last
# release (helm/helm v3 pkg/kube/client.go createPatch -> k8s.io/apimachinery
# pkg/util/strategicpatch CreateThreeWayMergePatch: "the difference from current to modified
# without deletions, plus deletions from original to modified"; Helm's FAQ "Improved Upgrade
# Strategy: 3-way Strategic Merge Patches", https://helm.sh/docs/faq/changes_since_helm2/), so
# a rendered key would drop the writer's switches at every upgrade. On a first install the
# writer creates the ConfigMap before the release does, for Helm to adopt
# (cluster_programs/network_topology.py run_once, release_owned).
CONFIG_MAP = f"{RELEASE}-config-extra"
CONFIG_KEY = "topology.yaml"
# Seconds between the writer's passes: a new node gets its place within two.
INTERVAL_SECONDS = 30


def writer_config(placements: Sequence[PoolPlacement], namespace: str) -> dict:
    """What the writer reads (cluster_programs/network_topology.py main --config). The placements
    by pool name: reordering gpuPools neither rolls the writer nor rewrites topology.yaml."""
    return {
        "placements": [p.as_config() for p in sorted(placements, key=lambda p: p.pool)],
        "labelKeys": list(instance_topology.NETWORK_NODE_LABELS),
        "poolLabel": POOL_LABEL,
        "nodeSelector": ",".join(f"{k}={v}" for k, v in GPU_LABELS.items()),
        "namespace": namespace,
        "configMap": CONFIG_MAP,
        "key": CONFIG_KEY,
        "release": RELEASE,
    }


def writer_rules() -> tuple[list[dict], list[dict]]:
    """(namespace rules, cluster rules): the one ConfigMap read and patched by name, and created
    in the namespace (its first pass on a first install: RBAC cannot narrow `create` by name,
    https://kubernetes.io/docs/reference/access-authn-authz/rbac/#referring-to-resources); Nodes
    listed and patched (annotations). RBAC cannot narrow nodes by label either (resourceNames
    names objects, and node names are not known ahead)."""
    namespaced = [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": [CONFIG_MAP],
            "verbs": ["get", "patch"],
        },
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
    ]
    cluster = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "patch"]}]
    return namespaced, cluster


def writer_labels() -> dict:
    return {"app.kubernetes.io/name": WRITER}


def writer_deployment_spec(placements: Sequence[PoolPlacement], namespace: str, code_configmap: Any) -> dict:
    """One replica of the writer on the core nodes, its code from `code_configmap` (a ConfigMap's
    name, a str or the Output of one); a changed placement is a changed argument, and rolls it.
    Its first pass is an init container, so the pod is ready (what the Slurm release waits for)
    only once topology.yaml is in the Controller's ConfigMap."""
    config = json.dumps(writer_config(placements, namespace), sort_keys=True)
    first = program_container("first-pass", "network_topology", ["--config", config, "--once"])
    run = program_container(
        "writer", "network_topology", ["--config", config, "--interval", str(INTERVAL_SECONDS)]
    )
    return {
        "replicas": 1,
        "selector": {"matchLabels": writer_labels()},
        "template": {
            "metadata": {"labels": writer_labels()},
            "spec": {
                "serviceAccountName": WRITER,
                "nodeSelector": dict(CORE_LABELS),
                "securityContext": pod_security(NOBODY),
                "initContainers": [first],
                "containers": [run],
                "volumes": [code_volume(code_configmap)],
            },
        },
    }
