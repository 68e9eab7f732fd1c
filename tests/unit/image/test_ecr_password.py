"""image/ecr-password.sh prints ECR's password from the pod's Pod Identity credentials, run here
against the stand-ins of tests/support/pod_identity.py: the Pod Identity agent's credentials
endpoint, which answers only the pod's token, and ECR's API, which checks the SigV4 signature with
botocore's signer. Any failure is one line on stderr and a non-zero exit. The helper as enroot runs
it under pyxis on a worker: tests/slurm/test_containers.py."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.paths import REPO
from tests.support.pod_identity import PASSWORD, POD_TOKEN, REGION, TARGET, EcrCall, PodIdentityStandIns

HELPER = REPO / "image" / "ecr-password.sh"


@pytest.fixture
def stand_ins():
    served = PodIdentityStandIns().start()
    yield served
    served.stop()


def _run(
    tmp_path,
    stand_ins: PodIdentityStandIns,
    token: str | None = POD_TOKEN,
    env: dict[str, str] | None = None,
    endpoint: str = "",
):
    """The helper as enroot runs it from the cluster's .credentials: the job's environment, which
    pyxis gives enroot (no Pod Identity variable in it), the agent and token file as arguments."""
    token_file = tmp_path / "eks-pod-identity-token"
    if token is not None:
        token_file.write_text(token)
    return subprocess.run(
        ["/bin/sh", str(HELPER), REGION, endpoint or stand_ins.url, stand_ins.agent_url, str(token_file)],
        env={"PATH": "/usr/bin:/bin", **(env or {})},
        capture_output=True,
        text=True,
    )


def test_prints_the_password_ecr_answers_to_a_signed_call(tmp_path, stand_ins):
    result = _run(tmp_path, stand_ins)
    assert result.returncode == 0, result.stderr
    assert result.stdout == PASSWORD + "\n"
    assert stand_ins.ecr_calls == [EcrCall(TARGET, None)]


def test_a_token_the_agent_refuses_fails_with_one_line(tmp_path, stand_ins):
    result = _run(tmp_path, stand_ins, token="another-pods-token")
    assert result.returncode != 0 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("ecr-password: the credentials endpoint refused:")
    assert stand_ins.ecr_calls == []


def test_a_call_ecr_refuses_fails_with_one_line_naming_the_error(tmp_path, stand_ins):
    stand_ins.ecr_refuses = True
    result = _run(tmp_path, stand_ins)
    assert result.returncode != 0 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"ecr-password: ECR refused GetAuthorizationToken in {REGION}:")
    assert "AccessDeniedException" in result.stderr


def test_a_proxy_the_job_names_never_carries_the_pods_token(tmp_path, stand_ins):
    # The job's own environment and ~/.curlrc, both naming a proxy that answers nothing (port 9,
    # discard): the agent (127.0.0.1) is called directly and the user's curl configuration is not
    # read. ECR's stand-in (plain HTTP here, by the name localhost) is left out of the job's proxy,
    # as a job's own proxy may well carry the call to ECR's HTTPS endpoint.
    home = tmp_path / "home"
    home.mkdir()
    (home / ".curlrc").write_text('proxy = "http://127.0.0.1:9"\n')
    proxy = {"http_proxy": "http://127.0.0.1:9", "no_proxy": "localhost", "HOME": str(home)}
    endpoint = stand_ins.url.replace("127.0.0.1", "localhost")
    result = _run(tmp_path, stand_ins, env=proxy, endpoint=endpoint)
    assert result.returncode == 0, result.stderr
    assert result.stdout == PASSWORD + "\n"


def test_a_pod_without_pod_identity_fails_with_one_line(tmp_path, stand_ins):
    result = _run(tmp_path, stand_ins, token=None)
    assert result.returncode != 0 and result.stdout == ""
    assert result.stderr == (
        f"ecr-password: cannot read the Pod Identity token file '{tmp_path}/eks-pod-identity-token': "
        "does this pod's service account have an EKS Pod Identity association?\n"
    )


def test_the_secrets_never_reach_a_command_line():
    # Every user of the pod can read /proc/<pid>/cmdline: the keys and tokens go to curl through
    # its standard input. Each command as the shell reads it (continuation lines joined), from
    # curl's name on.
    commands = HELPER.read_text().replace("\\\n", " ").splitlines()
    code = [line for line in commands if not line.lstrip().startswith("#")]
    curl_arguments = [line.split("| curl ", 1)[1] for line in code if "| curl " in line]
    assert len(curl_arguments) == 2
    for variable in ("$token", "$key", "$secret", "$session"):
        assert [a for a in curl_arguments if variable in a] == [], variable
