"""The SSH tunnel to Grafana goes through the login pod's sshd: nothing the program adds to that
sshd's configuration may turn local (-L) forwarding off (the operator's own lines and OpenSSH's
default allow it: model/builders/dashboards.py tunnel_refused_by)."""

import pytest

from devkit.offline_run import run_program
from model.builders import dashboards
from model.facts.contract import LOGINSET
from tests.graph.test_user_identities import ALICE


def extra_sshd_config(graph) -> str:
    return graph.named("slurm-release").inputs["values"]["loginsets"][LOGINSET].get("extraSshdConfig", "")


@pytest.mark.parametrize(
    "overrides", [{}, {"users": [ALICE], "sshPublicKey": ""}], ids=["root-key", "named-users"]
)
def test_the_login_pods_sshd_keeps_local_forwarding(overrides):
    extra = extra_sshd_config(run_program("dev", overrides))
    assert dashboards.tunnel_refused_by(extra) == []
    if overrides:  # the named users' lines are there, and refuse nothing
        assert "PermitRootLogin no" in extra


def test_a_line_refusing_forwarding_is_caught():
    config = "AuthorizedKeysCommandUser nobody\nAllowTcpForwarding remote\n  disableforwarding yes\nX11Forwarding no\n"
    assert dashboards.tunnel_refused_by(config) == ["AllowTcpForwarding remote", "disableforwarding yes"]


def test_the_tunnel_command_forwards_the_local_port_to_grafanas_service():
    assert dashboards.tunnel_command("alice@login.example") == (
        f"ssh -N -L {dashboards.LOCAL_PORT}:grafana.grafana.svc.cluster.local:{dashboards.SERVICE_PORT} alice@login.example"
    )
    assert dashboards.url() == f"http://localhost:{dashboards.LOCAL_PORT}"
