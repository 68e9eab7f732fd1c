"""Where the nodes' subnets go, and which VPC block each one takes, so that no existing subnet
moves when a GPU pool is added in another AZ, removed, or the pools are reordered.

The cluster's two zones (availabilityZone, and the eligible zone with the lowest zone id besides
it) depend on availabilityZone alone and keep positions 0 and 1: the control plane, the core
node group, the NAT gateway and the load balancers live there. Every other pool AZ gets a private
subnet only, in a slot of its own derived from its zone id (usw2-az4 -> 4), never from the pools'
order.

The VPC block (vpcCidr) in eighths, as before there were pools:
  eighths 0, 1: the cluster zones' private subnets (positions 0, 1)
  eighths 4, 5: the cluster zones' public subnets
  eighths 2, 3, 6, 7, each halved: eight pool-zone slots, for zone id numbers 1-8
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

# Pool-zone slots, two in each eighth left over. AZ ids end in "-az<number>" (AWS RAM user guide,
# "Availability Zone IDs for your AWS resources":
# https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html); the region with the
# most AZs, us-east-1, has six (use1-az1 .. use1-az6,
# https://aws.amazon.com/about-aws/global-infrastructure/regions_az/), so eight slots leave room.
POOL_ZONE_SLOTS = 8
_ZONE_NUMBER = re.compile(r"-az(\d+)$")
_CLUSTER_PRIVATE, _CLUSTER_PUBLIC, _POOL_EIGHTHS = (0, 1), (4, 5), (2, 3, 6, 7)


@dataclass(frozen=True)
class NodeZone:
    name: str  # us-west-2d: this account's name for the zone
    zone_id: str  # usw2-az4: the same physical zone in every account
    cluster_position: int | None = None  # 0 or 1 for the cluster's two zones, else None

    @property
    def pool_slot(self) -> int | None:
        """A pool zone's slot (zone id number - 1); None when the zone id has no number that fits."""
        found = _ZONE_NUMBER.search(self.zone_id)
        slot = int(found.group(1)) - 1 if found else -1
        return slot if 0 <= slot < POOL_ZONE_SLOTS else None


def order(cluster_zones: tuple[NodeZone, NodeZone], pool_zones: list[NodeZone]) -> tuple[NodeZone, ...]:
    """The cluster's two zones at positions 0 and 1, then each pool zone not among them once,
    by zone id: the same tuple whatever order the pools are listed in."""
    first = tuple(NodeZone(z.name, z.zone_id, i) for i, z in enumerate(cluster_zones))
    taken = {z.zone_id for z in first}
    rest = {z.zone_id: NodeZone(z.name, z.zone_id) for z in pool_zones if z.zone_id not in taken}
    return (*first, *(rest[zone_id] for zone_id in sorted(rest)))


def _eighths(vpc_cidr: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return list(ipaddress.ip_network(vpc_cidr).subnets(prefixlen_diff=3))


def private_cidr(vpc_cidr: str, zone: NodeZone) -> str:
    """A cluster zone's eighth, or half of a left-over eighth for a pool zone (whose nodes,
    unlike a cluster zone's, are GPU nodes only: no core nodes)."""
    eighths = _eighths(vpc_cidr)
    if zone.cluster_position is not None:
        return str(eighths[_CLUSTER_PRIVATE[zone.cluster_position]])
    slot = zone.pool_slot
    if slot is None:
        raise ValueError(f"{zone.name} ({zone.zone_id}) has no pool zone slot")
    return str(list(eighths[_POOL_EIGHTHS[slot // 2]].subnets(prefixlen_diff=1))[slot % 2])


def public_cidr(vpc_cidr: str, zone: NodeZone) -> str:
    """Only the cluster's two zones have a public subnet (NAT gateway, load balancers)."""
    if zone.cluster_position is None:
        raise ValueError(f"{zone.name} is a pool zone: it has no public subnet")
    return str(_eighths(vpc_cidr)[_CLUSTER_PUBLIC[zone.cluster_position]])


def subnet_key(zone: NodeZone) -> str:
    """What a resource per node subnet is named by: the position for the cluster's two zones
    (their names since the first release), the zone name for a pool zone."""
    return str(zone.cluster_position) if zone.cluster_position is not None else zone.name
