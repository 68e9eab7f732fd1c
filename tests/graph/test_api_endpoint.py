"""The EKS API endpoint: public only to apiAllowedCidrs (by default the SSH blocks), never to the
whole internet unless asked, and private for the nodes."""

import pytest

from devkit.offline_run import run_program
from tests.support.program import rejected


def _cluster(graph):
    return graph.named("cluster-eks").inputs


def test_public_endpoint_defaults_to_the_ssh_blocks(dev):
    assert _cluster(dev)["publicAccessCidrs"] == ["203.0.113.10/32"]


def test_public_endpoint_follows_api_allowed_cidrs():
    graph = run_program("dev", {"apiAllowedCidrs": ["198.51.100.0/24", "192.0.2.7/32"]})
    assert _cluster(graph)["publicAccessCidrs"] == ["198.51.100.0/24", "192.0.2.7/32"]


def test_nodes_reach_the_control_plane_privately(dev):
    assert _cluster(dev)["endpointPrivateAccess"] is True
    assert _cluster(dev)["endpointPublicAccess"] is True


def test_api_open_to_the_world_is_refused_by_default():
    msg = rejected(apiAllowedCidrs=["203.0.113.10/32", "0.0.0.0/0"])
    assert "slinky-eks:apiAllowedCidrs" in msg and "'0.0.0.0/0'" in msg and "allowApiFromAnywhere" in msg


def test_api_open_to_the_world_inherited_from_ssh_is_refused_with_the_reason():
    msg = rejected(sshAllowedCidrs=["0.0.0.0/0"], allowSshFromAnywhere=True)
    assert msg.startswith("invalid stack configuration (1 problem)")
    assert "slinky-eks:apiAllowedCidrs" in msg and "defaults to sshAllowedCidrs" in msg


def test_api_open_to_the_world_is_allowed_on_purpose():
    graph = run_program("dev", {"apiAllowedCidrs": ["0.0.0.0/0"], "allowApiFromAnywhere": True})
    assert _cluster(graph)["publicAccessCidrs"] == ["0.0.0.0/0"]


@pytest.mark.parametrize("value", ["2001:db8::/32", "not-a-cidr", "10.0.0.1/24"])
def test_api_blocks_must_be_ipv4_cidrs(value):
    msg = rejected(apiAllowedCidrs=[value])
    assert "slinky-eks:apiAllowedCidrs" in msg and repr(value) in msg


def test_an_invalid_ssh_list_is_reported_once():
    msg = rejected(sshAllowedCidrs=["not-a-cidr"])
    assert msg.startswith("invalid stack configuration (1 problem)") and "sshAllowedCidrs" in msg
