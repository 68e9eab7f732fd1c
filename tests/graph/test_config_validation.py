"""Every invalid config value fails before any resource is registered, naming key, value and what
is allowed; several problems come back together."""

import pytest

from devkit.offline_run import run_program
from model.checks.problems import as_written
from model.facts import versions
from stack.config import ConfigError
from tests.support.program import rejected

# The pinned Slurm release: the defaults these messages and references are checked against.
R = versions.SLURM_RELEASE

PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"
    "SECRETSECRETSECRET\n-----END OPENSSH PRIVATE KEY-----"
)


def test_dev_stack_is_valid(dev):
    assert dev.error is None and dev.resources


def test_errors_are_config_errors_without_stack_traces():
    graph = run_program("dev", {"gpuNodeCount": 0}, expect_error=True)
    assert isinstance(graph.error, ConfigError)


@pytest.mark.parametrize("value", ["m6i.2xlarge", "c5.large"])
def test_cpu_gpu_instance_type_is_refused(value):
    msg = rejected(gpuInstanceType=value)
    assert f"slinky-eks:gpuInstanceType = '{value}'" in msg
    assert "not an NVIDIA GPU instance type" in msg and "g6.12xlarge" in msg


def test_unknown_gpu_instance_type_is_refused():
    msg = rejected(gpuInstanceType="g6-superbig")
    assert "gpuInstanceType = 'g6-superbig'" in msg and "not an EC2 instance type name" in msg


@pytest.mark.parametrize("value", ["g6.4xlarge", "g5.xlarge", "g6e.2xlarge", "gr6.4xlarge"])
def test_gpu_size_without_efa_is_refused(value):
    msg = rejected(gpuInstanceType=value)
    assert f"gpuInstanceType = '{value}'" in msg and "a GPU size without EFA" in msg


@pytest.mark.parametrize("key", ["gpuNodeCount", "coreNodeCount"])
@pytest.mark.parametrize("value", ["0", "-1", "2.5", "two"])
def test_node_counts_must_be_whole_and_positive(key, value):
    msg = rejected(**{key: value})
    assert f"slinky-eks:{key} = '{value}'" in msg and "a whole number from 1" in msg


@pytest.mark.parametrize("value", ["1.31", "1.37", "1.99", "latest"])
def test_kubernetes_version_eks_does_not_offer_is_refused(value):
    msg = rejected(kubernetesVersion=value)
    assert f"kubernetesVersion = '{value}'" in msg and "1.36" in msg


@pytest.mark.parametrize("value", ["us-east-1a", "us-west-2z"])
def test_availability_zone_outside_the_region_is_refused(value):
    msg = rejected(availabilityZone=value)
    assert f"availabilityZone = '{value}'" in msg
    assert "us-west-2a, us-west-2b, us-west-2c, us-west-2d" in msg


def test_availability_zone_is_checked_against_the_regions_real_list():
    graph = run_program("dev")
    tokens = [t for t, args in graph.calls if t.endswith("getAvailabilityZones")]
    assert tokens and all(
        args.get("region") == "us-west-2" for t, args in graph.calls if t.endswith("getAvailabilityZones")
    )


def test_unknown_region_is_refused():
    msg = rejected(**{"aws:region": "mars-north-1", "availabilityZone": "mars-north-1a"})
    assert "aws:region = 'mars-north-1'" in msg


@pytest.mark.parametrize("world", ["0.0.0.0/0"])
def test_ssh_open_to_the_world_is_refused_by_default(world):
    msg = rejected(sshAllowedCidrs=["203.0.113.10/32", world])
    assert "sshAllowedCidrs" in msg and world in msg and "allowSshFromAnywhere" in msg


def test_ssh_open_to_the_world_is_allowed_on_purpose():
    graph = run_program(
        "dev",
        {
            "sshAllowedCidrs": ["0.0.0.0/0"],
            "allowSshFromAnywhere": True,
            "apiAllowedCidrs": ["203.0.113.10/32"],
        },
    )
    assert graph.error is None


@pytest.mark.parametrize("value", [["10.0.0.300/32"], ["10.0.0.1/33"], ["10.0.0.1/24"], ["not-a-cidr"]])
def test_malformed_ssh_cidrs_are_refused(value):
    msg = rejected(sshAllowedCidrs=value)
    assert "sshAllowedCidrs" in msg and value[0] in msg and "is not a CIDR block" in msg


def test_empty_ssh_cidr_list_is_refused():
    assert "the list is empty" in rejected(sshAllowedCidrs=[])


def test_ssh_cidrs_must_be_a_list():
    assert "sshAllowedCidrs" in rejected(sshAllowedCidrs={"a": 1})


def test_pasted_private_key_is_refused_without_echoing_it():
    msg = rejected(sshPublicKey=PRIVATE_KEY)
    assert "sshPublicKey" in msg and "private key (value withheld)" in msg
    assert "SECRETSECRET" not in msg and "b3BlbnNzaC1rZXkt" not in msg


@pytest.mark.parametrize(
    "value",
    [
        "hello",
        "ssh-ed25519 not-base64!!",
        "ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIHo5XTHwRWToEb42mcBir6wbQZm9zUSpHChjh8bS0mXM",
    ],
)
def test_malformed_public_key_is_refused(value):
    assert "sshPublicKey" in rejected(sshPublicKey=value)


def test_without_a_root_key_or_an_admin_user_the_stack_is_refused():
    assert "slinky-eks:sshPublicKey = '': a root key, or at least one user with admin: true" in rejected(
        sshPublicKey=None
    )


def test_chart_without_a_slurm_pairing_is_refused():
    msg = rejected(slinkyChartVersion="1.3.0")
    assert "slinkyChartVersion = '1.3.0'" in msg and "1.2.x <-> 26.05.x" in msg


def test_slurm_version_that_does_not_pair_with_the_chart_is_refused():
    msg = rejected(
        slurmVersion="25.11.1",
        slurmdImageTag="25.11.1-torch",
        slurmdBaseImage="ghcr.io/slinkyproject/slurmd:25.11.1-ubuntu24.04",
    )
    assert "slurmVersion = '25.11.1'" in msg and "runs Slurm 26.05.x" in msg


def test_image_tag_must_start_with_the_slurm_version():
    msg = rejected(slurmdImageTag="latest")
    assert "slurmdImageTag = 'latest'" in msg and f"{R}-" in msg


def test_slurmd_base_image_must_be_the_slurm_version():
    assert "slurmdBaseImage" in rejected(slurmdBaseImage="ghcr.io/slinkyproject/slurmd:25.11.1-ubuntu24.04")


def test_slurmd_base_image_must_be_the_flavour_the_slurm_release_pairs_with():
    msg = rejected(slurmdBaseImage=f"ghcr.io/slinkyproject/slurmd:{R}-ubuntu26.04")
    assert f"slurmdBaseImage = 'ghcr.io/slinkyproject/slurmd:{R}-ubuntu26.04'" in msg
    assert f"Slurm {R} on ubuntu24.04" in msg and f"slurmd:{R}-ubuntu24.04" in msg


@pytest.mark.parametrize("value", ["10.0.0.0/8", "10.0.0.0/24", "8.8.0.0/16", "banana"])
def test_vpc_cidr_must_be_private_and_sized(value):
    assert f"vpcCidr = '{value}'" in rejected(vpcCidr=value)


def test_admin_role_arns_must_be_role_arns():
    assert "adminRoleArns = 'arn:aws:iam::123:user/x'" in rejected(adminRoleArns=["arn:aws:iam::123:user/x"])


def test_all_problems_come_back_in_one_error():
    msg = rejected(
        gpuInstanceType="m6i.2xlarge",
        gpuNodeCount="0",
        kubernetesVersion="1.20",
        sshAllowedCidrs=["0.0.0.0/0"],
        availabilityZone="eu-west-1a",
    )
    assert msg.startswith("invalid stack configuration (5 problems)")
    for key in (
        "gpuInstanceType",
        "gpuNodeCount",
        "kubernetesVersion",
        "sshAllowedCidrs",
        "availabilityZone",
    ):
        assert f"slinky-eks:{key}" in msg


@pytest.mark.parametrize("key", ["dlcBaseImage", "slurmdBaseImage"])
@pytest.mark.parametrize(
    "value",
    [
        f"ghcr.io/SlinkyProject/slurmd:{R}-ubuntu26.04",
        f"ghcr.io/slinkyproject/slurmd:{R} ubuntu",
        f"ghcr.io/slinkyproject/slurmd:{R}-x@sha256:abc",
        f"ghcr.io/slinkyproject//slurmd:{R}",
        f"ghcr.io/slinkyproject/slurmd:-{R}",
        f"ghcr.io/slinkyproject/slurmd:{R}-x@sha256:" + "ab" * 20,
        f"ghcr.io/slinkyproject/slurmd:{R}-x@sha256:" + "AB" * 32,
        f"ghcr.io/slinkyproject/slurmd:{R}-x@md5:" + "ab" * 32,
        "ghcr.io/" + "s" * 250 + f":{R}-ubuntu26.04",
    ],
)
def test_base_images_must_be_image_references(key, value):
    msg = rejected(**{key: value})
    assert f"{key} = '{value}'" in msg and "an image reference" in msg


@pytest.mark.parametrize(
    "value",
    [
        f"ghcr.io/slinkyproject/slurmd:{R}-ubuntu24.04",
        f"localhost:5000/slurmd:{R}-ubuntu24.04",
        f"ghcr.io/slinkyproject/slurmd:{R}-ubuntu24.04@sha256:" + "0f" * 32,
    ],
)
def test_well_formed_base_image_references_are_accepted(value):
    assert run_program("dev", {"slurmdBaseImage": value}).error is None


@pytest.mark.parametrize(
    "value, why",
    [
        (
            ["api", "kubelet"],
            "'kubelet' is not one of api, audit, authenticator, controllerManager, scheduler",
        ),
        (["audit", "audit"], "'audit' is listed more than once"),
        ("api", "a list of any of api, audit, authenticator, controllerManager, scheduler"),
    ],
)
def test_control_plane_log_types_must_be_eks_log_types(value, why):
    msg = rejected(controlPlaneLogTypes=value)
    assert f"slinky-eks:controlPlaneLogTypes = {as_written(value)}: {why}" in msg


@pytest.mark.parametrize("key", ["controlPlaneLogRetentionDays", "flowLogsRetentionDays"])
@pytest.mark.parametrize("value", ["0", "10", "forever", "90.0"])
def test_log_retention_must_be_a_period_cloudwatch_accepts(key, value):
    msg = rejected(**{key: value})
    assert f"slinky-eks:{key} = '{value}': one of 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400" in msg


@pytest.mark.parametrize("value", ["cloudwatch", "firehose", "OFF"])
def test_flow_logs_destination_must_be_one_this_program_makes(value):
    assert "flowLogsDestination" in (msg := rejected(flowLogsDestination=value))
    assert "one of cloud-watch-logs, s3, off" in msg


@pytest.mark.parametrize("value", ["docker", "CodeBuild", "image-builder"])
def test_image_builder_must_be_codebuild_or_local(value):
    msg = rejected(imageBuilder=value)
    assert f"slinky-eks:imageBuilder = '{value}': one of codebuild, local [one-of]" in msg


def test_every_logging_problem_comes_back_in_one_error():
    msg = rejected(
        controlPlaneLogTypes=["kubelet"],
        controlPlaneLogRetentionDays="10",
        flowLogsDestination="firehose",
        flowLogsRetentionDays="0",
    )
    assert msg.startswith("invalid stack configuration (4 problems)")
    for key in (
        "controlPlaneLogTypes",
        "controlPlaneLogRetentionDays",
        "flowLogsDestination",
        "flowLogsRetentionDays",
    ):
        assert f"slinky-eks:{key}" in msg
