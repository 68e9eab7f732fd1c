"""The CI workflows' check before `pulumi` runs (tools/api_reach.py): is the runner's public address
inside the blocks where the stack's EKS API endpoint answers, read from the stack file as the
program reads them?"""

import datetime
import io
import subprocess
import sys
import urllib.error

import botocore.session
import pytest
from botocore.stub import Stubber

from devkit.offline_run import PROJECT_DIR
from tools import api_reach

TODAY = datetime.date(2026, 12, 4)
SSH_ONLY = "  slinky-eks:sshAllowedCidrs:\n    - 203.0.113.0/24\n"


def stack_file(tmp_path, body: str, stack="dev"):
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text("config:\n  aws:region: us-west-2\n" + body)
    return path


def reach(capsys, *argv):
    code = api_reach.main([str(a) for a in argv], today=TODAY)
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def test_an_address_inside_the_ssh_blocks_the_api_defaults_to_passes(tmp_path, capsys):
    path = stack_file(tmp_path, SSH_ONLY)
    assert reach(capsys, path, "--address", "203.0.113.77") == (
        0,
        [
            f"api_reach: 203.0.113.77 is inside sshAllowedCidrs (apiAllowedCidrs is unset) (203.0.113.0/24) of {path}"
        ],
        [],
    )


def test_an_address_outside_is_refused_in_one_line_naming_the_key_and_the_way_out(tmp_path, capsys):
    path = stack_file(tmp_path, SSH_ONLY)
    assert reach(capsys, path, "--address", "198.51.100.7") == (
        1,
        [],
        [
            "api_reach: this machine's public address 198.51.100.7 is outside sshAllowedCidrs (apiAllowedCidrs "
            f"is unset) (203.0.113.0/24) of {path}: the EKS API endpoint would refuse it and every Kubernetes "
            "call would time out; run on a runner whose egress is inside those blocks "
            "(docs/ci.md#reaching-the-api-endpoint)"
        ],
    )


def test_api_allowed_cidrs_win_over_the_ssh_blocks(tmp_path, capsys):
    path = stack_file(
        tmp_path, SSH_ONLY + '  slinky-eks:apiAllowedCidrs: ["198.51.100.0/28", 192.0.2.1/32]\n'
    )
    assert reach(capsys, path, "--address", "198.51.100.7")[0] == 0
    code, _, err = reach(capsys, path, "--address", "203.0.113.77")
    assert code == 1 and "outside apiAllowedCidrs (198.51.100.0/28 192.0.2.1/32)" in err[0]


def test_an_address_in_the_same_octets_but_another_prefix_is_outside(tmp_path, capsys):
    path = stack_file(tmp_path, "  slinky-eks:apiAllowedCidrs:\n    - 203.0.113.0/25\n")
    assert reach(capsys, path, "--address", "203.0.113.200")[0] == 1


def test_the_dev_stack_files_example_address_is_checked(capsys):
    path = PROJECT_DIR / "Pulumi.dev.yaml"
    assert reach(capsys, path, "--address", "203.0.113.10")[0] == 0
    assert reach(capsys, path, "--address", "203.0.113.11")[0] == 1


def test_without_an_address_checkip_is_asked(tmp_path, capsys, monkeypatch):
    asked = []

    def urlopen(url, timeout):
        asked.append((url, timeout))
        return io.BytesIO(b"203.0.113.77\n")

    monkeypatch.setattr(api_reach.urllib.request, "urlopen", urlopen)
    assert reach(capsys, stack_file(tmp_path, SSH_ONLY))[0] == 0
    assert asked == [("https://checkip.amazonaws.com", 5)]


def test_an_unreachable_checkip_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    def urlopen(url, timeout):
        raise urllib.error.URLError("timed out")

    monkeypatch.setattr(api_reach.urllib.request, "urlopen", urlopen)
    assert reach(capsys, stack_file(tmp_path, SSH_ONLY)) == (
        2,
        [],
        ["api_reach: https://checkip.amazonaws.com did not answer (timed out): pass --address"],
    )


@pytest.mark.parametrize(
    "body, address, line",
    [
        (SSH_ONLY, "not-an-address", "api_reach: --address gave 'not-an-address', not an IPv4 address"),
        (
            '  slinky-eks:apiAllowedCidrs: ["10.0.0.0/33"]\n',
            "10.0.0.1",
            "api_reach: apiAllowedCidrs in {path} holds '10.0.0.0/33', not a CIDR block",
        ),
        (
            "  slinky-eks:availabilityZone: us-west-2a\n",
            "10.0.0.1",
            "api_reach: {path} allows the API endpoint no block (apiAllowedCidrs is unset and sshAllowedCidrs "
            "missing or refused): set slinky-eks:apiAllowedCidrs to the IPv4 blocks `pulumi` runs from",
        ),
        ("  slinky-eks:apiAllowedCidrs: [oops\n", "10.0.0.1", None),
        (
            "  slinky-eks:apiAllowedCidrs: 10.0.0.0/8\n",
            "10.0.0.1",
            "api_reach: apiAllowedCidrs in {path} is '10.0.0.0/8', not a list of CIDR blocks",
        ),
    ],
    ids=["bad-address", "bad-block", "no-blocks", "not-yaml", "not-a-list"],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, body, address, line):
    path = stack_file(tmp_path, body)
    code, out, err = reach(capsys, path, "--address", address)
    assert code == 2 and out == [] and len(err) == 1
    if line:
        assert err == [line.format(path=path)]
    else:
        assert err[0].startswith(f"api_reach: the stack file {path} is not YAML: ")


def test_a_missing_stack_file_is_one_line_without_a_traceback(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.api_reach",
            str(tmp_path / "Pulumi.prod.yaml"),
            "--address",
            "10.0.0.1",
        ],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and result.stderr.splitlines() == [
        f"api_reach: cannot read the stack file {tmp_path / 'Pulumi.prod.yaml'}: No such file or directory"
    ]


def test_a_stack_file_that_is_not_utf8_is_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_bytes(b"config:\n  slinky-eks:sshAllowedCidrs: ['\xff203.0.113.0/24']\n")
    code, out, err = reach(capsys, path, "--address", "203.0.113.7")
    assert (code, out) == (2, [])
    assert err == [
        f"api_reach: the stack file {path} is not UTF-8 text (byte 40: invalid start byte): Pulumi reads UTF-8"
    ]


EXISTING = "  slinky-eks:existingClusterName: shared-gpu\n"


def eks_answering(vpc_config: dict | None = None, error: str | None = None):
    """A botocore Stubber in EKS's place, answering DescribeCluster as the EKS API Reference shows
    it (https://docs.aws.amazon.com/eks/latest/APIReference/API_DescribeCluster.html)."""
    client = botocore.session.get_session().create_client(
        "eks", region_name="us-west-2", aws_access_key_id="a", aws_secret_access_key="b"
    )
    stubber = Stubber(client)
    if error:
        stubber.add_client_error("describe_cluster", error, "No cluster found for name: shared-gpu.", 404)
    else:
        stubber.add_response(
            "describe_cluster",
            {"cluster": {"name": "shared-gpu", "resourcesVpcConfig": vpc_config}},
            {"name": "shared-gpu"},
        )
    stubber.activate()
    regions = []

    def eks(region):
        regions.append(region)
        return client

    return eks, regions


def test_with_an_existing_cluster_the_blocks_are_its_endpoint_s_not_api_allowed_cidrs(tmp_path, capsys):
    path = stack_file(tmp_path, SSH_ONLY + EXISTING)
    eks, regions = eks_answering({"endpointPublicAccess": True, "publicAccessCidrs": ["198.51.100.0/24"]})
    code = api_reach.main([str(path), "--address", "203.0.113.77"], today=TODAY, eks=eks)
    err = capsys.readouterr().err
    assert code == 1 and regions == ["us-west-2"]
    assert "outside the public access blocks of the existing cluster shared-gpu (existingClusterName) " in err
    eks, _ = eks_answering({"endpointPublicAccess": True, "publicAccessCidrs": ["198.51.100.0/24"]})
    assert api_reach.main([str(path), "--address", "198.51.100.9"], today=TODAY, eks=eks) == 0


def test_an_existing_cluster_without_public_access_is_not_checked_and_says_so(tmp_path, capsys):
    path = stack_file(tmp_path, SSH_ONLY + EXISTING)
    eks, _ = eks_answering({"endpointPublicAccess": False, "endpointPrivateAccess": True})
    assert api_reach.main([str(path), "--address", "203.0.113.77"], today=TODAY, eks=eks) == 0
    assert capsys.readouterr().out.splitlines() == [
        "api_reach: not checked: the endpoint of the existing cluster shared-gpu has no public access "
        "(endpointPublicAccess false): only a runner inside its VPC reaches it"
    ]


def test_an_existing_cluster_that_cannot_be_read_is_one_line_and_exit_2(tmp_path, capsys):
    path = stack_file(tmp_path, SSH_ONLY + EXISTING)
    eks, _ = eks_answering(error="ResourceNotFoundException")
    assert api_reach.main([str(path), "--address", "203.0.113.77"], today=TODAY, eks=eks) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert err[0].startswith(
        "api_reach: cannot read the endpoint of the existing cluster shared-gpu in us-west-2 (eks:DescribeCluster): "
    )
