"""Where each GPU node sits in the network, as Slurm is told it: the Controller's topology.yaml
and each Kubernetes node's `topology.slinky.slurm.net/spec` annotation. Pure: the writer running
in the cluster and the real-Slurm tests call these with what they observe.

How Slinky carries it (SlinkyProject/slurm-operator v1.2.1 docs/usage/topology.md): the
Controller mounts topology.yaml; the operator copies a node's annotation, `<topology>:<unit>`
pairs joined by commas (e.g. `topo-switch:s1,topo-block:b1`), onto the Slurm node that runs on it
(internal/controller/nodeset/nodeset_sync.go syncSlurmTopology -> UpdateNodeTopology, the node's
topology_str).

topology.yaml (https://slurm.schedmd.com/topology.yaml.html, Slurm 25.05 and later): a list of
topologies, each `topology: <name>` first, `cluster_default`, and one of `tree` (switches, each
with `children` or `nodes`), `block` (`block_sizes`, blocks) or `flat: true`. Partitions pick one
with `Topology=<name>`; the first marked cluster_default serves the rest.

What the skeleton holds, and why:
- no `nodes:` anywhere: the Slurm nodes are dynamic (slurmd -Z), and a file that names a node
  before it registers is refused; each node gets its place from its annotation instead.
- `flat`, the one cluster default: partitions of pools EC2 gives no place (g6, the dev stack's)
  and the `all` partition keep running multi-node jobs as today. A tree or block partition
  refuses a multi-node job on nodes without a place.
- `tree`: a root switch over every layer-1 network node, each network node over the ones below
  it, the layer-3 nodes the leaves the annotations name. All leaves sit at the same depth, so an
  annotation's switch path always matches the skeleton's. Without the root, Slurm would not span
  a job across two layer-1 nodes ("Jobs can only span nodes connected by the same switch
  fabric": topology.conf(5)).
- `block`: one block per Capacity Block pool, named after its reservation, its size the
  reservation's instance count (Slurm's base block size: the nodes one block holds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import yaml

from model.facts import instance_topology

SPEC_ANNOTATION = "topology.slinky.slurm.net/spec"

TREE = "tree"
BLOCK = "block"
FLAT = "flat"
# The switch above every layer-1 network node. Network node ids are `nn-` and hex digits (EC2
# API Reference, InstanceTopology.NetworkNodes), so this name cannot collide with one.
ROOT_SWITCH = "network"


@dataclass(frozen=True)
class PoolPlacement:
    """How one GPU pool's partition is placed: on the tree of network nodes, on its Capacity
    Block, or flat (no place known)."""

    pool: str
    kind: str  # TREE, BLOCK or FLAT
    block: str = ""  # BLOCK: the Capacity Block's reservation id (cr-...), the block's name
    block_size: int = 0  # BLOCK: the reservation's instance count

    def __post_init__(self) -> None:
        if self.kind not in (TREE, BLOCK, FLAT):
            raise ValueError(f"placement kind {self.kind!r}: one of {TREE}, {BLOCK}, {FLAT}")
        if (self.kind == BLOCK) != bool(self.block and self.block_size > 0):
            raise ValueError(f"pool {self.pool}: a block placement, and only one, names its block and size")

    @property
    def topology(self) -> str:
        """The topology its partition runs on (the partition's `Topology=`)."""
        return self.kind


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
    path = tuple(labels.get(key, "") for key in instance_topology.NETWORK_NODE_LABELS)
    return path if all(path) else None


def _tree(paths: Iterable[tuple[str, ...]]) -> dict:
    children: dict[str, set[str]] = {ROOT_SWITCH: set()}
    for path in paths:
        parent = ROOT_SWITCH
        for switch in path:
            children.setdefault(parent, set()).add(switch)
            children.setdefault(switch, set())
            parent = switch
    switches = []
    for name in [ROOT_SWITCH, *sorted(set(children) - {ROOT_SWITCH})]:
        entry: dict = {"switch": name}
        if children[name]:
            entry["children"] = ",".join(sorted(children[name]))
        switches.append(entry)
    return {"switches": switches}


def controller_topology(placements: Sequence[PoolPlacement], paths: Iterable[tuple[str, ...]]) -> list[dict]:
    """The Controller's topology.yaml as data: flat (the cluster default) always; tree when a
    pool is placed on it or on a Capacity Block (whose nodes are on the tree too), with every
    switch path seen (switch_path of each node's labels); block when a pool is on a Capacity
    Block. No node is named."""
    out: list[dict] = [{"topology": FLAT, "cluster_default": True, "flat": True}]
    if any(p.kind in (TREE, BLOCK) for p in placements):
        out.append({"topology": TREE, "cluster_default": False, "tree": _tree(paths)})
    blocks = sorted({(p.block, p.block_size) for p in placements if p.kind == BLOCK})
    if blocks:
        sizes = sorted({size for _, size in blocks})
        out.append(
            {
                "topology": BLOCK,
                "cluster_default": False,
                "block": {"block_sizes": sizes[:1], "blocks": [{"block": name} for name, _ in blocks]},
            }
        )
    return out


def topology_yaml(placements: Sequence[PoolPlacement], paths: Iterable[tuple[str, ...]]) -> str:
    """controller_topology as the file's text."""
    return "---\n" + yaml.safe_dump(
        controller_topology(placements, paths), sort_keys=False, default_flow_style=False
    )


def node_spec(place: PoolPlacement, labels: Mapping[str, str]) -> str:
    """The `topology.slinky.slurm.net/spec` value for a node of the pool: `tree:<layer-3 node>`
    where its labels give a whole switch path (any covered node, so a block pool's nodes are on
    the tree too), `block:<reservation>` on a Capacity Block pool, joined by a comma; "" for a
    node with no place (no annotation is written)."""
    parts = []
    path = switch_path(labels)
    if place.kind in (TREE, BLOCK) and path is not None:
        parts.append(f"{TREE}:{path[-1]}")
    if place.kind == BLOCK:
        parts.append(f"{BLOCK}:{place.block}")
    return ",".join(parts)
