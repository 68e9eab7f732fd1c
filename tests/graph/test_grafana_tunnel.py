"""The SSH tunnel to Grafana goes through the login pod's sshd: nothing the program adds to that
sshd's configuration (its drop-in, model/builders/login_sshd.py, and the LoginSet's extraSshdConfig) may
turn local (-L) forwarding off or leave Grafana out of PermitOpen (the operator's own lines and
OpenSSH's default allow it: model/builders/dashboards.py tunnel_refused_by). tests/slurm/test_login_sshd.py
asks a real sshd for the effective values."""

import pytest

from devkit.offline_run import run_program
from model.builders import dashboards, login_sshd
from model.facts.contract import LOGINSET
from tests.graph.test_user_identities import ALICE


def program_sshd_lines(graph) -> str:
    """Every sshd_config line the program writes: the drop-in the release renders, then
    extraSshdConfig."""
    values = graph.named("slurm-release").inputs["values"]
    (drop_in,) = [
        o["data"][login_sshd.DROP_IN_FILE]
        for o in values["extraObjects"]
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == login_sshd.CONFIGMAP
    ]
    return drop_in + values["loginsets"][LOGINSET].get("extraSshdConfig", "")


@pytest.mark.parametrize(
    "overrides", [{}, {"users": [ALICE], "sshPublicKey": ""}], ids=["root-key", "named-users"]
)
def test_the_login_pods_sshd_keeps_local_forwarding(overrides):
    lines = program_sshd_lines(run_program("dev", overrides))
    assert dashboards.tunnel_refused_by(lines) == []
    assert "PermitOpen grafana.grafana.svc.cluster.local:80" in lines
    if overrides:  # the named users' lines are there, and refuse nothing
        assert "PermitRootLogin no" in lines


def test_a_line_refusing_forwarding_is_caught():
    config = "AuthorizedKeysCommandUser nobody\nAllowTcpForwarding remote\n  disableforwarding yes\nX11Forwarding no\n"
    assert dashboards.tunnel_refused_by(config) == ["AllowTcpForwarding remote", "disableforwarding yes"]


@pytest.mark.parametrize(
    "line",
    ["PermitOpen none", "PermitOpen grafana.grafana.svc.cluster.local:3000", "permitopen localhost:80"],
)
def test_a_permit_open_without_grafanas_service_is_caught(line):
    assert dashboards.tunnel_refused_by(f"AllowTcpForwarding local\n{line}\n") == [line]


@pytest.mark.parametrize(
    "line",
    [
        "PermitOpen any",
        "PermitOpen localhost:22 grafana.grafana.svc.cluster.local:80",
        "PermitOpen *:80",
        "PermitOpen grafana.grafana.svc.cluster.local:*",
    ],
)
def test_a_permit_open_naming_grafanas_service_admits_the_tunnel(line):
    assert dashboards.tunnel_refused_by(f"{line}\n") == []


def test_the_tunnel_command_forwards_the_local_port_to_grafanas_service():
    assert dashboards.tunnel_command("alice@login.example") == (
        f"ssh -N -L {dashboards.LOCAL_PORT}:grafana.grafana.svc.cluster.local:{dashboards.SERVICE_PORT} alice@login.example"
    )
    assert dashboards.url() == f"http://localhost:{dashboards.LOCAL_PORT}"
