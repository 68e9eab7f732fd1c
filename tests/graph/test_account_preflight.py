"""What a real account answers, before any resource: zones (Local/Wavelength Zones, zone ids EKS
refuses, the second AZ by zone id), instance type offerings, the GPU family's vCPU quota, the
deployer's own role in adminRoleArns; a refused permission is a warning, not a failure."""

import pytest

from devkit import offline_account
from devkit.offline_account import DEV, NEW, ZoneRecord
from devkit.offline_run import run_program
from model.checks.preflight import EKS_UNSUPPORTED_ZONE_IDS
from model.facts.catalog import efa_gpu_types
from tests.support.paths import REPO

ZONES_TOKEN = "aws:index/getAvailabilityZones:getAvailabilityZones"
QUOTA_TOKEN = "aws:servicequotas/getServiceQuota:getServiceQuota"


def refused(account=DEV, **overrides) -> str:
    graph = run_program("dev", overrides, expect_error=True, account=account)
    assert graph.resources == [], [r.name for r in graph.resources]
    return str(graph.error)


def node_zones(graph) -> list[str]:
    return [
        s.inputs["availabilityZone"] for s in graph.of_type("aws:ec2/subnet:Subnet") if "-private-" in s.name
    ]


# Zones


def test_the_accounts_zone_list_has_local_zones_first_when_unfiltered():
    # The model the next tests rely on: an unfiltered answer is what would have broken the program.
    names = offline_account.answer(DEV, ZONES_TOKEN, {"state": "available"})["names"]
    assert names[0] == "us-west-2-lax-1a" and "us-west-2-wl1-las-wlz-1" in names
    assert "us-west-2-den-1a" not in names  # not opted in


def test_node_zones_are_never_local_or_wavelength_zones(dev):
    assert node_zones(dev) == ["us-west-2a", "us-west-2b"]
    asked = [a for t, a in dev.calls if t == ZONES_TOKEN]
    assert asked and all(
        {"name": "zone-type", "values": ["availability-zone"]} in a["filters"] for a in asked
    )


def _with_state(zone_id: str, state: str) -> list[ZoneRecord]:
    return [
        ZoneRecord(
            z.name, z.zone_id, z.zone_type, z.opt_in_status, state if z.zone_id == zone_id else z.state
        )
        for z in DEV.zones["us-west-2"]
    ]


def test_an_impaired_zone_does_not_move_the_clusters_zones():
    # EC2 reports a zone's state of the moment (available, information, impaired, unavailable,
    # constrained: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_AvailabilityZone.html);
    # the subnets must not follow it.
    graph = run_program(
        "dev", account=DEV.but(zones={**DEV.zones, "us-west-2": _with_state("usw2-az1", "impaired")})
    )
    assert graph.error is None and node_zones(graph) == ["us-west-2a", "us-west-2b"]


def test_an_impaired_node_zone_is_a_warning_naming_it():
    graph = run_program(
        "dev", account=DEV.but(zones={**DEV.zones, "us-west-2": _with_state("usw2-az1", "impaired")})
    )
    (said,) = [w for w in graph.warnings if "not reported available" in w]
    assert "us-west-2b (usw2-az1), the cluster's second zone" in said


def test_available_node_zones_give_no_zone_warning(dev):
    assert not [w for w in dev.warnings if "not reported available" in w]


@pytest.mark.parametrize("zone", ["us-west-2-lax-1a", "us-west-2-wl1-las-wlz-1"])
def test_a_local_or_wavelength_zone_as_gpu_zone_is_refused(zone):
    msg = refused(availabilityZone=zone)
    assert f"availabilityZone = '{zone}'" in msg and "not a Local or Wavelength Zone" in msg


def test_a_gpu_zone_whose_zone_id_eks_refuses_is_refused():
    # In this account us-east-1e is use1-az3.
    msg = refused(**{"aws:region": "us-east-1", "availabilityZone": "us-east-1e"})
    assert "availabilityZone = 'us-east-1e'" in msg and "use1-az3" in msg
    assert "us-east-1e (" not in msg.split("allowed:")[1]


def test_the_second_zone_is_never_one_eks_refuses():
    account = DEV.but(
        zones={
            **DEV.zones,
            "us-east-1": [
                ZoneRecord("us-east-1a", "use1-az4"),
                ZoneRecord("us-east-1e", "use1-az3"),
                ZoneRecord("us-east-1f", "use1-az5"),
            ],
        }
    )
    graph = run_program("dev", {"aws:region": "us-east-1", "availabilityZone": "us-east-1a"}, account=account)
    assert node_zones(graph) == ["us-east-1a", "us-east-1f"]


def test_the_second_zone_is_chosen_by_zone_id_not_name():
    # Another account's mapping: usw2-az1 is us-west-2c there.
    remapped = [
        ZoneRecord("us-west-2a", "usw2-az2"),
        ZoneRecord("us-west-2b", "usw2-az4"),
        ZoneRecord("us-west-2c", "usw2-az1"),
        ZoneRecord("us-west-2d", "usw2-az3"),
    ]
    graph = run_program("dev", account=DEV.but(zones={**DEV.zones, "us-west-2": remapped}))
    assert node_zones(graph) == ["us-west-2a", "us-west-2c"]


def test_the_refused_zone_ids_are_the_eks_user_guides():
    assert EKS_UNSUPPORTED_ZONE_IDS == {
        "us-east-1": {"use1-az3"},
        "us-west-1": {"usw1-az2"},
        "ca-central-1": {"cac1-az3"},
    }


# Instance type offerings


def test_a_gpu_type_not_offered_in_the_gpu_zone_is_refused():
    msg = refused(gpuInstanceType="p5.48xlarge", availabilityZone="us-west-2c")
    assert "gpuInstanceType = 'p5.48xlarge'" in msg
    assert "not offered in availabilityZone us-west-2c (usw2-az3)" in msg


def test_a_core_type_not_offered_in_a_node_zone_is_refused():
    msg = refused(coreInstanceType="m7i.2xlarge")
    assert "coreInstanceType = 'm7i.2xlarge'" in msg and "us-west-2b (usw2-az1)" in msg


def test_offerings_are_asked_per_availability_zone_of_the_region_for_every_type(dev):
    # Every standard AZ (no Local or Wavelength Zone) and every catalog type, so that a refusal
    # can say where a type is offered and what the AZ offers instead.
    (args,) = [a for t, a in dev.calls if t.endswith("getInstanceTypeOfferings")]
    assert args["locationType"] == "availability-zone"
    assert {"name": "instance-type", "values": sorted({*efa_gpu_types(), "m6i.2xlarge"})} in args["filters"]
    assert {"name": "location", "values": ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]} in args[
        "filters"
    ]


# Worlds where the offerings differ by AZ and by region


def _offering(account, zone_ids, drop=(), add=()):
    """`account` with `drop` taken from and `add` put in the offerings of each zone id."""
    offerings = dict(account.offerings)
    for z in zone_ids:
        offerings[z] = (offerings.get(z, frozenset()) - set(drop)) | set(add)
    return account.but(offerings=offerings)


def test_a_type_offered_in_other_azs_is_refused_naming_every_az_of_the_region_that_offers_it():
    # p5en.48xlarge in us-east-1: not in us-east-1d (use1-az2), the GPU zone; offered in the other
    # standard AZs, us-east-1e (use1-az3) among them, where EKS places no subnets.
    account = _offering(
        _offering(DEV, ["use1-az2"], drop={"p5en.48xlarge"}), ["use1-az3"], add={"p5en.48xlarge"}
    )
    msg = refused(
        account,
        **{"aws:region": "us-east-1", "availabilityZone": "us-east-1d", "gpuInstanceType": "p5en.48xlarge"},
    )
    assert "not offered in availabilityZone us-east-1d (use1-az2)" in msg
    assert (
        "offered in: us-east-1a (use1-az4), us-east-1b (use1-az6), us-east-1c (use1-az1), "
        "us-east-1f (use1-az5), us-east-1e (use1-az3, where EKS places no subnets))"
    ) in msg


def test_a_local_zone_that_offers_the_type_is_never_named():
    account = _offering(
        _offering(DEV, ["usw2-az1", "usw2-az2", "usw2-az3", "usw2-az4"], drop={"p5.48xlarge"}),
        ["usw2-lax1-az1"],
        add={"p5.48xlarge"},
    )
    msg = refused(account, gpuInstanceType="p5.48xlarge")
    assert "lax" not in msg and "us-west-2 offers it in none of its availability zones" in msg


def test_a_type_one_region_offers_nowhere_is_refused_there_naming_what_the_az_offers():
    # p6-b300.48xlarge only in us-east-1; us-west-2a offers g6.12xlarge and g6e.48xlarge.
    west = ["usw2-az1", "usw2-az2", "usw2-az3", "usw2-az4"]
    account = _offering(DEV, west, drop=efa_gpu_types())
    account = _offering(account, ["usw2-az2"], add={"g6.12xlarge", "g6e.48xlarge"})
    account = _offering(account, ["usw2-az1"], add={"g6.12xlarge"})
    msg = refused(account, gpuInstanceType="p6-b300.48xlarge")
    assert "gpuInstanceType = 'p6-b300.48xlarge'" in msg
    assert (
        "us-west-2 offers it in none of its availability zones; allowed: a catalog type "
        "us-west-2a offers: g6.12xlarge, g6e.48xlarge"
    ) in msg
    graph = run_program(
        "dev",
        {"aws:region": "us-east-1", "availabilityZone": "us-east-1a", "gpuInstanceType": "p6-b300.48xlarge"},
        account=account,
    )
    assert graph.error is None and graph.resources


# The GPU family's on-demand vCPU quota


def test_a_gpu_quota_below_the_nodes_vcpus_is_refused_with_both_numbers_and_how_to_ask():
    msg = refused(account=NEW)  # 2 x g6.12xlarge = 96 vCPUs; a new account has 64
    assert "gpuNodeCount = 2" in msg and "need 96 vCPUs" in msg and "which is 64" in msg
    assert "Running On-Demand G and VT instances' (L-DB2E81BA)" in msg
    assert (
        "request-service-quota-increase --region us-west-2 --service-code ec2 "
        "--quota-code L-DB2E81BA --desired-value 96" in msg
    )


def test_p_types_count_against_the_p_quota():
    msg = refused(account=NEW, gpuInstanceType="p5.48xlarge", gpuNodeCount=1)
    assert "need 192 vCPUs" in msg and "(L-417A185B)" in msg and "which is 0" in msg


def test_a_quota_that_covers_the_nodes_passes(dev):
    (args,) = [a for t, a in dev.calls if t == QUOTA_TOKEN and a["quotaCode"] != "L-1216C47A"]
    assert args == {"serviceCode": "ec2", "quotaCode": "L-DB2E81BA", "region": "us-west-2"}


def test_the_quota_check_can_be_skipped_on_purpose():
    graph = run_program("dev", {"skipGpuQuotaCheck": True}, account=NEW)
    assert graph.resources
    assert [a["quotaCode"] for t, a in graph.calls if t == QUOTA_TOKEN] == ["L-1216C47A"]


def test_every_preflight_problem_comes_back_at_once():
    msg = refused(
        account=NEW,
        gpuInstanceType="p5.48xlarge",
        availabilityZone="us-west-2c",
        coreInstanceType="m7i.2xlarge",
    )
    assert msg.startswith("invalid stack configuration (3 problems)")
    for key in ("gpuInstanceType", "coreInstanceType", "gpuNodeCount"):
        assert f"slinky-eks:{key}" in msg


# Permission denied: a warning naming the permission, not a failure


@pytest.mark.parametrize(
    "action", ["ec2:DescribeInstanceTypeOfferings", "servicequotas:GetServiceQuota", "iam:GetRole"]
)
def test_a_refused_permission_is_a_warning_naming_it(action):
    graph = run_program(
        "dev",
        {"adminRoleArns": ["arn:aws:iam::123456789012:role/researchers"]},
        account=DEV.but(denied=frozenset({action})),
    )
    assert graph.error is None and graph.resources
    assert any(action in w and "preflight: could not check" in w for w in graph.warnings)


def test_refused_offerings_warn_for_the_gpu_type_and_for_the_core_type_each():
    # Each warning is filed under the key whose check it skips (model/checks/preflight.py); the unit
    # tests (tests/unit/model/test_preflight.py) read the keys, the deployer reads these lines.
    graph = run_program("dev", account=DEV.but(denied=frozenset({"ec2:DescribeInstanceTypeOfferings"})))
    assert graph.error is None
    assert [w.split(": the deployer lacks")[0] for w in graph.warnings if "could not check that" in w] == [
        "preflight: could not check that gpuInstanceType g6.12xlarge is offered in availabilityZone us-west-2a",
        "preflight: could not check that coreInstanceType m6i.2xlarge is offered in the cluster's AZs "
        "(us-west-2a, us-west-2b)",
    ]


def test_a_deployer_that_may_not_list_zones_is_refused_naming_the_permission():
    # The subnets need the zones: this one cannot be skipped.
    msg = refused(account=DEV.but(denied=frozenset({"ec2:DescribeAvailabilityZones"})))
    assert "aws:region = 'us-west-2'" in msg and "ec2:DescribeAvailabilityZones" in msg


def test_without_refusals_there_is_no_preflight_warning(dev):
    assert not [w for w in dev.warnings if w.startswith("preflight")]


# The core nodes' on-demand vCPU quota (Running On-Demand Standard instances)

INSTANCE_TYPE_TOKEN = "aws:ec2/getInstanceType:getInstanceType"


def test_the_core_types_vcpus_are_asked_from_the_account(dev):
    assert [a for t, a in dev.calls if t == INSTANCE_TYPE_TOKEN] == [
        {"instanceType": "m6i.2xlarge", "region": "us-west-2"}
    ]
    assert {"serviceCode": "ec2", "quotaCode": "L-1216C47A", "region": "us-west-2"} in [
        a for t, a in dev.calls if t == QUOTA_TOKEN
    ]


def test_a_standard_quota_below_the_core_nodes_and_one_more_is_refused():
    # 2 x m6i.4xlarge + the one a rolling update adds = 48 vCPUs; a new account has 32.
    msg = refused(account=NEW, coreInstanceType="m6i.4xlarge", gpuNodeCount=1)
    assert "coreNodeCount = 2" in msg and "need 48 vCPUs" in msg and "which is 32" in msg
    assert "'Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances' (L-1216C47A)" in msg
    assert "1 core nodes at most" in msg
    assert "--quota-code L-1216C47A --desired-value 48" in msg


def test_the_rolling_update_node_is_counted():
    # 4 x m6i.2xlarge = 32 vCPUs fit a quota of 32, but not the fifth node an update launches.
    msg = refused(account=NEW, coreNodeCount=4, gpuNodeCount=1)
    assert "coreNodeCount = 4" in msg and "need 40 vCPUs" in msg
    graph = run_program(
        "dev",
        {"gpuNodeCount": 1, "coreNodeCount": 4},
        account=NEW.but(quota_defaults={**NEW.quota_defaults, "L-1216C47A": 40.0}),
    )
    assert graph.error is None


def test_a_standard_quota_that_covers_the_core_nodes_passes():
    graph = run_program("dev", {"gpuNodeCount": 1}, account=NEW)
    assert graph.error is None and graph.resources


def test_an_invalid_core_node_count_is_not_checked_against_the_quota():
    msg = refused(account=NEW, coreNodeCount="many", gpuNodeCount=1)
    assert "coreNodeCount = 'many'" in msg and "L-1216C47A" not in msg


@pytest.mark.parametrize("action", ["ec2:DescribeInstanceTypes", "servicequotas:GetServiceQuota"])
def test_a_refused_core_quota_permission_is_a_warning_naming_it(action):
    graph = run_program(
        "dev",
        {"skipGpuQuotaCheck": True},
        account=NEW.but(denied=frozenset({action}), quota_defaults={**NEW.quota_defaults, "L-1216C47A": 0.0}),
    )
    assert graph.error is None and graph.resources
    assert any(action in w and "(L-1216C47A) for the core nodes" in w for w in graph.warnings)


# Zones the account cannot be asked for


def test_an_opt_in_region_not_enabled_is_a_region_the_account_cannot_use():
    msg = refused(
        account=DEV.but(regions_not_enabled=frozenset({"ap-east-1"})),
        **{"aws:region": "ap-east-1", "availabilityZone": "ap-east-1a", "gpuInstanceType": "g5.12xlarge"},
    )
    assert "aws:region = 'ap-east-1': an AWS region this account can use" in msg


def test_an_invalid_region_is_a_region_the_account_cannot_use():
    msg = refused(**{"aws:region": "us-nowhere-1"})
    assert "aws:region = 'us-nowhere-1': an AWS region this account can use" in msg


def account_failing(status, code, message) -> str:
    graph = run_program("dev", expect_error=True, account=DEV.but(failure=(status, code, message)))
    assert graph.resources == []
    text = str(graph.error)
    assert "\n" not in text and "an AWS region this account can use" not in text
    return text


def test_expired_credentials_are_not_a_bad_region():
    text = account_failing(401, "AuthFailure", "AWS was not able to validate the provided access credentials")
    assert text.startswith(
        "could not ask AWS for the zones of us-west-2: the AWS credentials do not work (AuthFailure)"
    )
    assert "`aws sts get-caller-identity`" in text


def test_throttling_is_not_a_bad_region():
    text = account_failing(503, "RequestLimitExceeded", "Request limit exceeded.")
    assert text == (
        "could not ask AWS for the zones of us-west-2: AWS throttled the request "
        "(RequestLimitExceeded): run it again in a minute"
    )


def test_another_failure_is_named_as_it_came():
    text = account_failing(500, "InternalError", "An internal error has occurred.")
    assert text.startswith("could not ask AWS for the zones of us-west-2: ")
    assert "api error InternalError: An internal error has occurred." in text


# The deployer's own role in adminRoleArns


def test_the_deployers_own_role_in_admin_role_arns_is_refused():
    arn = "arn:aws:iam::123456789012:role/platform-deployer"
    msg = refused(adminRoleArns=[arn])
    assert f"adminRoleArns = '{arn}'" in msg and "deployer's own role" in msg


def test_the_deployers_role_is_recognised_with_or_without_its_path():
    sso = DEV.but(
        caller_arn="arn:aws:sts::123456789012:assumed-role/"
        "AWSReservedSSO_Admin_0123456789abcdef/alice@example.com"
    )
    for arn in (
        "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_Admin_0123456789abcdef",
        "arn:aws:iam::123456789012:role/AWSReservedSSO_Admin_0123456789abcdef",
    ):
        assert "deployer's own role" in refused(account=sso, adminRoleArns=[arn])


def test_other_admin_roles_get_their_access_entry():
    graph = run_program("dev", {"adminRoleArns": ["arn:aws:iam::123456789012:role/researchers"]})
    entries = graph.named("cluster-eks").inputs["accessEntries"]
    assert [e["principalArn"] for e in entries.values()] == ["arn:aws:iam::123456789012:role/researchers"]


# "What your account needs" in docs/operations.md (the README links there)


def _account_needs_section() -> str:
    text = (REPO / "docs/operations.md").read_text()
    start = text.index("## What your account needs")
    return " ".join(text[start : text.index("\n## ", start + 1)].split())


def test_the_docs_name_every_permission_the_preflight_asks_for():
    import re

    source = (REPO / "stack/account.py").read_text()
    actions = set(re.findall(r'(?:_ask|_find)\(\s*"([a-z0-9-]+:[A-Za-z]+)"', source))
    assert len(actions) == 10
    section = _account_needs_section()
    assert [a for a in sorted(actions) if f"`{a}`" not in section] == []


def test_the_docs_name_the_quotas_and_the_opt_out():
    from model.facts.catalog import ON_DEMAND_G_AND_VT, ON_DEMAND_P

    section = _account_needs_section()
    for code, name in (ON_DEMAND_G_AND_VT, ON_DEMAND_P):
        assert f"`{code}`" in section and name in section
    assert "skipGpuQuotaCheck" in section
    for refused_id in sorted(set().union(*EKS_UNSUPPORTED_ZONE_IDS.values())):
        assert refused_id in section


def test_a_gpu_node_count_already_refused_is_not_also_checked_against_the_quota():
    msg = refused(account=NEW, gpuNodeCount=65)
    assert msg.startswith("invalid stack configuration (1 problem)") and "a whole number" in msg
