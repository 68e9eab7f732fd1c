"""The config schema's small rules (model/checks/rules.py, model/facts/eks_versions.py, model/checks/config_schema.py),
one promise each: a good value passes, a bad one comes back as an error or a warning problem.
Rules return problems; they never raise."""

import datetime
import json

import pytest

from model.checks import config_schema, gpu_pools, rules
from model.checks.problems import ERROR, NOT_SET, WARNING, WITHHELD
from model.facts import eks_versions

OWN_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKxJ0hQ4mYH3q2u1cGlB6y1u0sD1n8n3zQ7y0w5f6h7L me@laptop"
EXAMPLE_KEY = f"ssh-ed25519 {rules.EXAMPLE_SSH_KEY} dev-stack-example"
DAY = datetime.date(2026, 12, 1)


def levels(problems) -> list[str]:
    return [p.level for p in problems]


# Generic rules


def test_a_whole_number_in_range_passes():
    assert rules.whole_number(1, 32)("coreNodeCount", 32) == []


@pytest.mark.parametrize("value", [0, 33, True, "2", 1.5, None])
def test_a_value_that_is_not_a_whole_number_in_range_is_an_error(value):
    (p,) = rules.whole_number(1, 32)("coreNodeCount", value)
    assert (p.level, p.key, p.message) == (ERROR, "coreNodeCount", "a whole number from 1 to 32")


def test_true_or_false_passes_a_boolean():
    assert rules.true_or_false("retainSharedData", False) == []


def test_a_non_boolean_is_an_error():
    assert levels(rules.true_or_false("retainSharedData", "yes")) == [ERROR]


def test_a_string_matching_the_pattern_passes():
    assert rules.matches(r"\d+\.\d+\.\d+", "a version")("slinkyChartVersion", "1.2.1") == []


def test_a_string_matching_only_part_of_the_pattern_is_an_error():
    assert levels(rules.matches(r"\d+\.\d+\.\d+", "a version")("slinkyChartVersion", "1.2.1-rc")) == [ERROR]


def test_a_list_of_strings_passes():
    assert rules.list_of_strings("adminRoleArns", ["a"]) == []


@pytest.mark.parametrize("value", [{"a": 1}, "[not json", [1]])
def test_anything_else_is_not_a_list_of_strings(value):
    assert levels(rules.list_of_strings("adminRoleArns", value)) == [ERROR]


# SSH public key


def test_an_openssh_public_key_passes():
    assert rules.ssh_public_key("sshPublicKey", OWN_KEY) == []


@pytest.mark.parametrize(
    "value, why",
    [
        ("hello", "key types: ssh-ed25519"),
        ("ssh-ed25519 not-base64!!", "not valid base64 key material"),
        (f"ssh-rsa {rules.EXAMPLE_SSH_KEY}", "the key data says 'ssh-ed25519', the line says 'ssh-rsa'"),
    ],
)
def test_a_malformed_public_key_is_an_error_saying_why(value, why):
    (p,) = rules.ssh_public_key("sshPublicKey", value)
    assert p.level == ERROR and why in p.message


def test_a_private_key_is_an_error_that_withholds_the_value():
    (p,) = rules.ssh_public_key("sshPublicKey", "-----BEGIN OPENSSH PRIVATE KEY-----\nSECRET")
    assert p.value is WITHHELD and "SECRET" not in p.render("p")


def test_ones_own_key_is_not_the_example_key():
    assert rules.not_the_example_ssh_key("sshPublicKey", OWN_KEY) == []


def test_the_example_key_is_a_warning_saying_how_to_set_ones_own():
    (p,) = rules.not_the_example_ssh_key("sshPublicKey", EXAMPLE_KEY)
    assert p.level == WARNING and "`pulumi config set sshPublicKey" in p.message


# CIDR blocks: one parse loop for the SSH and the API allow-lists


def test_ipv4_blocks_pass():
    assert rules.cidr_blocks(["203.0.113.10/32", "10.0.0.0/8"], ipv6="v6", world="world") == []


@pytest.mark.parametrize("cidr", ["10.0.0.300/32", "10.0.0.1/24", "banana"])
def test_a_string_that_is_not_a_cidr_block_is_refused(cidr):
    (why,) = rules.cidr_blocks([cidr], ipv6="v6", world="world")
    assert why.startswith(f"{cidr!r} is not a CIDR block (")


def test_an_ipv6_block_is_refused_with_the_callers_reason():
    assert rules.cidr_blocks(["2001:db8::/32"], ipv6="admits nobody", world=None) == [
        "'2001:db8::/32' admits nobody"
    ]


def test_the_whole_internet_is_refused_unless_allowed():
    assert rules.cidr_blocks(["0.0.0.0/0"], ipv6="v6", world="set the flag") == ["'0.0.0.0/0' set the flag"]


def test_the_whole_internet_passes_when_allowed():
    assert rules.cidr_blocks(["0.0.0.0/0"], ipv6="v6", world=None) == []


def test_a_private_vpc_cidr_passes():
    assert rules.private_vpc_cidr("vpcCidr", "10.0.0.0/16") == []


@pytest.mark.parametrize("value", ["8.8.0.0/16", "10.0.0.0/24", "10.0.0.0/8", "banana"])
def test_a_public_or_wrongly_sized_vpc_cidr_is_an_error(value):
    assert levels(rules.private_vpc_cidr("vpcCidr", value)) == [ERROR]


def test_role_arns_pass():
    assert rules.role_arns("adminRoleArns", ["arn:aws:iam::123456789012:role/admin"]) == []


def test_each_arn_that_is_not_a_role_is_its_own_error():
    problems = rules.role_arns(
        "adminRoleArns", ["arn:aws:iam::123:user/x", "arn:aws:iam::123456789012:role/a", "x"]
    )
    assert [p.value for p in problems] == ["arn:aws:iam::123:user/x", "x"]


# Instance types and images


def test_a_catalog_gpu_type_passes():
    assert rules.gpu_instance_type("gpuInstanceType", "p5.48xlarge") == []


def test_a_type_outside_the_catalog_is_an_error_listing_the_catalog():
    (p,) = rules.gpu_instance_type("gpuInstanceType", "m6i.2xlarge")
    assert "not an NVIDIA GPU instance type" in p.message and "g6.12xlarge" in p.message


def test_a_cpu_type_passes_for_the_core_nodes():
    assert rules.cpu_instance_type("coreInstanceType", "m6i.2xlarge") == []


@pytest.mark.parametrize("value", ["g6.12xlarge", "m6i"])
def test_a_gpu_type_or_a_malformed_name_is_an_error_for_the_core_nodes(value):
    assert levels(rules.cpu_instance_type("coreInstanceType", value)) == [ERROR]


def test_an_image_reference_passes():
    assert (
        config_schema.image_reference("slurmdBaseImage", "ghcr.io/slinkyproject/slurmd:26.05.2-ubuntu24.04")
        == []
    )


def test_a_malformed_image_reference_is_an_error():
    assert levels(config_schema.image_reference("slurmdBaseImage", "ghcr.io/Upper/slurmd:1")) == [ERROR]


# EKS versions on a given day (https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html)


def test_a_version_eks_offers_passes():
    assert eks_versions.offered_on(DAY)("kubernetesVersion", "1.36") == []


@pytest.mark.parametrize("value", ["1.31", "1.37", "latest"])
def test_a_version_eks_does_not_offer_is_an_error_listing_those_it_does(value):
    (p,) = eks_versions.offered_on(DAY)("kubernetesVersion", value)
    assert p.message == "a Kubernetes version EKS offers: 1.32, 1.33, 1.34, 1.35, 1.36"


def test_a_version_is_refused_the_day_after_its_extended_support_ends():
    assert eks_versions.offered_on(datetime.date(2027, 3, 23))("kubernetesVersion", "1.32") == []
    (p,) = eks_versions.offered_on(datetime.date(2027, 3, 24))("kubernetesVersion", "1.32")
    assert "1.32" not in p.message


def test_on_2026_12_01_extended_support_is_1_32_and_1_33():
    assert eks_versions.in_standard_support(DAY) == ["1.34", "1.35", "1.36"]
    assert [v for v in eks_versions.offered(DAY) if v not in eks_versions.in_standard_support(DAY)] == [
        "1.32",
        "1.33",
    ]


def test_a_version_in_standard_support_gives_no_warning():
    assert eks_versions.standard_support_on(DAY)("kubernetesVersion", "1.34") == []


def test_a_version_in_extended_support_is_a_price_warning_naming_the_standard_ones():
    (p,) = eks_versions.standard_support_on(DAY)("kubernetesVersion", "1.33")
    assert p.level == WARNING and "six times the standard price" in p.message
    assert p.message.endswith("standard support: 1.34, 1.35, 1.36")


def test_a_version_warns_from_the_day_after_its_standard_support_ends():
    assert eks_versions.standard_support_on(datetime.date(2026, 12, 2))("kubernetesVersion", "1.34") == []
    assert levels(
        eks_versions.standard_support_on(datetime.date(2026, 12, 3))("kubernetesVersion", "1.34")
    ) == [WARNING]


# Rules over several keys

SSH = ["203.0.113.10/32"]


def test_ssh_blocks_pass():
    assert config_schema.ssh_cidrs({"sshAllowedCidrs": SSH}) == []


def test_an_empty_ssh_list_is_an_error():
    (p,) = config_schema.ssh_cidrs({"sshAllowedCidrs": []})
    assert "the list is empty" in p.message


def test_ssh_from_anywhere_is_an_error_without_its_flag():
    (p,) = config_schema.ssh_cidrs({"sshAllowedCidrs": ["0.0.0.0/0"], "allowSshFromAnywhere": False})
    assert "allowSshFromAnywhere=true" in p.message


def test_ssh_from_anywhere_passes_with_its_flag():
    assert config_schema.ssh_cidrs({"sshAllowedCidrs": ["0.0.0.0/0"], "allowSshFromAnywhere": True}) == []


def test_api_blocks_pass():
    assert config_schema.api_cidrs({"apiAllowedCidrs": SSH}) == []


def test_an_ipv6_api_block_is_an_error():
    (p,) = config_schema.api_cidrs({"apiAllowedCidrs": ["2001:db8::/32"]})
    assert "takes IPv4 blocks only" in p.message


def test_unset_api_blocks_are_the_ssh_blocks_checked_as_the_apis():
    (p,) = config_schema.api_cidrs(
        {"apiAllowedCidrs": [], "sshAllowedCidrs": ["0.0.0.0/0"], "allowSshFromAnywhere": True}
    )
    assert p.key == "apiAllowedCidrs" and "defaults to sshAllowedCidrs" in p.message


def test_a_chart_that_pairs_with_the_slurm_release_passes():
    assert (
        config_schema.chart_pairs_with_slurm({"slinkyChartVersion": "1.2.1", "slurmVersion": "26.05.2"}) == []
    )


def test_a_slurm_release_the_chart_does_not_run_is_an_error():
    (p,) = config_schema.chart_pairs_with_slurm({"slinkyChartVersion": "1.2.1", "slurmVersion": "25.11.1"})
    assert p.key == "slurmVersion" and "runs Slurm 26.05.x" in p.message


def test_an_image_tag_that_starts_with_the_slurm_release_passes():
    assert (
        config_schema.image_tag_names_slurm({"slurmdImageTag": "26.05.2-x", "slurmVersion": "26.05.2"}) == []
    )


def test_an_image_tag_of_another_release_is_an_error():
    assert levels(
        config_schema.image_tag_names_slurm({"slurmdImageTag": "26.05.1-x", "slurmVersion": "26.05.2"})
    ) == [ERROR]


def test_a_short_dlc_name_passes_in_a_region_with_a_dlc_registry():
    assert (
        config_schema.dlc_registry_known({"dlcBaseImage": "pytorch-training:2.9", "aws:region": "us-west-2"})
        == []
    )


def test_a_short_dlc_name_is_an_error_where_no_dlc_registry_is_known():
    (p,) = config_schema.dlc_registry_known({"dlcBaseImage": "pytorch-training:2.9", "aws:region": "mars-1"})
    assert "mars-1" in p.message


def test_a_slurmd_base_of_the_release_and_its_flavour_passes():
    assert (
        config_schema.slurmd_base_is_slurm(
            {"slurmdBaseImage": "ghcr.io/slinkyproject/slurmd:26.05.2-ubuntu24.04", "slurmVersion": "26.05.2"}
        )
        == []
    )


def test_a_slurmd_base_of_another_flavour_is_an_error():
    (p,) = config_schema.slurmd_base_is_slurm(
        {"slurmdBaseImage": "ghcr.io/slinkyproject/slurmd:26.05.2-ubuntu26.04", "slurmVersion": "26.05.2"}
    )
    assert "Slurm 26.05.2 on ubuntu24.04" in p.message


def test_a_kubernetes_version_slinky_supports_passes():
    assert config_schema.kubernetes_for_slinky({"kubernetesVersion": "1.36"}) == []


def test_a_kubernetes_version_older_than_slinky_needs_is_an_error():
    (p,) = config_schema.kubernetes_for_slinky({"kubernetesVersion": "1.28"})
    assert "Slinky needs Kubernetes >= 1.29" in p.message


# Reading raw config strings as the declared types


def _key(name):
    return next(k for k in config_schema.schema(DAY) if k.name == name)


@pytest.mark.parametrize(
    "name, raw, value",
    [
        ("gpuNodeCount", " 3 ", 3),
        ("gpuNodeCount", "2.5", "2.5"),
        ("retainSharedData", "True", True),
        ("retainSharedData", "yes", "yes"),
        ("adminRoleArns", '["a"]', ["a"]),
        ("adminRoleArns", "[no", "[no"),
        ("gpuNodeCount", None, 2),
        ("sshPublicKey", None, ""),
        ("sshAllowedCidrs", None, NOT_SET),
        ("kubernetesVersion", " ", NOT_SET),
        ("clusterName", "", ""),
    ],
)
def test_a_raw_string_is_read_as_the_keys_type_or_kept_for_its_rules(name, raw, value):
    assert config_schema.read(_key(name), raw) == value


def _check(stack="dev", **overrides):
    raw = {
        "aws:region": "us-west-2",
        "availabilityZone": "us-west-2a",
        "sshPublicKey": OWN_KEY,
        "sshAllowedCidrs": '["203.0.113.10/32"]',
        **overrides,
    }
    return config_schema.check(raw, stack, DAY)


def test_defaults_alone_with_the_required_keys_have_no_problems():
    checked = _check()
    assert checked.problems == [] and [p.name for p in checked.pools] == [gpu_pools.DEFAULT_POOL]


def test_a_number_is_reported_as_it_was_given():
    (p,) = _check(coreNodeCount="040").problems
    assert p.value == "040"


def test_an_empty_cluster_name_is_named_after_the_stack():
    assert _check().values["clusterName"] == "slinky-eks-dev"


def test_the_name_after_the_stack_is_checked_too():
    (p,) = _check(stack="Dev").problems
    assert (p.key, p.value) == ("clusterName", "slinky-eks-Dev")


def test_a_config_with_only_warnings_has_no_errors():
    checked = _check(sshPublicKey=EXAMPLE_KEY, kubernetesVersion="1.33")
    assert levels(checked.problems) == [WARNING, WARNING]


def test_a_gpu_instance_type_set_beside_gpu_pools_is_a_warning_that_the_pools_override_it():
    (p,) = _check(gpuPools=json.dumps([POOL]), gpuInstanceType="p5.48xlarge").problems
    assert (p.level, p.key, p.value) == (WARNING, "gpuInstanceType", "p5.48xlarge")
    assert p.message.startswith("gpuInstanceType = 'p5.48xlarge' is ignored: gpuPools overrides it")


def test_a_gpu_node_count_set_beside_gpu_pools_is_a_warning_that_the_pools_override_it():
    (p,) = _check(gpuPools=json.dumps([POOL]), gpuNodeCount="4").problems
    assert (p.level, p.key) == (WARNING, "gpuNodeCount") and "each pool sets its own nodeCount" in p.message


def test_gpu_pools_with_the_overridden_keys_unset_give_no_warning():
    assert _check(gpuPools=json.dumps([POOL])).problems == []


def test_gpu_pools_with_the_overridden_keys_at_their_defaults_give_no_warning():
    # What the CLI hands over for a stack that does not set them: Pulumi.yaml's defaults.
    assert _check(gpuPools=json.dumps([POOL]), gpuInstanceType="g6.12xlarge", gpuNodeCount="2").problems == []


def test_the_overridden_keys_without_gpu_pools_give_no_warning():
    assert _check(gpuInstanceType="p5.48xlarge", gpuNodeCount="4").problems == []


def test_a_refused_default_pool_count_still_lets_the_account_check_its_type():
    (pool,) = gpu_pools.default_pool("g6.12xlarge", 0, "us-west-2a", 400)
    assert pool.node_count == 0 and pool.gpu.name == "g6.12xlarge"


def test_an_invalid_default_pool_type_gives_no_pool():
    assert gpu_pools.default_pool("m6i.2xlarge", 2, "us-west-2a", 400) == []


# Pool rules (model/checks/gpu_pools.py)

POOL = {"name": "infer", "instanceType": "g6e.12xlarge", "nodeCount": 1}


def test_a_dns_label_pool_name_passes():
    assert gpu_pools.pool_name("gpuPools[0].name", "train-2") == []


@pytest.mark.parametrize("name", ["Train", "x-", "a" * 21, 7])
def test_a_pool_name_that_is_not_a_short_dns_label_is_an_error(name):
    assert levels(gpu_pools.pool_name("gpuPools[0].name", name)) == [ERROR]


def test_the_all_pools_partition_is_not_a_pool_name():
    (p,) = gpu_pools.pool_name("gpuPools[0].name", gpu_pools.ALL_POOLS_PARTITION)
    assert "the partition over every pool" in p.message


def test_the_name_slurm_reads_as_its_defaults_is_not_a_pool_name():
    (p,) = gpu_pools.pool_name("gpuPools[0].name", "default")
    assert (p.level, p.value) == (ERROR, "default") and "PartitionName=DEFAULT" in p.message


def test_a_pool_named_default_refuses_the_stack_naming_key_value_and_why():
    pools = json.dumps([POOL, {**POOL, "name": "default"}])
    (p,) = [p for p in _check(gpuPools=pools).problems if p.is_error]
    assert p.render("slinky-eks").startswith(
        "slinky-eks:gpuPools[1].name = 'default': any name but 'default'"
    )


def test_a_refused_pool_name_is_not_also_reported_as_another_pools_prefix():
    _, problems = gpu_pools.pools_from_config(
        [
            {**POOL, "name": "Train"},
            {**POOL, "name": "Train-2"},
            {**POOL, "name": "all"},
            {**POOL, "name": "all-x"},
        ],
        "us-west-2a",
        400,
    )
    assert [p.key for p in problems] == ["gpuPools[0].name", "gpuPools[1].name", "gpuPools[2].name"]


def test_a_valid_pool_list_has_no_problems():
    pools, problems = gpu_pools.pools_from_config([POOL], "us-west-2a", 400)
    assert problems == [] and pools[0].root_volume_gib == 400 and pools[0].availability_zone == "us-west-2a"


def test_a_second_pool_of_the_same_name_is_an_error_naming_the_first():
    _, problems = gpu_pools.pools_from_config(
        [POOL, {**POOL, "instanceType": "p5.48xlarge"}], "us-west-2a", 400
    )
    assert [(p.key, p.message) for p in problems] == [
        ("gpuPools[1].name", "a name no other pool has (gpuPools[0] is already 'infer')")
    ]


def test_an_unknown_pool_field_is_an_error_listing_the_fields():
    _, (p,) = gpu_pools.pools_from_config([{**POOL, "zone": "x"}], "us-west-2a", 400)
    assert p.key == "gpuPools[0].zone" and "availabilityZone" in p.message


def test_pool_problems_are_errors():
    _, problems = gpu_pools.pools_from_config([{"name": "A", "nodeCount": 0}], "us-west-2a", 400)
    assert levels(problems) == [ERROR, ERROR, ERROR]
