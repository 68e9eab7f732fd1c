"""A VPC the stack is given instead of creating one (vpcId, privateSubnetIds, publicSubnetIds):
what the keys must say, and what must hold in the account before the first resource. Pure: the
account is asked through the NetworkAccount protocol (stack/account.py answers it with pulumi-aws
invokes, devkit's mocks answer those), every finding is a Problem under the key it is about, and
they go into the same list as the preflight's (model/checks/preflight.py), all at once.

What must hold, each a rule:
- the VPC exists, with DNS support and DNS hostnames on (EKS: "Your VPC must have DNS hostname and
  DNS resolution support, or nodes can't register to your cluster", EKS user guide, network-reqs);
- every subnet exists and is in the VPC;
- every private subnet has a route out: its route table (or the VPC's main table, where the subnet
  has no explicit association) sends 0.0.0.0/0 to a NAT gateway, a Transit Gateway, a virtual
  private gateway, an instance or network interface, a VPC peering connection, a Cloud WAN core
  network or a Gateway Load Balancer endpoint (EC2 API Reference, Route: NatGatewayId,
  TransitGatewayId, GatewayId, InstanceId, NetworkInterfaceId, VpcPeeringConnectionId,
  CoreNetworkArn, https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_Route.html). An internet gateway is
  no way out for nodes, which have no public address;
- every public subnet sends 0.0.0.0/0 to an internet gateway: an internet-facing load balancer's
  subnets must be public (Elastic Load Balancing, "Subnets for your Network Load Balancer":
  https://docs.aws.amazon.com/elasticloadbalancing/latest/network/network-load-balancers.html#subnets),
  (the load balancer controller is laxer: it calls a subnet public when any route of its table,
  whatever the destination, goes to a gateway whose id starts with igw-; aws-load-balancer-controller
  v3.5.0 pkg/networking/subnet_resolver.go, isSubnetContainsRouteToIGW);
- the private subnets span two AZs (EKS: "subnets in at least two different Availability Zones",
  EKS user guide, https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html), and every
  GPU pool's AZ has one;
- every subnet has as many free addresses (Subnet.AvailableIpAddressCount) as its nodes take
  (node_addresses below).
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from model.checks.gpu_pools import GpuPool
from model.checks.preflight import PREFLIGHT_SKIPPED, PermissionDenied
from model.checks.problems import ERROR, WARNING, Problem, applies, error, identify, warning

SUBNET_IDS = identify("subnet-ids", ERROR, "a list of distinct subnet ids (subnet-...)")
SUBNETS_NEED_VPC = identify(
    "subnets-need-vpc", ERROR, "subnet ids only with vpcId", "privateSubnetIds", "publicSubnetIds"
)
VPC_NEEDS_PRIVATE_SUBNETS = identify(
    "vpc-needs-private-subnets", ERROR, "privateSubnetIds with vpcId", "privateSubnetIds"
)
SUBNET_PRIVATE_AND_PUBLIC = identify(
    "subnet-private-and-public", ERROR, "no subnet both private and public", "publicSubnetIds"
)
OWN_NETWORK_KEY_IGNORED = identify(
    "own-network-key-ignored",
    WARNING,
    "no key of the stack's own VPC beside vpcId, which overrides it",
    "vpcCidr",
    "flowLogsDestination",
    "flowLogsRetentionDays",
)
# The keys of the VPC the stack creates, and why a given VPC ignores each.
OWN_NETWORK_KEYS = {
    "vpcCidr": "which keeps its own blocks",
    "flowLogsDestination": "whose flow logs are its owner's",
    "flowLogsRetentionDays": "whose flow logs are its owner's",
}
LOGIN_ZONES = identify(
    "login-subnet-zones",
    ERROR,
    "a public subnet in every AZ of privateSubnetIds, where publicSubnetIds is given",
    "publicSubnetIds",
)
LOGIN_ADDRESSES = identify(
    "login-subnet-addresses",
    ERROR,
    "login load balancer subnets with at least 8 free addresses",
    "publicSubnetIds",
    "privateSubnetIds",
)
INTERNAL_LOGIN_REACH = identify(
    "internal-login-reach",
    WARNING,
    "an internal login with an sshAllowedCidrs block that private networks or the VPC can reach from",
    "sshAllowedCidrs",
    "publicSubnetIds",
)
VPC_DESCRIBABLE = identify("vpc-describable", ERROR, "a VPC the deployer can describe", "vpcId")
VPC_EXISTS = identify("vpc-exists", ERROR, "a VPC EC2 knows in the region", "vpcId")
VPC_DNS = identify("vpc-dns", ERROR, "a VPC with DNS support and DNS hostnames on", "vpcId")
SUBNET_EXISTS = identify(
    "subnet-exists", ERROR, "a subnet EC2 knows in the region", "privateSubnetIds", "publicSubnetIds"
)
SUBNET_IN_VPC = identify(
    "subnet-in-vpc", ERROR, "a subnet of the VPC vpcId names", "privateSubnetIds", "publicSubnetIds"
)
SUBNET_ROUTE_OUT = identify(
    "subnet-route-out", ERROR, "a private subnet with a default route out", "privateSubnetIds"
)
PUBLIC_SUBNET_INTERNET_ROUTE = identify(
    "public-subnet-internet-route", ERROR, "a public subnet routed to an internet gateway", "publicSubnetIds"
)
SUBNET_ADDRESSES = identify(
    "subnet-addresses", ERROR, "a subnet with free addresses for its nodes", "privateSubnetIds"
)
SUBNETS_TWO_ZONES = identify(
    "subnets-two-zones", ERROR, "private subnets in at least two AZs", "privateSubnetIds"
)
POOL_ZONE_SUBNET = identify(
    "pool-zone-subnet",
    ERROR,
    "a given private subnet in every GPU pool's AZ",
    "availabilityZone",
    "gpuPools[].availabilityZone",
)

PRIVATE, PUBLIC = "privateSubnetIds", "publicSubnetIds"
_SUBNET_ID_CHARS = frozenset("0123456789abcdef")

# The route targets that take a node's traffic out of the VPC without a public address of its own,
# as the route table data source names EC2's Route fields (Route: the table above).
EGRESS_TARGETS = (
    "nat_gateway_id",
    "transit_gateway_id",
    "instance_id",
    "network_interface_id",
    "vpc_peering_connection_id",
    "core_network_arn",
    # A Gateway Load Balancer endpoint (an AWS Network Firewall's among them): centralised egress
    # through an inspection VPC. The route table data source files a vpce- target here, not under
    # gateway_id (terraform-provider-aws internal/service/ec2/vpc_route_table_data_source.go).
    "vpc_endpoint_id",
)
# GatewayId holds an internet gateway (igw-) or a virtual private gateway (vgw-): only the second
# is a way out for a node with no public address.
_VPN_GATEWAY, _INTERNET_GATEWAY = "vgw-", "igw-"

# Addresses EKS takes in each cluster subnet for its network interfaces: "at least six IP
# addresses for use by Amazon EKS" (EKS user guide, network-reqs, subnet requirements).
EKS_ADDRESSES_PER_SUBNET = 6
# The VPC CNI's default WARM_ENI_TARGET=1 keeps "a full ENI" of addresses free beside those its
# pods use: a node running fewer pods than one interface holds has two interfaces attached, every
# address of both taken from the subnet (aws/amazon-vpc-cni-k8s docs/eni-and-ip-target.md, its
# table: a p3dn.24xlarge with 3 pods holds 2 ENIs and 98 secondary addresses). A node with more
# pods takes a third interface, and so on: two is the least a node takes, so a subnet refused for
# less than it is one that surely cannot hold its nodes.
CNI_INTERFACES_PER_NODE = 2


def node_addresses(ipv4_per_interface: int) -> int:
    """The least addresses one node takes from its subnet: the VPC CNI's two interfaces with every
    address each can hold (DescribeInstanceTypes NetworkInfo.Ipv4AddressesPerInterface). A GPU
    node's EFA interfaces add none: the launch template puts the one interface that carries
    addresses on card 0, and every other card's is EFA-only, which has no IP address (EC2 user
    guide, "Elastic Fabric Adapter": EFA-only interfaces,
    https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html; model/facts/catalog.py
    network_interfaces)."""
    return CNI_INTERFACES_PER_NODE * ipv4_per_interface


@applies(SUBNET_IDS)
def subnet_ids(key: str, value: Any) -> list[Problem]:
    """A list of distinct subnet-<hex> ids."""
    if not isinstance(value, list):
        return [error(SUBNET_IDS, key, value, 'a list of subnet ids, e.g. ["subnet-0a1b2c3d4e5f60718"]')]
    found = []
    for sid in value:
        hexpart = sid[len("subnet-") :] if isinstance(sid, str) and sid.startswith("subnet-") else ""
        if len(hexpart) not in (8, 17) or not set(hexpart) <= _SUBNET_ID_CHARS:
            found.append(error(SUBNET_IDS, key, sid, "a subnet id: subnet- and 8 or 17 hex digits"))
    repeated = sorted({s for s in value if isinstance(s, str) and value.count(s) > 1})
    found += [error(SUBNET_IDS, key, s, "each subnet once in the list") for s in repeated]
    return found


def keys_fit(ok: dict[str, Any]) -> list[Problem]:
    """The three keys together: subnets only with a VPC, private subnets with one, no subnet in
    both lists."""
    vpc, private, public = ok.get("vpcId"), ok.get(PRIVATE), ok.get(PUBLIC)
    if vpc is None:
        return []
    if not vpc:
        return [
            error(SUBNETS_NEED_VPC, key, ids, "empty unless vpcId names the VPC they are in")
            for key, ids in ((PRIVATE, private), (PUBLIC, public))
            if ids
        ]
    found = []
    if private == []:
        found.append(
            error(
                VPC_NEEDS_PRIVATE_SUBNETS,
                PRIVATE,
                private,
                "the private subnets of vpcId for the nodes, the EFS mount targets and the accounting "
                "database, in at least two AZs",
            )
        )
    for sid in sorted(set(private or []) & set(public or [])):
        found.append(
            error(
                SUBNET_PRIVATE_AND_PUBLIC,
                PUBLIC,
                sid,
                f"a subnet for the login load balancer only; {sid} is in privateSubnetIds too",
            )
        )
    return found


def own_network_keys_ignored(values: dict[str, Any], defaults: dict[str, Any]) -> list[Problem]:
    """A warning for each key of OWN_NETWORK_KEYS other than its default beside vpcId: the stack
    creates no VPC, so it is ignored. (The CLI hands the program Pulumi.yaml's default for an unset
    key, so only a value other than the default can be the stack's own.)"""
    if not values.get("vpcId"):
        return []
    return [
        warning(
            OWN_NETWORK_KEY_IGNORED,
            key,
            values[key],
            f"{key} = {values[key]!r} is ignored: vpcId names an existing VPC, {why}; remove it with "
            f"`pulumi config rm {key}`",
        )
        for key, why in OWN_NETWORK_KEYS.items()
        if values.get(key) not in (None, defaults[key])
    ]


@dataclass(frozen=True)
class Vpc:
    vpc_id: str
    arn: str
    owner_id: str
    cidr_block: str
    dns: bool = True  # enable_dns_support and enable_dns_hostnames both on


@dataclass(frozen=True)
class Subnet:
    subnet_id: str
    vpc_id: str
    zone: str  # its availability zone's name in this account
    zone_id: str
    available_addresses: int  # AvailableIpAddressCount
    tags: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class RouteTable:
    route_table_id: str
    # Each route as {field: value} with the data source's field names, empty fields left out.
    routes: tuple[dict[str, str], ...]
    main: bool  # the VPC's main table, which the subnet uses for want of an explicit association

    def route_out(self) -> str | None:
        """The target of its default route when it leads out of the VPC, else None."""
        for route in self.routes:
            if route.get("cidr_block") != "0.0.0.0/0":
                continue
            for target in EGRESS_TARGETS:
                if route.get(target):
                    return route[target]
            if route.get("gateway_id", "").startswith(_VPN_GATEWAY):
                return route["gateway_id"]
        return None

    def internet_gateway(self) -> str | None:
        """The internet gateway its default route goes to, else None."""
        for route in self.routes:
            if route.get("cidr_block") == "0.0.0.0/0" and route.get("gateway_id", "").startswith(
                _INTERNET_GATEWAY
            ):
                return route["gateway_id"]
        return None


class NetworkAccount(Protocol):
    """The questions asked of the account about a given VPC; a refused call raises
    PermissionDenied naming the IAM action."""

    def vpc(self, region: str, vpc_id: str) -> Vpc | None:
        """The VPC, or None where EC2 knows no such id in the region."""

    def subnet(self, region: str, subnet_id: str) -> Subnet | None:
        """The subnet, or None where EC2 knows no such id in the region."""

    def route_table(self, region: str, vpc_id: str, subnet_id: str) -> RouteTable | None:
        """The subnet's route table: the one explicitly associated with it, else the VPC's main one;
        None where DescribeRouteTables shows the deployer neither."""

    def ipv4_per_interface(self, region: str, instance_type: str) -> int:
        """NetworkInfo.Ipv4AddressesPerInterface of the instance type."""


@dataclass(frozen=True)
class ExistingVpc:
    """The given VPC as the account described it: what the stack puts where."""

    vpc: Vpc
    private: tuple[Subnet, ...]  # privateSubnetIds, in the order given
    public: tuple[Subnet, ...] = field(default=())  # publicSubnetIds, in the order given

    @property
    def private_by_zone(self) -> dict[str, Subnet]:
        """The first given private subnet of each AZ: a GPU pool's node group and that AZ's EFS
        mount target go there (EFS takes one mount target per AZ)."""
        found: dict[str, Subnet] = {}
        for s in self.private:
            found.setdefault(s.zone, s)
        return found

    @property
    def zones(self) -> tuple[str, ...]:
        """The AZs of the private subnets, in the order given: where the core nodes may run."""
        return tuple(self.private_by_zone)

    @property
    def login_internal(self) -> bool:
        """No public subnet given: the login load balancer is internal, in the private subnets."""
        return not self.public

    @property
    def login_subnet_ids(self) -> tuple[str, ...]:
        """The login load balancer's subnets, the first given of each AZ (the controller takes at
        most one subnet per AZ: aws-load-balancer-controller v3.5.0
        pkg/networking/subnet_resolver.go, validateSubnetsAZExclusivity)."""
        found: dict[str, str] = {}
        for s in self.public or self.private:
            found.setdefault(s.zone, s.subnet_id)
        return tuple(found.values())


# The address ranges a client of an internal load balancer can come from besides the VPC's own:
# private networks routed to the VPC (a peered VPC, a VPN, Direct Connect, a Transit Gateway)
# use them. RFC 1918, "Private Address Space" (https://www.rfc-editor.org/rfc/rfc1918#section-3)
# and RFC 6598's shared address space (https://www.rfc-editor.org/rfc/rfc6598#section-7).
PRIVATE_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")


def internal_login_reach(vpc: ExistingVpc, cidrs: Sequence[str], out: list[Problem]) -> None:
    """An internal login (no publicSubnetIds) has only private addresses, so a client reaches it
    from the VPC or a private network routed to it; the login NLB admits sshAllowedCidrs alone.
    Where no block of them overlaps a private range or the VPC's CIDR, no client can both reach it
    and be admitted: a warning, since the deployment itself succeeds."""
    if not vpc.login_internal:
        return
    reachable = [ipaddress.ip_network(c) for c in (*PRIVATE_RANGES, vpc.vpc.cidr_block)]
    blocks = [ipaddress.ip_network(c, strict=False) for c in cidrs]
    if any(b.version == r.version and b.overlaps(r) for b in blocks for r in reachable):
        return
    out.append(
        warning(
            INTERNAL_LOGIN_REACH,
            "sshAllowedCidrs",
            list(cidrs),
            f"the login load balancer is internal (publicSubnetIds is empty), so only clients in "
            f"{vpc.vpc.vpc_id} ({vpc.vpc.cidr_block}) or private networks routed to it reach it, and "
            "sshAllowedCidrs admits none of them: add the block your SSH clients come from inside "
            "the VPC or a private network (RFC 1918 or RFC 6598), or give publicSubnetIds for an "
            "internet-facing login",
        )
    )


def check(
    account: NetworkAccount,
    region: str,
    vpc_id: str,
    private_ids: Sequence[str],
    public_ids: Sequence[str],
    pools: Sequence[GpuPool],
    core_type: str,
    core_count: int,
    out: list[Problem],
) -> ExistingVpc | None:
    """Every rule of the module docstring; the VPC as found, or None where any refused it. A
    deployer who may not describe the VPC, its subnets or their route tables is refused under
    vpcId: none of it could be checked, and the stack would build on what it cannot see."""
    before = len([p for p in out if p.is_error])
    try:
        found = _described(
            account, region, vpc_id, private_ids, public_ids, pools, core_type, core_count, out
        )
    except PermissionDenied as denied:
        out.append(
            error(
                VPC_DESCRIBABLE,
                "vpcId",
                vpc_id,
                f"a VPC the deployer can describe (it lacks {denied.action}, which the program needs to "
                "check the VPC, its subnets and their routes before creating anything in them)",
            )
        )
        return None
    return found if len([p for p in out if p.is_error]) == before else None


def _described(
    account: NetworkAccount,
    region: str,
    vpc_id: str,
    private_ids: Sequence[str],
    public_ids: Sequence[str],
    pools: Sequence[GpuPool],
    core_type: str,
    core_count: int,
    out: list[Problem],
) -> ExistingVpc | None:
    vpc = account.vpc(region, vpc_id)
    if vpc is None:
        out.append(
            error(VPC_EXISTS, "vpcId", vpc_id, f"the id of a VPC in {region}: EC2 knows no {vpc_id} there")
        )
        return None
    if not vpc.dns:
        out.append(
            error(
                VPC_DNS,
                "vpcId",
                vpc_id,
                "a VPC with DNS support and DNS hostnames on, without which nodes cannot register with EKS "
                f"(aws ec2 modify-vpc-attribute --vpc-id {vpc_id} --enable-dns-hostnames, and "
                "--enable-dns-support, each in its own call)",
            )
        )
    private = _subnets(account, region, vpc, PRIVATE, private_ids, out)
    public = _subnets(account, region, vpc, PUBLIC, public_ids, out)
    for s in private:
        _route_out(account, region, vpc, s, out)
    for s in public:
        _route_in(account, region, vpc, s, out)
    _zones(private, pools, out)
    _login_zones(private, public, out)
    found = ExistingVpc(vpc, tuple(private), tuple(public))
    _login_addresses(found, out)
    _addresses(account, region, found, pools, core_type, core_count, out)
    return found


def _subnets(
    account: NetworkAccount, region: str, vpc: Vpc, key: str, ids: Sequence[str], out: list[Problem]
) -> list[Subnet]:
    found = []
    for sid in ids:
        s = account.subnet(region, sid)
        if s is None:
            out.append(
                error(SUBNET_EXISTS, key, sid, f"the id of a subnet in {region}: EC2 knows no {sid} there")
            )
        elif s.vpc_id != vpc.vpc_id:
            out.append(
                error(
                    SUBNET_IN_VPC,
                    key,
                    sid,
                    f"a subnet of {vpc.vpc_id} (vpcId); {sid} is in {s.vpc_id}",
                )
            )
        else:
            found.append(s)
    return found


def _unseen_routes(key: str, s: Subnet, what: str) -> Problem:
    return warning(
        PREFLIGHT_SKIPPED,
        key,
        s.subnet_id,
        f"preflight: could not check that {s.subnet_id} {what}: DescribeRouteTables shows no route table for "
        "it (neither its own nor the VPC's main one); the check is skipped",
    )


def _table_phrase(table: RouteTable, main_note: str = "") -> str:
    """How a problem names the table a subnet routes by: its own, or the VPC's main one."""
    if table.main:
        return f"the VPC's main route table {table.route_table_id}{main_note}"
    return f"its route table {table.route_table_id}"


def _route_out(account: NetworkAccount, region: str, vpc: Vpc, s: Subnet, out: list[Problem]) -> None:
    table = account.route_table(region, vpc.vpc_id, s.subnet_id)
    if table is None:
        out.append(_unseen_routes(PRIVATE, s, "routes 0.0.0.0/0 out of the VPC"))
        return
    if table.route_out() is not None:
        return
    which = _table_phrase(table, " (it has no table of its own)")
    out.append(
        error(
            SUBNET_ROUTE_OUT,
            PRIVATE,
            s.subnet_id,
            f"a private subnet with a way out: {which} sends 0.0.0.0/0 to no NAT gateway, Transit Gateway, "
            "virtual private gateway, instance, network interface, peering connection or core network, so "
            "nodes there could not reach EKS, ECR or S3 (an internet gateway serves only addresses that "
            "are public)",
        )
    )


def _route_in(account: NetworkAccount, region: str, vpc: Vpc, s: Subnet, out: list[Problem]) -> None:
    table = account.route_table(region, vpc.vpc_id, s.subnet_id)
    if table is None:
        out.append(_unseen_routes(PUBLIC, s, "routes 0.0.0.0/0 to an internet gateway"))
        return
    if table.internet_gateway() is not None:
        return
    which = _table_phrase(table)
    out.append(
        error(
            PUBLIC_SUBNET_INTERNET_ROUTE,
            PUBLIC,
            s.subnet_id,
            f"a public subnet: {which} sends 0.0.0.0/0 to no internet gateway, so the internet-facing login "
            "load balancer could not be reached there; allowed: subnets routed to an internet gateway, or [] "
            "for an internal login load balancer",
        )
    )


def _zones(private: list[Subnet], pools: Sequence[GpuPool], out: list[Problem]) -> None:
    zones = {s.zone for s in private}
    if private and len(zones) < 2:
        out.append(
            error(
                SUBNETS_TWO_ZONES,
                PRIVATE,
                [s.subnet_id for s in private],
                f"private subnets in at least two AZs (EKS and the accounting database need two); all "
                f"are in {', '.join(sorted(zones))}",
            )
        )
    seen: set[str] = set()
    for pool in pools:
        if not private or pool.availability_zone in zones or pool.availability_zone in seen:
            continue
        seen.add(pool.availability_zone)
        out.append(
            error(
                POOL_ZONE_SUBNET,
                pool.key("availabilityZone"),
                pool.availability_zone,
                f"an AZ with a subnet in privateSubnetIds ({', '.join(sorted(zones))}): pool {pool.name}'s "
                "nodes launch in a given private subnet of their AZ; add one there or move the pool",
            )
        )


def _login_zones(private: list[Subnet], public: list[Subnet], out: list[Problem]) -> None:
    """The login pod runs on a core node, in any AZ of the private subnets, and its NLB sends to
    the pod's address (target type ip: model/builders/login_endpoint.py); an NLB routes to no
    target in an AZ it is not enabled in (Elastic Load Balancing, "Availability Zones and load
    balancer nodes": "If you register targets in an Availability Zone but do not enable the
    Availability Zone, these registered targets do not receive traffic",
    https://docs.aws.amazon.com/elasticloadbalancing/latest/network/network-load-balancers.html#availability-zones).
    So every private subnet's AZ needs a public subnet; an internal login, in the private subnets
    themselves, covers them all."""
    if not public:
        return
    missing = sorted({s.zone for s in private} - {s.zone for s in public})
    if missing:
        out.append(
            error(
                LOGIN_ZONES,
                PUBLIC,
                [s.subnet_id for s in public],
                f"a public subnet in every AZ of privateSubnetIds: {', '.join(missing)} has none, and "
                "the login pod may run on a core node there, where its internet-facing load balancer "
                "sends nothing; add a public subnet of that AZ, or drop that AZ's private subnets",
            )
        )


# The fewest free addresses the load balancer controller takes a subnet with when it discovers
# them (aws-load-balancer-controller v3.5.0 pkg/networking/subnet_resolver.go,
# minimalAvailableIPAddressCount); subnets named to it, as the stack names the login's, skip that
# filter, and the NLB's interface then has no room to be made in.
LOGIN_MIN_FREE_ADDRESSES = 8


def _login_addresses(vpc: ExistingVpc, out: list[Problem]) -> None:
    """Each subnet the login load balancer is given (ExistingVpc.login_subnet_ids) has at least
    LOGIN_MIN_FREE_ADDRESSES free."""
    by_id = {s.subnet_id: s for s in (*vpc.public, *vpc.private)}
    key = PUBLIC if vpc.public else PRIVATE
    for subnet_id in vpc.login_subnet_ids:
        s = by_id[subnet_id]
        if s.available_addresses < LOGIN_MIN_FREE_ADDRESSES:
            out.append(
                error(
                    LOGIN_ADDRESSES,
                    key,
                    subnet_id,
                    f"a subnet for the login load balancer with at least {LOGIN_MIN_FREE_ADDRESSES} free "
                    f"addresses: {subnet_id} ({s.zone}) has {s.available_addresses}, and the login's NLB "
                    "takes the first given subnet of each AZ; put another subnet of that AZ first",
                )
            )


def _addresses(
    account: NetworkAccount,
    region: str,
    found: ExistingVpc,
    pools: Sequence[GpuPool],
    core_type: str,
    core_count: int,
    out: list[Problem],
) -> None:
    """Each private subnet's need: EKS's six, its share of the core nodes (coreNodeCount plus the
    one a rolling update adds, spread over the private subnets), and every node of each GPU pool
    whose AZ's first subnet it is (maxNodes), each node_addresses(its type)."""
    if not found.private:
        return
    try:
        _count(account, region, found, pools, core_type, core_count, out)
    except PermissionDenied as denied:
        out.append(
            warning(
                PREFLIGHT_SKIPPED,
                PRIVATE,
                [s.subnet_id for s in found.private],
                f"preflight: could not check the subnets' free addresses: the deployer lacks {denied.action}; "
                "the check is skipped",
            )
        )


def _count(
    account: NetworkAccount,
    region: str,
    found: ExistingVpc,
    pools: Sequence[GpuPool],
    core_type: str,
    core_count: int,
    out: list[Problem],
) -> None:
    need = {s.subnet_id: EKS_ADDRESSES_PER_SUBNET for s in found.private}
    parts: dict[str, list[str]] = {s.subnet_id: [f"EKS {EKS_ADDRESSES_PER_SUBNET}"] for s in found.private}
    if core_type and core_count >= 1:
        share = math.ceil((core_count + 1) / len(found.private))
        each = node_addresses(account.ipv4_per_interface(region, core_type))
        for s in found.private:
            need[s.subnet_id] += share * each
            parts[s.subnet_id].append(f"core {share} x {each}")
    by_zone = found.private_by_zone
    for pool in pools:
        s = by_zone.get(pool.availability_zone)
        if s is None:
            continue
        each = node_addresses(account.ipv4_per_interface(region, pool.gpu.name))
        need[s.subnet_id] += pool.max_nodes * each
        parts[s.subnet_id].append(f"pool {pool.name} {pool.max_nodes} x {each}")
    for s in found.private:
        if s.available_addresses < need[s.subnet_id]:
            out.append(
                error(
                    SUBNET_ADDRESSES,
                    PRIVATE,
                    s.subnet_id,
                    f"a subnet with {need[s.subnet_id]} free addresses ({' + '.join(parts[s.subnet_id])}: "
                    f"each node takes {CNI_INTERFACES_PER_NODE} network interfaces' worth, as the README's "
                    f"'Into an existing VPC' says); it has {s.available_addresses}",
                )
            )
