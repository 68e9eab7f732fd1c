"""The AWS Load Balancer Controller's computed values (model/builders/load_balancer_controller.py)."""

from model.builders import load_balancer_controller as lbc
from model.facts.contract import CORE_LABELS


def _values():
    return lbc.release_values("slinky-dev", "us-west-2", "vpc-0123")


def test_the_controller_is_told_its_cluster_region_and_vpc():
    values = _values()
    assert (values["clusterName"], values["region"], values["vpcId"]) == (
        "slinky-dev",
        "us-west-2",
        "vpc-0123",
    )


def test_the_service_account_is_created_under_the_name_the_pod_identity_association_names():
    assert _values()["serviceAccount"] == {"create": True, "name": lbc.SERVICE_ACCOUNT}


def test_the_controller_runs_on_the_core_nodes():
    assert _values()["nodeSelector"] == CORE_LABELS
