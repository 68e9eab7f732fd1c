"""What must hold in the account before the first resource: the node AZs (the cluster's two, and
every GPU pool's, each with a subnet slot: model/facts/node_zones.py), the instance types offered there,
each GPU family's on-demand vCPU quota (summed over the pools in it) and the core nodes', no
duplicate access entry for the deployer, and each pool's capacity reservation (model/facts/capacity.py);
then the on-demand prices for the cost outputs (model/facts/cost.py), which only ever warn.

Pure: the account is asked through the Account protocol (stack/account.py answers it with
pulumi-aws invokes, devkit's mocks answer those invokes), and every finding is a Problem filed
under the config key it is about: a pool's AZ or instance type under that pool's key
(GpuPool.key), aws:region only for what is the region's. Where the account refuses a question,
the check is skipped with a warning under the keys it would have checked, naming the missing
permission.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

from model.checks.gpu_pools import GpuPool
from model.checks.problems import ERROR, WARNING, Problem, error, identify, warning
from model.facts import capacity, catalog, cost, node_zones
from model.facts.capacity import Reservation
from model.facts.cost import Price, PriceListUnanswered
from model.facts.node_zones import NodeZone

PREFLIGHT_SKIPPED = identify(
    "preflight-skipped",
    WARNING,
    "an account check the deployer may not run is reported skipped",
    "gpuInstanceType",
    "gpuNodeCount",
    "gpuPools",
    "coreInstanceType",
    "coreNodeCount",
    "adminRoleArns",
)
REGION_ZONES_LISTABLE = identify(
    "region-zones-listable", ERROR, "a region whose zones the deployer can list", "aws:region"
)
REGION_USABLE = identify("region-usable", ERROR, "a region this account can use", "aws:region")
ZONE_IN_REGION = identify(
    "zone-in-region",
    ERROR,
    "a standard availability zone of the region",
    "availabilityZone",
    "gpuPools[].availabilityZone",
)
ZONE_EKS_SUPPORTS = identify(
    "zone-eks-supports",
    ERROR,
    "a zone where EKS places cluster subnets",
    "availabilityZone",
    "gpuPools[].availabilityZone",
)
REGION_TWO_ZONES = identify("region-two-zones", ERROR, "a region with two zones EKS supports", "aws:region")
ZONE_AVAILABLE = identify(
    "zone-available",
    WARNING,
    "a node zone EC2 reports available",
    "availabilityZone",
    "gpuPools[].availabilityZone",
    "aws:region",
)
ZONE_SUBNET_SLOT = identify(
    "zone-subnet-slot",
    ERROR,
    "a pool zone with a subnet slot in the VPC",
    "availabilityZone",
    "gpuPools[].availabilityZone",
)
GPU_TYPE_OFFERED = identify(
    "gpu-type-offered",
    ERROR,
    "a GPU type offered in its pool's zone",
    "gpuInstanceType",
    "gpuPools[].instanceType",
)
CORE_TYPE_OFFERED = identify(
    "core-type-offered",
    ERROR,
    "a CPU type offered in both cluster zones (in a given VPC: its private subnets' zones)",
    "coreInstanceType",
)
GPU_VCPU_QUOTA = identify(
    "gpu-vcpu-quota",
    ERROR,
    "GPU nodes within the on-demand vCPU quota",
    "gpuNodeCount",
    "gpuPools[].nodeCount",
)
CORE_VCPU_QUOTA = identify(
    "core-vcpu-quota", ERROR, "core nodes, plus one for a rolling update, within the quota", "coreNodeCount"
)
ADMIN_NOT_DEPLOYER = identify(
    "admin-not-deployer", ERROR, "no admin role that is the deployer's own", "adminRoleArns"
)
RESERVATION_DESCRIBABLE = identify(
    "reservation-describable",
    ERROR,
    "a reservation the deployer can describe",
    "gpuCapacityReservationId",
    "gpuPools[].capacityReservationId",
)
RESERVATION_EXISTS = identify(
    "reservation-exists",
    ERROR,
    "a reservation EC2 knows in the region",
    "gpuCapacityReservationId",
    "gpuPools[].capacityReservationId",
)
RESERVATION_PLACEMENT_GROUP = identify(
    "reservation-placement-group",
    ERROR,
    "not a shared reservation in another account's placement group",
    "gpuCapacityReservationId",
    "gpuPools[].capacityReservationId",
)
RESERVATION_OUTSIDE_PLACEMENT_GROUP = identify(
    "reservation-outside-placement-group",
    WARNING,
    "a reservation made in a cluster placement group",
    "gpuCapacityReservationId",
    "gpuPools[].capacityReservationId",
)
RESERVATION_SIZE = identify(
    "reservation-size",
    WARNING,
    "a reservation that holds as many instances as its pools may run",
    "gpuCapacityReservationId",
    "gpuPools[].capacityReservationId",
)
RESERVATION_INSTANCE_TYPE = identify(
    "reservation-instance-type",
    ERROR,
    "a reservation of the pool's instance type",
    "gpuCapacityReservationId",
    "gpuPools[].capacityReservationId",
)
RESERVATION_ZONE = identify(
    "reservation-zone",
    ERROR,
    "a reservation in the pool's zone",
    "gpuCapacityReservationId",
    "gpuPools[].capacityReservationId",
)
RESERVATION_PLATFORM = identify(
    "reservation-platform",
    ERROR,
    "a Linux reservation",
    "gpuCapacityReservationId",
    "gpuPools[].capacityReservationId",
)
RESERVATION_TENANCY = identify(
    "reservation-tenancy",
    ERROR,
    "a reservation on shared tenancy",
    "gpuCapacityReservationId",
    "gpuPools[].capacityReservationId",
)
RESERVATION_STARTS_LATER = identify(
    "reservation-starts-later",
    WARNING,
    "a pool that starts at 0 nodes on a reservation not yet active",
    "gpuCapacityReservationId",
    "gpuPools[].capacityReservationId",
)
RESERVATION_ACTIVE = identify(
    "reservation-active",
    ERROR,
    "an active reservation where the pool launches nodes at up",
    "gpuCapacityReservationId",
    "gpuPools[].capacityReservationId",
)
RESERVATION_USABLE = identify(
    "reservation-usable",
    ERROR,
    "a reservation whose capacity is not gone",
    "gpuCapacityReservationId",
    "gpuPools[].capacityReservationId",
)


# Zone ids where EKS refuses cluster subnets (UnsupportedAvailabilityZoneException), from the EKS
# user guide, "View Amazon EKS networking requirements for VPC and subnets", subnet requirements:
# https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html
EKS_UNSUPPORTED_ZONE_IDS = {
    "us-east-1": {"use1-az3"},
    "us-west-1": {"usw1-az2"},
    "ca-central-1": {"cac1-az3"},
}

# How to ask for more (Service Quotas user guide, "Requesting a quota increase"):
# https://docs.aws.amazon.com/servicequotas/latest/userguide/request-quota-increase.html
_QUOTA_REQUEST = (
    "aws service-quotas request-service-quota-increase --region {region} "
    "--service-code ec2 --quota-code {code} --desired-value {needed}"
)

# The quota the core nodes (M, C, R, ... types) count against (EC2 "On-Demand Instance quotas":
# https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html).
ON_DEMAND_STANDARD = ("L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances")


@dataclass(frozen=True)
class Zone:
    name: str  # per account: us-west-2a is a different data centre in another account
    zone_id: str  # the same physical zone in every account (usw2-az1)
    # EC2 reports it `available` now (not impaired, unavailable or constrained): a fact of the
    # moment, which never decides where subnets go, only whether to warn.
    available: bool = True


class PermissionDenied(Exception):
    """The account refused a question; `action` is the IAM action the deployer lacks."""

    def __init__(self, action: str):
        super().__init__(action)
        self.action = action


class Account(Protocol):
    """The questions the preflight asks the deploying account. A refused call raises
    PermissionDenied naming the IAM action it needed."""

    def zones(self, region: str) -> list[Zone] | None:
        """The region's standard availability zones in every state (no Local or Wavelength
        Zones), or None for a region the account cannot use."""

    def offered(
        self, region: str, instance_types: Sequence[str], zone_names: Sequence[str]
    ) -> dict[str, set[str]]:
        """For each instance type, the zones (names) among zone_names that offer it. The preflight
        names every standard AZ of the region (as zones() lists them), not only the node zones."""

    def vcpus(self, region: str, instance_type: str) -> int:
        """The instance type's default vCPU count, as the vCPU quotas count it."""

    def ec2_quota(self, region: str, quota_code: str) -> float:
        """The applied value of an EC2 quota (the AWS default where none was requested)."""

    def deployer_role_arn(self) -> str | None:
        """The IAM role behind the caller's session, or None when the caller is no assumed role."""

    def account_id(self) -> str:
        """The deploying account's id (STS GetCallerIdentity)."""

    def capacity_reservation(self, region: str, reservation_id: str) -> Reservation | None:
        """The Capacity Reservation (ODCR or Capacity Block) as EC2 describes it, in any state, or
        None when EC2 knows no such id in the region."""

    def on_demand_price(self, region: str, instance_type: str) -> float:
        """The instance type's on-demand list price in USD per hour in the region (Linux, shared
        tenancy); raises PriceListUnanswered when the Price List gives no single price."""


@dataclass(frozen=True)
class Findings:
    # The cluster's two zones, then the other pool AZs by zone id (node_zones.order); () when the
    # zones are refused.
    node_zones: tuple[NodeZone, ...]
    problems: list[Problem]
    # Every pool's capacity reservation as EC2 described it, by id (those it knows).
    reservations: dict[str, Reservation] = field(default_factory=dict)


def _cannot_ask(key: str, value: object, what: str, denied: PermissionDenied) -> Problem:
    return warning(
        PREFLIGHT_SKIPPED,
        key,
        value,
        f"preflight: could not check {what}: the deployer lacks {denied.action}; the check is skipped",
    )


def eligible_zones(region: str, zones: list[Zone]) -> list[Zone]:
    refused = EKS_UNSUPPORTED_ZONE_IDS.get(region, set())
    return [z for z in zones if z.zone_id not in refused]


def cluster_zones(gpu_zone: Zone, eligible: list[Zone]) -> tuple[Zone, Zone] | None:
    """availabilityZone, then the eligible zone with the lowest zone id besides it: the same
    physical zone in every account, the same answer on every run, and nothing the pools say."""
    others = sorted((z for z in eligible if z.zone_id != gpu_zone.zone_id), key=lambda z: z.zone_id)
    return (gpu_zone, others[0]) if others else None


def zones(
    account: Account,
    region: str,
    gpu_zone_name: str,
    pools: list[GpuPool],
    out: list[Problem],
    lays_out_subnets: bool = True,
) -> tuple[tuple[NodeZone, ...], list[Zone]]:
    """Checks availabilityZone and every pool's AZ against the region's zones; returns the node
    zones (node_zones.order), or () when they are refused, and the region's standard zones as the
    account listed them ([] when it could not list them)."""
    try:
        found = account.zones(region)
    except PermissionDenied as denied:
        out.append(
            error(
                REGION_ZONES_LISTABLE,
                "aws:region",
                region,
                f"a region whose zones the deployer can list "
                f"(it lacks {denied.action}, which the program needs)",
            )
        )
        return (), []
    if found is None:
        out.append(error(REGION_USABLE, "aws:region", region, "an AWS region this account can use"))
        return (), []
    return _node_zones(region, gpu_zone_name, pools, found, out, lays_out_subnets), found


def _node_zones(
    region: str,
    gpu_zone_name: str,
    pools: list[GpuPool],
    found: list[Zone],
    out: list[Problem],
    lays_out_subnets: bool,
) -> tuple[NodeZone, ...]:
    """The node zones out of the region's zones, or () when a key's zone is refused. A pool zone
    needs a subnet slot only where the stack lays out its own VPC's subnets."""
    eligible = eligible_zones(region, found)
    allowed = ", ".join(f"{z.name} ({z.zone_id})" for z in eligible)
    by_name = {z.name: z for z in found}
    # Each zone is reported once, under the first key that names it.
    keys = {gpu_zone_name: "availabilityZone"}
    for pool in pools:
        keys.setdefault(pool.availability_zone, pool.key("availabilityZone"))
    for name, key in keys.items():
        if name not in by_name:
            out.append(
                error(
                    ZONE_IN_REGION,
                    key,
                    name,
                    f"an availability zone of {region}, not a Local or "
                    f"Wavelength Zone (EKS takes neither): "
                    f"{', '.join(z.name for z in eligible)}",
                )
            )
        elif by_name[name] not in eligible:
            out.append(
                error(
                    ZONE_EKS_SUPPORTS,
                    key,
                    name,
                    f"is zone id {by_name[name].zone_id} in this account, "
                    f"where EKS places no cluster subnets; allowed: {allowed}",
                )
            )
    if any(name not in by_name or by_name[name] not in eligible for name in keys):
        return ()
    first = cluster_zones(by_name[gpu_zone_name], eligible)
    if first is None:
        out.append(
            error(
                REGION_TWO_ZONES,
                "aws:region",
                region,
                "a region with at least two availability zones EKS supports",
            )
        )
        return ()
    chosen = node_zones.order(
        tuple(NodeZone(z.name, z.zone_id) for z in first),
        [NodeZone(by_name[n].name, by_name[n].zone_id) for n in keys],
    )
    for zone in (by_name[z.name] for z in chosen if not by_name[z.name].available):
        # A zone a key names is that key's; the cluster's second zone is no key's but the
        # region's, chosen from its zones (cluster_zones).
        key, value = (keys[zone.name], zone.name) if zone.name in keys else ("aws:region", region)
        role = keys.get(zone.name, "the cluster's second zone")
        out.append(
            warning(
                ZONE_AVAILABLE,
                key,
                value,
                f"{zone.name} ({zone.zone_id}), {role}, is not reported "
                "available by EC2 now (DescribeAvailabilityZones state): nodes there "
                "may fail to launch until it is",
            )
        )
    unplaced = [z for z in chosen if z.cluster_position is None and z.pool_slot is None and lays_out_subnets]
    for zone in unplaced:
        out.append(
            error(
                ZONE_SUBNET_SLOT,
                keys[zone.name],
                zone.name,
                f"is zone id {zone.zone_id}, which has no "
                f"subnet slot in the VPC (a pool AZ outside the cluster's two, "
                f"{first[0].name} and {first[1].name}, takes the slot of its zone id's "
                f"number, 1-{node_zones.POOL_ZONE_SLOTS}); allowed: one of the cluster's "
                "two zones, or a zone whose id ends in -az1 .. "
                f"-az{node_zones.POOL_ZONE_SLOTS}",
            )
        )
    return () if unplaced else chosen


def _pools_key(pools: list[GpuPool], field: str) -> tuple[str, object]:
    """Where a finding about `field` of every pool at once is filed: the one pool's own key for a
    stack without gpuPools (gpuInstanceType, gpuNodeCount), else gpuPools with the pools' names."""
    if len(pools) == 1 and pools[0].index is None:
        pool = pools[0]
        return pool.key(field), {"instanceType": pool.gpu.name, "nodeCount": pool.node_count}[field]
    return "gpuPools", [p.name for p in pools]


def offerings(
    account: Account,
    region: str,
    chosen: tuple[NodeZone, ...],
    pools: list[GpuPool],
    core_type: str,
    out: list[Problem],
    region_zones: Sequence[Zone],
    given_zones: Sequence[str] | None = None,
) -> None:
    """Each pool's type in its AZ and the core type in the cluster's two, or, in a VPC the stack
    is given, in every AZ of its private subnets (given_zones; none checked when they are unknown). Offerings are asked for
    every standard AZ of the region (region_zones: the account's zone list, which holds no Local
    or Wavelength Zone), not only the node zones, and for every catalog type too, so a refusal
    can say where the type is offered, or, where the region offers it nowhere, which catalog
    types the pool's AZ does offer."""
    # The node zones are among region_zones and eligible (_node_zones takes them from there).
    zone_ids = {z.name: z.zone_id for z in region_zones}
    eligible = {z.name for z in eligible_zones(region, list(region_zones))}
    # The core group runs in the cluster's two zones only (components/node_groups.py).
    core_zones = [z for z in chosen if z.cluster_position is not None]
    core_where = "both of the cluster's AZs"
    if given_zones is not None:
        core_zones = [NodeZone(n, zone_ids.get(n, "")) for n in given_zones]
        core_where = "every AZ of privateSubnetIds"
    pool_types = [*dict.fromkeys(p.gpu.name for p in pools)]
    asked = [*dict.fromkeys([*pool_types, core_type, *catalog.efa_gpu_types()])]
    try:
        offered = account.offered(region, asked, list(zone_ids))
    except PermissionDenied as denied:
        key, value = _pools_key(pools, "instanceType")
        where = (
            "gpuPools' instance types are offered in their availability zones"
            if key == "gpuPools"
            else f"{key} {value} is offered in availabilityZone {pools[0].availability_zone}"
        )
        out.append(_cannot_ask(key, value, f"that {where}", denied))
        out.append(
            _cannot_ask(
                "coreInstanceType",
                core_type,
                f"that coreInstanceType {core_type} is "
                f"offered in the cluster's AZs ({', '.join(z.name for z in core_zones)})",
                denied,
            )
        )
        return
    for pool in pools:
        zone, gpu = pool.availability_zone, pool.gpu
        if zone in offered.get(gpu.name, set()):
            continue
        here = f"{pool.key('availabilityZone')} {zone} ({zone_ids[zone]})"
        elsewhere = sorted(offered.get(gpu.name, set()), key=lambda n: (n not in eligible, n))
        local = [t for t in catalog.efa_gpu_types() if zone in offered.get(t, set())]
        instead = (
            f"a catalog type {zone} offers: {', '.join(local)}"
            if local
            else f"another region: {zone} offers no catalog type"
        )
        if elsewhere:
            where = ", ".join(
                f"{n} ({zone_ids[n]}" + ("" if n in eligible else ", where EKS places no subnets") + ")"
                for n in elsewhere
            )
            # An AZ where EKS places no subnets is refused as a pool's AZ (_node_zones), so it is
            # named where the type is offered but never offered as the way out.
            way = (
                f"a type offered there, or an availability zone that offers {gpu.name}"
                if any(n in eligible for n in elsewhere)
                else f"{instead} (EKS places no subnets in the AZs that offer {gpu.name})"
            )
            out.append(
                error(
                    GPU_TYPE_OFFERED,
                    pool.key("instanceType"),
                    gpu.name,
                    f"is not offered in {here} (offered in: {where}); allowed: {way}",
                )
            )
            continue
        out.append(
            error(
                GPU_TYPE_OFFERED,
                pool.key("instanceType"),
                gpu.name,
                f"is not offered in {here}, and {region} offers it in none of its "
                f"availability zones; allowed: {instead}",
            )
        )
    missing = [f"{z.name} ({z.zone_id})" for z in core_zones if z.name not in offered.get(core_type, set())]
    if missing:
        out.append(
            error(
                CORE_TYPE_OFFERED,
                "coreInstanceType",
                core_type,
                f"is not offered in node AZ {', '.join(missing)}; allowed: a CPU "
                f"type offered in {core_where} "
                f"({', '.join(z.name for z in core_zones)})",
            )
        )


def quota(account: Account, region: str, pools: list[GpuPool], out: list[Problem]) -> None:
    """Each on-demand vCPU quota against the sum of the pools that count against it."""
    families: dict[tuple[str, str], list[GpuPool]] = {}
    for pool in pools:
        if pool.node_count >= 1:  # a count already refused is not checked again
            families.setdefault(pool.gpu.on_demand_quota, []).append(pool)
    for (code, quota_name), counted in families.items():
        needed = sum(p.gpu.vcpus * p.node_count for p in counted)
        key, value = _pools_key(counted, "nodeCount")
        try:
            have = account.ec2_quota(region, code)
        except PermissionDenied as denied:
            out.append(_cannot_ask(key, value, f"the {quota_name} quota ({code})", denied))
            continue
        if have >= needed:
            continue
        how = (
            "request an increase: "
            + _QUOTA_REQUEST.format(region=region, code=code, needed=needed)
            + " (or set skipGpuQuotaCheck=true to skip this check)"
        )
        if key != "gpuPools":
            (pool,) = counted
            out.append(
                error(
                    GPU_VCPU_QUOTA,
                    key,
                    value,
                    f"{pool.node_count} x {pool.gpu.name} need {needed} vCPUs of the quota "
                    f"'{quota_name}' ({code}) in {region}, which is {have:g}; allowed: "
                    f"{int(have) // pool.gpu.vcpus} GPU nodes at most, or " + how,
                )
            )
        else:
            parts = " + ".join(f"{p.name}: {p.node_count} x {p.gpu.name}" for p in counted)
            out.append(
                error(
                    GPU_VCPU_QUOTA,
                    key,
                    value,
                    f"{parts} need {needed} vCPUs of the quota '{quota_name}' ({code}) "
                    f"in {region}, which is {have:g}; allowed: fewer nodes in these "
                    "pools, or " + how,
                )
            )


def core_quota(account: Account, region: str, core_type: str, count: int, out: list[Problem]) -> None:
    """The core group keeps the managed node group's default rolling update, which launches a new
    node before it terminates an old one (EKS API NodegroupUpdateConfig, maxUnavailable 1:
    https://docs.aws.amazon.com/eks/latest/APIReference/API_NodegroupUpdateConfig.html), so an
    update needs one node more than coreNodeCount."""
    code, quota_name = ON_DEMAND_STANDARD
    try:
        vcpus = account.vcpus(region, core_type)
        have = account.ec2_quota(region, code)
    except PermissionDenied as denied:
        out.append(
            _cannot_ask("coreNodeCount", count, f"the {quota_name} quota ({code}) for the core nodes", denied)
        )
        return
    needed = vcpus * (count + 1)
    if have < needed:
        out.append(
            error(
                CORE_VCPU_QUOTA,
                "coreNodeCount",
                count,
                f"{count} x {core_type} ({vcpus} vCPUs each), plus the one more a "
                f"rolling update launches, need {needed} vCPUs of the quota "
                f"'{quota_name}' ({code}) in {region}, which is {have:g}; allowed: "
                f"{max(int(have) // vcpus - 1, 0)} core nodes at most, a smaller "
                "coreInstanceType, or request an increase: "
                + _QUOTA_REQUEST.format(region=region, code=code, needed=needed),
            )
        )


def deployer_not_admin(account: Account, admin_role_arns: list[str], out: list[Problem]) -> None:
    """The deployer is the cluster creator and already has an access entry; EKS refuses a second
    one for the same principal (EKS user guide, access entries:
    https://docs.aws.amazon.com/eks/latest/userguide/creating-access-entries.html)."""
    if not admin_role_arns:
        return
    try:
        deployer = account.deployer_role_arn()
    except PermissionDenied as denied:
        out.append(
            _cannot_ask(
                "adminRoleArns", admin_role_arns, "adminRoleArns against the deployer's own role", denied
            )
        )
        return
    if deployer is None:
        return
    for arn in admin_role_arns:
        # Role names are unique in an account whatever their path: compare account and name.
        if _account_and_name(arn) == _account_and_name(deployer):
            out.append(
                error(
                    ADMIN_NOT_DEPLOYER,
                    "adminRoleArns",
                    arn,
                    f"is the deployer's own role ({deployer}), which EKS already "
                    "made cluster admin as the cluster creator; a second access "
                    "entry for it is refused: remove it from the list",
                )
            )


def _account_and_name(role_arn: str) -> tuple[str, str]:
    parts = role_arn.split(":", 5)
    return parts[4], parts[5].rsplit("/", 1)[-1]


def reservations(
    account: Account, region: str, pools: list[GpuPool], out: list[Problem]
) -> dict[str, Reservation]:
    """Each pool's capacityReservationId: that EC2 knows it, that it reserves the pool's instance
    type in the pool's AZ for Linux on shared tenancy, and that it can take nodes now; a warning
    where it holds fewer instances than its pools may run. A refusal to describe it is an error,
    not a skipped check: the node group's capacity type depends on whether it is a Capacity Block.
    Returns the reservations EC2 described, by id."""
    sharing: dict[str, list[GpuPool]] = {}
    for pool in pools:
        if pool.capacity_reservation_id:
            sharing.setdefault(pool.capacity_reservation_id, []).append(pool)
    found: dict[str, Reservation] = {}
    for rid, users in sharing.items():
        try:
            reservation = account.capacity_reservation(region, rid)
        except PermissionDenied as denied:
            out += [
                error(
                    RESERVATION_DESCRIBABLE,
                    p.key("capacityReservationId"),
                    rid,
                    f"a reservation the deployer can describe "
                    f"(it lacks {denied.action}, which the program needs to tell an On-Demand Capacity "
                    "Reservation from a Capacity Block)",
                )
                for p in users
            ]
            continue
        if reservation is None:
            out += [
                error(
                    RESERVATION_EXISTS,
                    p.key("capacityReservationId"),
                    rid,
                    f"a Capacity Reservation in {region}: EC2 knows "
                    f"no {rid} there (DescribeCapacityReservations); allowed: the id of an On-Demand "
                    f"Capacity Reservation or a Capacity Block for ML in {region}, or '' for none",
                )
                for p in users
            ]
            continue
        found[rid] = reservation
        for pool in users:
            out += _reservation_misfits(pool, reservation)
        if reservation.placement_group_arn and reservation.owner_id not in ("", account.account_id()):
            # Shared to this account, in its owner's placement group: a launch template names a
            # group by name only in its own account; another account's group only by its id
            # (EC2 API Reference, LaunchTemplatePlacementRequest: GroupName, GroupId), which the
            # program does not look up (components/node_groups.py _placement names the group).
            out += [
                error(
                    RESERVATION_PLACEMENT_GROUP,
                    p.key("capacityReservationId"),
                    rid,
                    f"{rid} ({reservation.kind}) is shared from account {reservation.owner_id} and was "
                    f"created in its placement group {reservation.placement_group_arn}, which this "
                    "stack's launch template cannot name; allowed: a reservation of this account, one "
                    "created in no placement group, or '' for none",
                )
                for p in users
            ]
        if not reservation.is_capacity_block and not reservation.placement_group_arn:
            # Its pools launch in no placement group (components/node_groups.py _placement). A
            # Capacity Block needs none: its instances are colocated in an EC2 UltraCluster (EC2
            # User Guide, "Capacity Blocks for ML": https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html).
            names = ", ".join(p.name for p in users)
            out.append(
                warning(
                    RESERVATION_OUTSIDE_PLACEMENT_GROUP,
                    users[0].key("capacityReservationId"),
                    rid,
                    f"capacity: {rid} ({reservation.kind}) was created in no cluster placement "
                    f"group, so pool {names} launches in none (a reservation cannot be moved "
                    "into one): EFA works, without the group's closer placement; for it, "
                    "create the reservation in a cluster placement group",
                )
            )
        largest = sum(p.max_nodes for p in users)
        if reservation.total_instances < largest:
            who = " + ".join(f"{p.name}: {p.max_nodes}" for p in users)
            out.append(
                warning(
                    RESERVATION_SIZE,
                    users[0].key("capacityReservationId"),
                    rid,
                    f"capacity: {rid} ({reservation.kind}) holds {reservation.total_instances} "
                    f"x {reservation.instance_type}, fewer than the {largest} nodes its pools may run "
                    f"({who}); a node launched into a full reservation is refused by EC2, so "
                    "the nodes beyond it will not start",
                )
            )
    return found


def _reservation_misfits(pool: GpuPool, r: Reservation) -> list[Problem]:
    """Why `r` cannot take the pool's nodes, every reason at once."""
    key, rid, out = pool.key("capacityReservationId"), r.reservation_id, []
    what = f"{rid} ({r.kind})"
    if r.instance_type != pool.gpu.name:
        out.append(
            error(
                RESERVATION_INSTANCE_TYPE,
                key,
                rid,
                f"{what} reserves {r.instance_type}, but {pool.key('instanceType')} is "
                f"{pool.gpu.name}, which never launches into it; allowed: a reservation for "
                f"{pool.gpu.name}, or {pool.key('instanceType')} = {r.instance_type}",
            )
        )
    if r.availability_zone != pool.availability_zone:
        out.append(
            error(
                RESERVATION_ZONE,
                key,
                rid,
                f"{what} is in {r.availability_zone}, but {pool.key('availabilityZone')} is "
                f"{pool.availability_zone}: a reservation serves instances in its own AZ only; allowed: "
                f"a reservation in {pool.availability_zone}, or {pool.key('availabilityZone')} = "
                f"{r.availability_zone}",
            )
        )
    if r.instance_platform != capacity.LINUX_PLATFORM:
        out.append(
            error(
                RESERVATION_PLATFORM,
                key,
                rid,
                f"{what} is for {r.instance_platform}; the nodes run Linux (the EKS AL2023 "
                f"AMI): allowed: a {capacity.LINUX_PLATFORM} reservation",
            )
        )
    if r.tenancy != capacity.SHARED_TENANCY:
        out.append(
            error(
                RESERVATION_TENANCY,
                key,
                rid,
                f"{what} has {r.tenancy} tenancy; the nodes launch on shared tenancy: "
                f"allowed: a reservation with {capacity.SHARED_TENANCY} tenancy",
            )
        )
    start = f" (it starts {r.start_date})" if r.start_date else ""
    if r.state in capacity.NOT_YET and pool.initial_nodes == 0:
        # A pool that starts at no node launches nothing at `up`: it may wait for its block, and
        # its scaler's launches fail until the start.
        out.append(
            warning(
                RESERVATION_STARTS_LATER,
                key,
                rid,
                f"capacity: {what} is {r.state}{start}; pool {pool.name} starts at 0 "
                "nodes, and nodes it scales up to before then fail to launch",
            )
        )
    elif r.state in capacity.NOT_YET:
        out.append(
            error(
                RESERVATION_ACTIVE,
                key,
                rid,
                f"{what} is {r.state}{start}: EC2 launches no instance into it before "
                f"then, and the pool's {pool.initial_nodes} nodes are launched at `up`; allowed: an "
                f"active reservation (deploy the pool once it is), a pool that starts at 0 nodes "
                f"({pool.key('minNodes')} = 0), or {key} unset until then",
            )
        )
    elif r.state not in capacity.USABLE:
        out.append(
            error(
                RESERVATION_USABLE,
                key,
                rid,
                f"{what} is {r.state}: its capacity is gone; allowed: an active reservation, "
                "or '' for plain on-demand capacity",
            )
        )
    return out


def prices(
    account: Account, region: str, pools: list[GpuPool], core_type: str, out: list[Problem]
) -> dict[str, Price]:
    """The on-demand price of every pool's type and the core type, from the Price List; where it
    cannot answer, from the table (model/facts/cost.py) with a warning under the key that chose the type.
    Never an error: the price informs, it decides nothing."""
    keys: dict[str, tuple[str, object]] = {}
    for pool in pools:
        keys.setdefault(pool.gpu.name, (pool.key("instanceType"), pool.gpu.name))
    if core_type:
        keys.setdefault(core_type, ("coreInstanceType", core_type))
    found: dict[str, Price] = {}
    for instance_type, (key, value) in keys.items():
        try:
            found[instance_type] = Price(
                instance_type, account.on_demand_price(region, instance_type), cost.PRICE_LIST, region
            )
            continue
        except PermissionDenied as denied:
            why = f"the deployer lacks {denied.action}"
        except PriceListUnanswered as unanswered:
            why = unanswered.why
        found[instance_type] = cost.price_from_table(instance_type)
        out.append(cost.fallback_warning(key, value, region, instance_type, why, found[instance_type]))
    return found


def check(
    account: Account,
    region: str,
    gpu_zone: str,
    pools: list[GpuPool],
    core_type: str,
    admin_role_arns: list[str],
    skip_quota: bool,
    core_count: int = 0,
    given_zones: Sequence[str] | None = None,
) -> Findings:
    """Every finding at once; `pools` holds only pools whose own values are valid, and a check
    whose inputs are already invalid is left out ("" for core_type, 0 for core_count).
    given_zones: the AZs of privateSubnetIds in a VPC the stack is given (model/checks/vpc_subnets.py;
    () where they are refused), None where the stack lays out its own."""
    out: list[Problem] = []
    chosen, region_zones = zones(account, region, gpu_zone, pools, out, given_zones is None)
    if chosen and pools and core_type:
        offerings(account, region, chosen, pools, core_type, out, region_zones, given_zones)
    if chosen and pools and not skip_quota:
        quota(account, region, pools, out)
    if chosen and core_type and core_count >= 1:
        core_quota(account, region, core_type, core_count, out)
    deployer_not_admin(account, admin_role_arns, out)
    found = reservations(account, region, pools, out) if chosen else {}
    return Findings(chosen, out, found)
