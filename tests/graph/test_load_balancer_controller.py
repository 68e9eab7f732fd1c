"""The AWS Load Balancer Controller (components/load_balancer_controller.py) in the dev stack: its
pinned release in kube-system, told the cluster, region and VPC, running under a Pod Identity
association that names exactly the service account the chart creates, and installed only once that
association exists. Its IAM policy is specified in tests/graph/test_load_balancer_policy.py."""

import pytest

from model.builders import load_balancer_controller
from model.facts import versions


@pytest.fixture(scope="module")
def release(dev):
    return dev.named("lbc-release")


def test_the_controller_is_its_chart_at_its_pin_in_kube_system(release):
    pin = versions.AWS_LOAD_BALANCER_CONTROLLER
    assert (release.inputs["chart"], release.inputs["version"]) == (pin.chart, pin.version)
    assert release.inputs["namespace"] == "kube-system"


def test_the_controller_is_told_the_stacks_cluster_region_and_vpc(dev, release):
    values = release.inputs["values"]
    assert (values["clusterName"], values["region"]) == ("slinky-eks-dev", "us-west-2")
    # The id the mocks give the Network's VPC (network-vpc).
    assert dev.named("network-vpc").type == "aws:ec2/vpc:Vpc" and values["vpcId"] == "network-vpc-id"


def test_the_association_names_the_service_account_the_chart_creates(dev, release):
    association = dev.named("lbc-identity").inputs
    created = release.inputs["values"]["serviceAccount"]
    assert created["create"] is True
    assert (association["namespace"], association["serviceAccount"]) == (
        load_balancer_controller.NAMESPACE,
        created["name"],
    )
    assert association["clusterName"] == "slinky-eks-dev"


def test_the_controller_starts_only_once_its_credentials_exist(dev, release):
    assert dev.depends_on(release, dev.named("lbc-identity"))


def test_the_controller_runs_after_the_core_nodes(dev, release):
    assert dev.depends_on(release, dev.named("nodes-core"))
