"""GPU pools: each a kind of GPU node in the cluster, with its own node group, launch template,
cluster placement group and AZ (EFA traffic stays inside a pool), its own Slinky NodeSet and its
own Slurm partition named after it. Pure: the config schema of `gpuPools` and its rules.

Without `gpuPools`, the stack has one pool named `slinky` built from gpuInstanceType,
gpuNodeCount, availabilityZone and gpuRootVolumeGiB: the cluster the program built before pools
existed, resource for resource.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from model.checks import rules
from model.checks.problems import Problem, error
from model.facts import capacity, catalog

# The pool of a stack without gpuPools. Its resources keep their pre-pool names (nodes-gpu,
# nodes-gpu-lt, nodes-gpu-pg, NodeSet and partition `slinky`), so an upgrade replaces nothing;
# a gpuPools list that names a pool `slinky` keeps them too.
DEFAULT_POOL = "slinky"
# The Slurm partition over every pool when there are several (the default partition); so no pool
# may take its name.
ALL_POOLS_PARTITION = "all"
# slurm.conf reads `PartitionName=DEFAULT` (compared case-insensitively) as the defaults of the
# partitions after it, not as a partition: a pool of that name would lose its partition
# (SchedMD/slurm src/common/read_config.c, _parse_partitionname: xstrcasecmp(value, "DEFAULT"),
# tag slurm-26-05-2-1). Pool names are lower-case (pool_name), so only `default`
# reaches it. NodeName=DEFAULT is read the same way, but a pool's nodes are <pool>-<n>.
SLURM_DEFAULTS_NAME = "default"
# EKS allows 30 managed node groups per cluster by default (EKS user guide, "View and manage
# Amazon EKS and AWS Fargate service quotas": "Managed node groups per cluster",
# https://docs.aws.amazon.com/eks/latest/userguide/service-quotas.html); the core group takes one.
MAX_POOLS = 29
# The name becomes a Slurm NodeSet, partition and node-name prefix (<pool>-0, ...), a Kubernetes
# label value and part of the node group's name: a DNS label, kept short for the derived names.
_POOL_NAME = re.compile(r"^[a-z]([a-z0-9-]{0,18}[a-z0-9])?$")
_FIELDS = (
    "name",
    "instanceType",
    "nodeCount",
    "availabilityZone",
    "rootVolumeGiB",
    "capacityReservationId",
    "minNodes",
    "maxNodes",
)
NODE_COUNT = (1, 64)
# An autoscaling pool's bounds: down to no node at all, up to the largest fixed pool.
MIN_NODES = (0, NODE_COUNT[1])
MAX_NODES = NODE_COUNT
ROOT_VOLUME_GIB = (100, 16384)


@dataclass(frozen=True)
class GpuPool:
    name: str
    gpu: catalog.GpuInstanceType
    node_count: int
    availability_zone: str
    root_volume_gib: int
    # Where the pool came from: None for the pool of the pre-pool keys, else its index in gpuPools.
    index: int | None = None
    # The bounds the pool's node count moves within; unset (None), each is node_count: a pool of
    # a fixed size, as every pool was before autoscaling existed.
    min_nodes: int = None  # type: ignore[assignment]
    max_nodes: int = None  # type: ignore[assignment]
    # The On-Demand Capacity Reservation or Capacity Block its nodes launch into (cr-...), or ""
    # for plain on-demand capacity (model/facts/capacity.py).
    capacity_reservation_id: str = ""

    def __post_init__(self) -> None:
        for bound in ("min_nodes", "max_nodes"):
            if getattr(self, bound) is None:
                object.__setattr__(self, bound, self.node_count)

    @property
    def autoscales(self) -> bool:
        """Whether the pool's size follows its partition's pending work (KEDA on the NodeSet,
        cluster-autoscaler on the node group) rather than staying at node_count."""
        return self.min_nodes < self.max_nodes

    @property
    def initial_nodes(self) -> int:
        """The size the pool is created at, and the size `up` holds it at: node_count for a fixed
        pool; minNodes for an autoscaling one (no node nobody asked for; the scalers own the size
        from then on and `up` leaves it alone)."""
        return self.min_nodes if self.autoscales else self.node_count

    def key(self, field: str) -> str:
        """The config key a problem with `field` of this pool names."""
        if self.index is None:
            return {
                "instanceType": "gpuInstanceType",
                "nodeCount": "gpuNodeCount",
                "availabilityZone": "availabilityZone",
                "rootVolumeGiB": "gpuRootVolumeGiB",
                "minNodes": "gpuMinNodes",
                "maxNodes": "gpuMaxNodes",
                "capacityReservationId": "gpuCapacityReservationId",
            }[field]
        return f"gpuPools[{self.index}].{field}"

    @property
    def resource_suffix(self) -> str:
        """The part of its resources' names that is the pool's: `gpu` for the default pool (its
        pre-pool names), `gpu-<name>` for every other."""
        return "gpu" if self.name == DEFAULT_POOL else f"gpu-{self.name}"


_node_count = rules.whole_number(*NODE_COUNT)
_root_volume = rules.whole_number(*ROOT_VOLUME_GIB)
_min_nodes = rules.whole_number(*MIN_NODES)
_max_nodes = rules.whole_number(*MAX_NODES)


def bounds_problems(min_key: str, min_nodes: Any, max_key: str, max_nodes: Any) -> list[Problem]:
    """minNodes from 0 to 64, maxNodes from 1 to 64, minNodes <= maxNodes: every problem at once.
    Each is already defaulted to nodeCount where unset. nodeCount itself is not held within them:
    a pool that autoscales starts at minNodes and nodeCount is then only the bounds' default."""
    problems = _min_nodes(min_key, min_nodes) + _max_nodes(max_key, max_nodes)
    if not problems and min_nodes > max_nodes:
        problems.append(
            error(
                min_key,
                min_nodes,
                f"at most {max_key} ({max_nodes}): the pool scales between "
                "minNodes and maxNodes (each defaults to nodeCount)",
            )
        )
    return problems


def pool_name(key: str, value: Any) -> list[Problem]:
    """A DNS label of at most 20 characters that is neither the partition over every pool nor
    the name slurm.conf reserves for its defaults."""
    if not isinstance(value, str) or not _POOL_NAME.match(value):
        return [
            error(
                key,
                value,
                "lower-case letters, digits and '-', starting with a letter and "
                "ending with a letter or digit, at most 20 characters",
            )
        ]
    if value == ALL_POOLS_PARTITION:
        return [error(key, value, f"any name but '{ALL_POOLS_PARTITION}', the partition over every pool")]
    if value == SLURM_DEFAULTS_NAME:
        return [
            error(
                key,
                value,
                f"any name but '{SLURM_DEFAULTS_NAME}': slurm.conf reads "
                "PartitionName=DEFAULT as the defaults of the other partitions, so the pool "
                "would have no partition",
            )
        ]
    return []


def _one_pool(i: int, entry: Any, zone: str, root_gib: int) -> tuple[GpuPool | None, list[Problem]]:
    at = f"gpuPools[{i}]"
    if not isinstance(entry, dict):
        return None, [
            error(
                at,
                entry,
                "an object {name, instanceType, nodeCount, availabilityZone?, "
                "rootVolumeGiB?, minNodes?, maxNodes?, capacityReservationId?}",
            )
        ]
    problems = [
        error(f"{at}.{k}", entry[k], f"not a pool field; fields: {', '.join(_FIELDS)}")
        for k in entry
        if k not in _FIELDS
    ]
    problems += pool_name(f"{at}.name", entry.get("name"))
    problems += rules.gpu_instance_type(f"{at}.instanceType", entry.get("instanceType"))
    problems += _node_count(f"{at}.nodeCount", entry.get("nodeCount"))
    pool_zone = entry.get("availabilityZone", zone)
    # An unset availabilityZone, which the pools default to, is reported once, as itself.
    if "availabilityZone" in entry and (not isinstance(pool_zone, str) or not pool_zone):
        problems.append(error(f"{at}.availabilityZone", pool_zone, "an availability zone name"))
    if "rootVolumeGiB" in entry:
        problems += _root_volume(f"{at}.rootVolumeGiB", entry["rootVolumeGiB"])
    # The bounds default to nodeCount; where that is refused, only bounds the pool sets are checked.
    count = entry.get("nodeCount")
    count_ok = not _node_count(f"{at}.nodeCount", count)
    if count_ok or ("minNodes" in entry and "maxNodes" in entry):
        problems += bounds_problems(
            f"{at}.minNodes", entry.get("minNodes", count), f"{at}.maxNodes", entry.get("maxNodes", count)
        )
    else:
        problems += [
            p
            for bound, rule in (("minNodes", _min_nodes), ("maxNodes", _max_nodes))
            if bound in entry
            for p in rule(f"{at}.{bound}", entry[bound])
        ]
    problems += capacity.reservation_id(f"{at}.capacityReservationId", entry.get("capacityReservationId", ""))
    if problems:
        return None, problems
    return GpuPool(
        entry["name"],
        catalog.lookup(entry["instanceType"]),
        count,
        pool_zone,
        entry.get("rootVolumeGiB", root_gib),
        i,
        entry.get("minNodes", count),
        entry.get("maxNodes", count),
        entry.get("capacityReservationId", ""),
    ), []


def pools_from_config(raw: Any, zone: str, root_gib: int) -> tuple[list[GpuPool], list[Problem]]:
    """The pools of a gpuPools value (a list of objects), each field defaulted from the stack's
    availabilityZone and gpuRootVolumeGiB; every problem at once."""
    if not isinstance(raw, list) or not raw:
        return [], [
            error(
                "gpuPools",
                raw,
                "a non-empty list of pools {name, instanceType, nodeCount, "
                "availabilityZone?, rootVolumeGiB?, minNodes?, maxNodes?}; leave it unset for one pool from "
                "gpuInstanceType and gpuNodeCount",
            )
        ]
    problems: list[Problem] = []
    if len(raw) > MAX_POOLS:
        problems.append(
            error(
                "gpuPools",
                f"{len(raw)} pools",
                f"at most {MAX_POOLS}: EKS allows 30 "
                "managed node groups per cluster by default and the core nodes take one",
            )
        )
    pools = []
    for i, entry in enumerate(raw):
        pool, found = _one_pool(i, entry, zone, root_gib)
        problems += found
        if pool is not None:
            pools.append(pool)
    seen: dict[str, int] = {}
    for i, entry in enumerate(raw):
        name = entry.get("name") if isinstance(entry, dict) else None
        if isinstance(name, str) and name in seen:
            problems.append(
                error(
                    f"gpuPools[{i}].name",
                    name,
                    f"a name no other pool has (gpuPools[{seen[name]}] is already '{name}')",
                )
            )
        elif isinstance(name, str):
            seen[name] = i
    # Pods and Slurm nodes are found by name prefix: slurm-worker-<pool>- and <pool>-<ordinal>. A
    # pool `a` beside `a-b` would count a-b's pods and nodes as its own (verify, the readiness wait).
    # Only names that passed the name rule: a refused name is reported once, as itself.
    valid = {name: i for name, i in seen.items() if not pool_name(f"gpuPools[{i}].name", name)}
    for name, i in valid.items():
        for other, j in valid.items():
            if other != name and name.startswith(f"{other}-"):
                problems.append(
                    error(
                        f"gpuPools[{i}].name",
                        name,
                        f"a name that does not begin with "
                        f"another pool's name and '-' (gpuPools[{j}] is '{other}': its pods "
                        f"and Slurm nodes are found by the prefixes slurm-worker-{other}- and "
                        f"{other}-)",
                    )
                )
    return pools, problems


# gpuMinNodes and gpuMaxNodes at this value stand for gpuNodeCount (an integer key always has a
# value: the CLI hands over Pulumi.yaml's default for an unset key).
FROM_NODE_COUNT = -1


def default_bound(low: int, high: int) -> Any:
    """The rule of gpuMinNodes or gpuMaxNodes: FROM_NODE_COUNT, or a whole number from low to high."""

    def rule(key: str, value: Any) -> list[Problem]:
        if value == FROM_NODE_COUNT and not isinstance(value, bool):
            return []
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            return [
                error(
                    key,
                    value,
                    f"a whole number from {low} to {high}, or {FROM_NODE_COUNT} (the "
                    "default) for gpuNodeCount",
                )
            ]
        return []

    return rule


def default_pool(
    instance_type: Any,
    node_count: Any,
    zone: str,
    root_gib: int,
    min_nodes: Any = FROM_NODE_COUNT,
    max_nodes: Any = FROM_NODE_COUNT,
    reservation_id: Any = "",
) -> list[GpuPool]:
    """The one pool of a stack without gpuPools, once gpuInstanceType is valid (its rules report
    it otherwise). A count that is refused becomes 0, so that the account checks still look at
    the type and the AZ but count no nodes; bounds that are refused (default_pool_problems says
    so) leave the pool at that count; a reservation id that is refused (its key's rule reports it)
    becomes none, so that the account is not asked about it."""
    gpu = catalog.lookup(instance_type) if isinstance(instance_type, str) else None
    if gpu is None:
        return []
    count = node_count if not _node_count("gpuNodeCount", node_count) else 0
    low, high = (count if b == FROM_NODE_COUNT else b for b in (min_nodes, max_nodes))
    if count == 0 or bounds_problems("gpuMinNodes", low, "gpuMaxNodes", high):
        low = high = count
    reservation = (
        reservation_id if not capacity.reservation_id("gpuCapacityReservationId", reservation_id) else ""
    )
    return [GpuPool(DEFAULT_POOL, gpu, count, zone, root_gib, None, low, high, reservation)]


def default_pool_problems(node_count: Any, min_nodes: Any, max_nodes: Any) -> list[Problem]:
    """gpuMinNodes <= gpuMaxNodes, each FROM_NODE_COUNT standing for gpuNodeCount. Only values
    that passed their own key's rules come here (None for one refused): a refused value is
    reported once, as itself, and so is a bound that is only refused through gpuNodeCount."""
    bounds = [node_count if b == FROM_NODE_COUNT else b for b in (min_nodes, max_nodes)]
    if None in bounds:
        return []
    return bounds_problems("gpuMinNodes", bounds[0], "gpuMaxNodes", bounds[1])


# The label that tells the pools' nodes apart where there are several (every GPU node carries
# role=gpu). A stack with one pool has no need of it, and its nodes keep the labels they had
# before pools existed.
POOL_LABEL = "slinky-eks/gpu-pool"


def pool_labels(pool: GpuPool, pools: Sequence[GpuPool]) -> dict[str, str]:
    """What selects this pool's nodes beyond role=gpu: nothing when it is the only pool."""
    return labels_of_pool(pool.name, several=len(pools) > 1)


def labels_of_pool(name: str, several: bool) -> dict[str, str]:
    """pool_labels by the pool's name alone (what the gpuPools output gives tools/verify.py)."""
    return {POOL_LABEL: name} if several else {}
