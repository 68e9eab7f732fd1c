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

from model import capacity, catalog, rules
from model.problems import Problem, error

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
_FIELDS = ("name", "instanceType", "nodeCount", "availabilityZone", "rootVolumeGiB", "capacityReservationId")
NODE_COUNT = (1, 64)
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
    # The On-Demand Capacity Reservation or Capacity Block its nodes launch into (cr-...), or ""
    # for plain on-demand capacity (model/capacity.py).
    capacity_reservation_id: str = ""

    def key(self, field: str) -> str:
        """The config key a problem with `field` of this pool names."""
        if self.index is None:
            return {"instanceType": "gpuInstanceType", "nodeCount": "gpuNodeCount",
                    "availabilityZone": "availabilityZone",
                    "rootVolumeGiB": "gpuRootVolumeGiB",
                    "capacityReservationId": "gpuCapacityReservationId"}[field]
        return f"gpuPools[{self.index}].{field}"

    @property
    def resource_suffix(self) -> str:
        """The part of its resources' names that is the pool's: `gpu` for the default pool (its
        pre-pool names), `gpu-<name>` for every other."""
        return "gpu" if self.name == DEFAULT_POOL else f"gpu-{self.name}"


_node_count = rules.whole_number(*NODE_COUNT)
_root_volume = rules.whole_number(*ROOT_VOLUME_GIB)


def pool_name(key: str, value: Any) -> list[Problem]:
    """A DNS label of at most 20 characters that is neither the partition over every pool nor
    the name slurm.conf reserves for its defaults."""
    if not isinstance(value, str) or not _POOL_NAME.match(value):
        return [error(key, value, "lower-case letters, digits and '-', starting with a letter and "
                      "ending with a letter or digit, at most 20 characters")]
    if value == ALL_POOLS_PARTITION:
        return [error(key, value, f"any name but '{ALL_POOLS_PARTITION}', the partition over every pool")]
    if value == SLURM_DEFAULTS_NAME:
        return [error(key, value, f"any name but '{SLURM_DEFAULTS_NAME}': slurm.conf reads "
                      "PartitionName=DEFAULT as the defaults of the other partitions, so the pool "
                      "would have no partition")]
    return []


def _one_pool(i: int, entry: Any, zone: str, root_gib: int) -> tuple[GpuPool | None, list[Problem]]:
    at = f"gpuPools[{i}]"
    if not isinstance(entry, dict):
        return None, [error(at, entry, "an object {name, instanceType, nodeCount, availabilityZone?, "
                                       "rootVolumeGiB?, capacityReservationId?}")]
    problems = [error(f"{at}.{k}", entry[k], f"not a pool field; fields: {', '.join(_FIELDS)}")
                for k in entry if k not in _FIELDS]
    problems += pool_name(f"{at}.name", entry.get("name"))
    problems += rules.gpu_instance_type(f"{at}.instanceType", entry.get("instanceType"))
    problems += _node_count(f"{at}.nodeCount", entry.get("nodeCount"))
    pool_zone = entry.get("availabilityZone", zone)
    # An unset availabilityZone, which the pools default to, is reported once, as itself.
    if "availabilityZone" in entry and (not isinstance(pool_zone, str) or not pool_zone):
        problems.append(error(f"{at}.availabilityZone", pool_zone, "an availability zone name"))
    if "rootVolumeGiB" in entry:
        problems += _root_volume(f"{at}.rootVolumeGiB", entry["rootVolumeGiB"])
    problems += capacity.reservation_id(f"{at}.capacityReservationId", entry.get("capacityReservationId", ""))
    if problems:
        return None, problems
    return GpuPool(entry["name"], catalog.lookup(entry["instanceType"]), entry["nodeCount"], pool_zone,
                   entry.get("rootVolumeGiB", root_gib), i,
                   capacity_reservation_id=entry.get("capacityReservationId", "")), []


def pools_from_config(raw: Any, zone: str, root_gib: int) -> tuple[list[GpuPool], list[Problem]]:
    """The pools of a gpuPools value (a list of objects), each field defaulted from the stack's
    availabilityZone and gpuRootVolumeGiB; every problem at once."""
    if not isinstance(raw, list) or not raw:
        return [], [error("gpuPools", raw, "a non-empty list of pools {name, instanceType, nodeCount, "
                          "availabilityZone?, rootVolumeGiB?}; leave it unset for one pool from "
                          "gpuInstanceType and gpuNodeCount")]
    problems: list[Problem] = []
    if len(raw) > MAX_POOLS:
        problems.append(error("gpuPools", f"{len(raw)} pools", f"at most {MAX_POOLS}: EKS allows 30 "
                              "managed node groups per cluster by default and the core nodes take one"))
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
            problems.append(error(f"gpuPools[{i}].name", name, f"a name no other pool has "
                                  f"(gpuPools[{seen[name]}] is already '{name}')"))
        elif isinstance(name, str):
            seen[name] = i
    # Pods and Slurm nodes are found by name prefix: slurm-worker-<pool>- and <pool>-<ordinal>. A
    # pool `a` beside `a-b` would count a-b's pods and nodes as its own (verify, the readiness wait).
    # Only names that passed the name rule: a refused name is reported once, as itself.
    valid = {name: i for name, i in seen.items() if not pool_name(f"gpuPools[{i}].name", name)}
    for name, i in valid.items():
        for other, j in valid.items():
            if other != name and name.startswith(f"{other}-"):
                problems.append(error(f"gpuPools[{i}].name", name, f"a name that does not begin with "
                                      f"another pool's name and '-' (gpuPools[{j}] is '{other}': its pods "
                                      f"and Slurm nodes are found by the prefixes slurm-worker-{other}- and "
                                      f"{other}-)"))
    return pools, problems


def default_pool(instance_type: Any, node_count: Any, zone: str, root_gib: int,
                 reservation_id: Any = "") -> list[GpuPool]:
    """The one pool of a stack without gpuPools, once gpuInstanceType is valid (its rules report
    it otherwise). A count that is refused becomes 0, so that the account checks still look at
    the type and the AZ but count no nodes; a reservation id that is refused (its key's rule
    reports it) becomes none, so that the account is not asked about it."""
    gpu = catalog.lookup(instance_type) if isinstance(instance_type, str) else None
    if gpu is None:
        return []
    count = node_count if not _node_count("gpuNodeCount", node_count) else 0
    reservation = reservation_id if not capacity.reservation_id("gpuCapacityReservationId", reservation_id) else ""
    return [GpuPool(DEFAULT_POOL, gpu, count, zone, root_gib, capacity_reservation_id=reservation)]


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
