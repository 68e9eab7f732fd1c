"""cluster-autoscaler (components/cluster_autoscaler.py) in a stack with an autoscaling pool: its
pinned release in kube-system, under its own Pod Identity, installed after the GPU node groups
whose tags it reads. What it may resize, and its image, are specified with the node groups in
tests/graph/test_node_autoscaling.py; its rendered chart in tests/charts/test_scaling_charts.py."""

import json

import pytest

from components.cluster_autoscaler import autoscaler_policy
from devkit.offline_run import run_program
from model.facts import versions


@pytest.fixture(scope="module")
def scaled():
    return run_program("dev", {"gpuMinNodes": "0", "gpuMaxNodes": "4"})


def test_the_autoscaler_is_its_chart_at_its_pin_in_kube_system(scaled):
    inputs = scaled.named("autoscaler-release").inputs
    pin = versions.CLUSTER_AUTOSCALER
    assert (inputs["chart"], inputs["version"], inputs["namespace"]) == (
        pin.chart,
        pin.version,
        "kube-system",
    )


def test_the_autoscaler_starts_after_its_identity_and_the_gpu_node_groups(scaled):
    release = scaled.named("autoscaler-release")
    assert scaled.depends_on(release, scaled.named("autoscaler-identity"))
    assert scaled.depends_on(release, scaled.named("nodes-gpu"))


def test_the_stacks_policy_is_the_one_written_for_its_cluster_account_and_region(scaled):
    assert json.loads(scaled.named("autoscaler-policy").inputs["policy"]) == json.loads(
        autoscaler_policy("slinky-eks-dev", "us-west-2", "123456789012")
    )


def test_only_reads_are_granted_on_every_resource():
    statements = json.loads(autoscaler_policy("c", "us-west-2", "123456789012"))["Statement"]
    unscoped = [a for s in statements if s["Resource"] == "*" for a in s["Action"]]
    assert unscoped and all(a.split(":")[1].startswith(("Describe", "Get")) for a in unscoped)


def test_the_writes_name_only_groups_tagged_as_the_named_clusters():
    statements = json.loads(autoscaler_policy("other", "eu-west-1", "210987654321"))["Statement"]
    (write,) = [s for s in statements if "autoscaling:SetDesiredCapacity" in s["Action"]]
    assert write["Condition"] == {
        "StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/other": "owned"}
    }
    assert write["Resource"].startswith("arn:aws:autoscaling:eu-west-1:210987654321:")
