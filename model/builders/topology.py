"""Where each GPU node sits in the network, as Slurm is told it: the Controller's topology.yaml
skeleton and each Kubernetes node's `topology.slinky.slurm.net/spec` annotation. Pure. The rules
themselves live once, in the writer that applies them in the cluster
(cluster_programs/network_topology.py, whose docstring says what the skeleton holds and why);
this module decides each pool's placement from the stack's facts and gives the writer's functions
the label keys EKS uses (model/facts/instance_topology.py), for the deploy-time seed, the writer's
configuration and the real-Slurm tests."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable, Mapping, Sequence

from cluster_programs import network_topology as writer
from model.facts import instance_topology

SPEC_ANNOTATION = writer.SPEC_ANNOTATION
TREE, BLOCK, FLAT = writer.TREE, writer.BLOCK, writer.FLAT
ROOT_SWITCH = writer.ROOT_SWITCH


@dataclass(frozen=True)
class PoolPlacement:
    """How one GPU pool's partition is placed: on the tree of network nodes, on its Capacity
    Block, or flat (no place known)."""

    pool: str
    kind: str  # TREE, BLOCK or FLAT
    block: str = ""  # BLOCK: the Capacity Block's reservation id (cr-...), the block's name
    block_size: int = 0  # BLOCK: the reservation's instance count

    def __post_init__(self) -> None:
        if self.kind not in writer.KINDS:
            raise ValueError(f"placement kind {self.kind!r}: one of {', '.join(writer.KINDS)}")
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


def switch_path(labels: Mapping[str, str]) -> tuple[str, ...] | None:
    """A node's network nodes, top layer first, from its labels; None unless all three are set."""
    return writer.switch_path(labels, instance_topology.NETWORK_NODE_LABELS)


def controller_topology(placements: Sequence[PoolPlacement], paths: Iterable[tuple[str, ...]]) -> list[dict]:
    """The Controller's topology.yaml as data, with every switch path in `paths`; no node named."""
    return writer.skeleton([p.as_config() for p in placements], paths)


def topology_yaml(placements: Sequence[PoolPlacement], paths: Iterable[tuple[str, ...]]) -> str:
    """controller_topology as the file's text."""
    return writer.render(controller_topology(placements, paths))


def node_spec(place: PoolPlacement, labels: Mapping[str, str]) -> str:
    """The `topology.slinky.slurm.net/spec` value for a node of the pool; "" for none."""
    return writer.node_spec(place.as_config(), labels, instance_topology.NETWORK_NODE_LABELS)
