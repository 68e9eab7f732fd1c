"""The preflight's rules on their own (model/checks/preflight.py), against an account held in memory: every
finding is a Problem filed under the config key it is about (a pool's AZ or instance type under
that pool's key, aws:region only for the region's own), and a refused question is a warning under
the keys whose check it skips."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from model.checks import preflight
from model.checks.gpu_pools import DEFAULT_POOL, GpuPool
from model.checks.preflight import ON_DEMAND_STANDARD, PermissionDenied, Zone
from model.checks.problems import ERROR, WARNING
from model.facts import catalog

REGION = "us-west-2"
G6, P5 = catalog.lookup("g6.12xlarge"), catalog.lookup("p5.48xlarge")
CORE = "m6i.2xlarge"


@dataclass
class HeldAccount:
    """An account whose answers are plain data; an action in `denied` is refused as the adapter
    refuses it (PermissionDenied naming the action)."""

    zones_by_region: dict[str, list[Zone]] = field(
        default_factory=lambda: {
            REGION: [
                Zone("us-west-2a", "usw2-az2"),
                Zone("us-west-2b", "usw2-az1"),
                Zone("us-west-2c", "usw2-az3"),
                Zone("us-west-2d", "usw2-az4"),
            ]
        }
    )
    offered_in: dict[str, set[str]] = field(
        default_factory=lambda: {
            "g6.12xlarge": {"us-west-2a", "us-west-2b", "us-west-2c"},
            "p5.48xlarge": {"us-west-2a", "us-west-2b", "us-west-2d"},
            CORE: {"us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"},
        }
    )
    quotas: dict[str, float] = field(
        default_factory=lambda: {"L-DB2E81BA": 768.0, "L-417A185B": 768.0, ON_DEMAND_STANDARD[0]: 640.0}
    )
    deployer: str | None = "arn:aws:iam::123456789012:role/platform-deployer"
    denied: frozenset[str] = frozenset()

    def _ask(self, action: str) -> None:
        if action in self.denied:
            raise PermissionDenied(action)

    def zones(self, region):
        self._ask("ec2:DescribeAvailabilityZones")
        return self.zones_by_region.get(region)

    def offered(self, region, instance_types, zone_names):
        self._ask("ec2:DescribeInstanceTypeOfferings")
        return {t: self.offered_in.get(t, set()) & set(zone_names) for t in instance_types}

    def vcpus(self, region, instance_type):
        self._ask("ec2:DescribeInstanceTypes")
        return 8

    def ec2_quota(self, region, quota_code):
        self._ask("servicequotas:GetServiceQuota")
        return self.quotas[quota_code]

    def deployer_role_arn(self):
        self._ask("iam:GetRole")
        return self.deployer


def default_pool(zone="us-west-2a", gpu=G6, count=2) -> list[GpuPool]:
    return [GpuPool(DEFAULT_POOL, gpu, count, zone, 200)]


def listed_pools() -> list[GpuPool]:
    """gpuPools: train (g6, us-west-2a) and big (p5, us-west-2d, a pool zone of its own)."""
    return [GpuPool("train", G6, 2, "us-west-2a", 200, 0), GpuPool("big", P5, 1, "us-west-2d", 200, 1)]


def run(
    account=None,
    pools=None,
    zone="us-west-2a",
    admins=("arn:aws:iam::123456789012:role/researchers",),
    skip_quota=False,
) -> preflight.Findings:
    return preflight.check(
        account or HeldAccount(),
        REGION,
        zone,
        default_pool() if pools is None else pools,
        CORE,
        list(admins),
        skip_quota,
        core_count=2,
    )


def addresses(findings: preflight.Findings, level: str) -> list[tuple[str, object]]:
    return [(p.key, p.value) for p in findings.problems if p.level == level]


def test_a_sound_account_gives_no_problem_and_the_node_zones():
    found = run(pools=listed_pools())
    assert found.problems == []
    assert [(z.name, z.cluster_position) for z in found.node_zones] == [
        ("us-west-2a", 0),
        ("us-west-2b", 1),
        ("us-west-2d", None),
    ]


# Zones not reported available: the key that names the zone, the region for the second zone


def impaired(zone_id: str) -> HeldAccount:
    account = HeldAccount()
    account.zones_by_region[REGION] = [
        Zone(z.name, z.zone_id, z.zone_id != zone_id) for z in account.zones_by_region[REGION]
    ]
    return account


def test_an_impaired_gpu_zone_is_a_warning_under_availability_zone():
    assert addresses(run(impaired("usw2-az2")), WARNING) == [("availabilityZone", "us-west-2a")]


def test_an_impaired_pool_zone_is_a_warning_under_that_pools_availability_zone():
    found = run(impaired("usw2-az4"), pools=listed_pools())
    assert addresses(found, WARNING) == [("gpuPools[1].availabilityZone", "us-west-2d")]
    assert (
        "us-west-2d (usw2-az4), gpuPools[1].availabilityZone, is not reported available"
        in found.problems[0].message
    )


def test_the_impaired_second_cluster_zone_is_the_regions():
    # No key names it: it is chosen from the region's zones (preflight.cluster_zones).
    found = run(impaired("usw2-az1"))
    assert addresses(found, WARNING) == [("aws:region", REGION)]
    assert "us-west-2b (usw2-az1), the cluster's second zone" in found.problems[0].message


# Refused questions: a warning under the keys the skipped check is about


def denied(action: str) -> HeldAccount:
    return HeldAccount(denied=frozenset({action}))


def test_refused_offerings_warn_under_the_gpu_type_and_the_core_type():
    found = run(denied("ec2:DescribeInstanceTypeOfferings"))
    assert addresses(found, WARNING) == [("gpuInstanceType", "g6.12xlarge"), ("coreInstanceType", CORE)]
    assert all(
        "lacks ec2:DescribeInstanceTypeOfferings; the check is skipped" in p.message for p in found.problems
    )
    assert (
        "gpuInstanceType g6.12xlarge is offered in availabilityZone us-west-2a" in found.problems[0].message
    )
    assert (
        "coreInstanceType m6i.2xlarge is offered in the cluster's AZs (us-west-2a, us-west-2b)"
        in found.problems[1].message
    )


def test_refused_offerings_of_listed_pools_warn_under_gpu_pools():
    found = run(denied("ec2:DescribeInstanceTypeOfferings"), pools=listed_pools())
    assert addresses(found, WARNING) == [("gpuPools", ["train", "big"]), ("coreInstanceType", CORE)]


def test_a_refused_gpu_quota_warns_under_the_node_count_it_would_check():
    found = run(denied("servicequotas:GetServiceQuota"), admins=())
    assert addresses(found, WARNING) == [("gpuNodeCount", 2), ("coreNodeCount", 2)]


def test_refused_quotas_of_listed_pools_warn_under_gpu_pools_per_family():
    found = run(denied("servicequotas:GetServiceQuota"), pools=listed_pools(), admins=())
    assert addresses(found, WARNING) == [("gpuPools", ["train"]), ("gpuPools", ["big"]), ("coreNodeCount", 2)]


def test_a_refused_instance_type_question_warns_under_core_node_count():
    assert addresses(run(denied("ec2:DescribeInstanceTypes")), WARNING) == [("coreNodeCount", 2)]


def test_a_refused_role_question_warns_under_admin_role_arns():
    assert addresses(run(denied("iam:GetRole")), WARNING) == [
        ("adminRoleArns", ["arn:aws:iam::123456789012:role/researchers"])
    ]


@pytest.mark.parametrize(
    "action",
    [
        "ec2:DescribeInstanceTypeOfferings",
        "servicequotas:GetServiceQuota",
        "ec2:DescribeInstanceTypes",
        "iam:GetRole",
    ],
)
def test_no_refused_question_about_the_pools_or_core_nodes_is_filed_under_the_region(action):
    found = run(denied(action), pools=listed_pools())
    assert found.problems and all(p.level == WARNING and p.key != "aws:region" for p in found.problems)


# Errors: each under its key


def test_a_pool_type_not_offered_in_its_zone_is_that_pools_instance_type():
    pools = [GpuPool("train", G6, 2, "us-west-2a", 200, 0), GpuPool("big", P5, 1, "us-west-2c", 200, 1)]
    found = run(pools=pools)
    assert addresses(found, ERROR) == [("gpuPools[1].instanceType", "p5.48xlarge")]
    assert "is not offered in gpuPools[1].availabilityZone us-west-2c (usw2-az3)" in found.problems[0].message


# Refusals that point the way: every AZ of the region that offers the type, or, where none does,
# the catalog types the pool's AZ offers


def test_a_type_not_offered_in_its_az_names_every_az_of_the_region_that_offers_it():
    # p5 is offered in us-west-2a, 2b and 2d; the node zones are 2c and 2b only.
    found = run(pools=default_pool(zone="us-west-2c", gpu=P5, count=1), zone="us-west-2c")
    assert addresses(found, ERROR) == [("gpuInstanceType", "p5.48xlarge")]
    assert (
        "(offered in: us-west-2a (usw2-az2), us-west-2b (usw2-az1), us-west-2d (usw2-az4))"
        in found.problems[0].message
    )


def test_a_type_the_region_offers_nowhere_names_the_catalog_types_its_az_offers():
    account = HeldAccount(
        offered_in={
            "g6.12xlarge": {"us-west-2a", "us-west-2b"},
            "g6e.12xlarge": {"us-west-2a"},
            "g5.48xlarge": {"us-west-2b"},
            CORE: {"us-west-2a", "us-west-2b"},
        }
    )
    found = run(account, pools=default_pool(gpu=P5, count=1))
    assert addresses(found, ERROR) == [("gpuInstanceType", "p5.48xlarge")]
    assert (
        "us-west-2 offers it in none of its availability zones; allowed: a catalog type "
        "us-west-2a offers: g6.12xlarge, g6e.12xlarge"
    ) in found.problems[0].message


def test_a_type_offered_only_where_eks_places_no_subnets_is_not_offered_as_the_way_out():
    # us-east-1e (use1-az3) takes no EKS subnets (EKS_UNSUPPORTED_ZONE_IDS); it alone offers p5.
    zones = [Zone("us-east-1a", "use1-az6"), Zone("us-east-1b", "use1-az1"), Zone("us-east-1e", "use1-az3")]
    account = HeldAccount(
        zones_by_region={"us-east-1": zones},
        offered_in={
            "p5.48xlarge": {"us-east-1e"},
            "g6.12xlarge": {"us-east-1a"},
            CORE: {"us-east-1a", "us-east-1b"},
        },
    )
    found = preflight.check(
        account, "us-east-1", "us-east-1a", default_pool("us-east-1a", P5, 1), CORE, [], False, core_count=2
    )
    message = found.problems[0].message
    assert "(offered in: us-east-1e (use1-az3, where EKS places no subnets))" in message
    assert message.endswith(
        "allowed: a catalog type us-east-1a offers: g6.12xlarge (EKS places no "
        "subnets in the AZs that offer p5.48xlarge)"
    )


def test_an_az_that_offers_no_catalog_type_points_to_another_region():
    account = HeldAccount(offered_in={CORE: {"us-west-2a", "us-west-2b"}})
    found = run(account, pools=default_pool(gpu=P5, count=1))
    assert "allowed: another region: us-west-2a offers no catalog type" in found.problems[0].message


def test_offerings_are_asked_for_every_zone_of_the_region_not_only_the_node_zones():
    asked = []

    class Recording(HeldAccount):
        def offered(self, region, instance_types, zone_names):
            asked.append((list(instance_types), list(zone_names)))
            return super().offered(region, instance_types, zone_names)

    run(Recording())
    ((types, zones),) = asked
    assert sorted(zones) == ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]
    assert set(catalog.efa_gpu_types()) | {CORE} == set(types)


def test_a_pool_zone_outside_the_region_is_that_pools_availability_zone():
    pools = [GpuPool("train", G6, 2, "us-west-2a", 200, 0), GpuPool("big", P5, 1, "us-west-2-lax-1a", 200, 1)]
    found = run(pools=pools)
    assert addresses(found, ERROR) == [("gpuPools[1].availabilityZone", "us-west-2-lax-1a")]
    assert found.node_zones == ()


def test_a_gpu_quota_too_small_is_gpu_node_count_or_gpu_pools():
    small = HeldAccount(quotas={"L-DB2E81BA": 64.0, "L-417A185B": 0.0, ON_DEMAND_STANDARD[0]: 640.0})
    assert addresses(run(small), ERROR) == [("gpuNodeCount", 2)]
    assert addresses(run(small, pools=listed_pools()), ERROR) == [
        ("gpuPools", ["train"]),
        ("gpuPools", ["big"]),
    ]


def test_zones_the_deployer_may_not_list_are_the_regions():
    found = run(denied("ec2:DescribeAvailabilityZones"))
    assert addresses(found, ERROR) == [("aws:region", REGION)] and found.node_zones == ()


def test_a_region_the_account_cannot_use_is_the_regions():
    assert addresses(run(HeldAccount(zones_by_region={})), ERROR) == [("aws:region", REGION)]


def test_the_deployers_own_role_is_the_admin_role_arn_that_names_it():
    found = run(admins=("arn:aws:iam::123456789012:role/platform-deployer",))
    assert addresses(found, ERROR) == [("adminRoleArns", "arn:aws:iam::123456789012:role/platform-deployer")]


# A VPC the stack is given (model/checks/vpc_subnets.py): its subnets are not laid out in slots


def _with_zone_past_the_slots() -> HeldAccount:
    account = HeldAccount()
    account.zones_by_region[REGION].append(Zone("us-west-2e", "usw2-az9"))
    account.offered_in["g6.12xlarge"].add("us-west-2e")
    account.offered_in[CORE].add("us-west-2e")
    return account


def _far_pools() -> list[GpuPool]:
    return [GpuPool("train", G6, 2, "us-west-2a", 200, 0), GpuPool("far", G6, 1, "us-west-2e", 200, 1)]


def test_a_pool_zone_past_the_subnet_slots_is_refused_where_the_stack_lays_out_its_vpc():
    found = run(account=_with_zone_past_the_slots(), pools=_far_pools())
    assert [p.rule.id for p in found.problems] == ["zone-subnet-slot"]


def test_a_pool_zone_past_the_subnet_slots_is_accepted_in_a_given_vpc():
    found = preflight.check(
        _with_zone_past_the_slots(),
        REGION,
        "us-west-2a",
        _far_pools(),
        CORE,
        [],
        False,
        core_count=2,
        given_zones=("us-west-2a", "us-west-2e"),
    )
    assert found.problems == [] and [z.name for z in found.node_zones][-1] == "us-west-2e"
