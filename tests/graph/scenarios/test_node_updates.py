"""A launch-template or AMI change to the GPU group never needs an extra GPU node: the MINIMAL
update strategy terminates a node before launching its replacement (EKS API reference,
NodegroupUpdateConfig: https://docs.aws.amazon.com/eks/latest/APIReference/API_NodegroupUpdateConfig.html)."""

import pytest

from devkit.offline_run import run_program


def terminates_before_launching(group_inputs) -> bool:
    # EKS takes an absent updateStrategy as DEFAULT: launch first, then terminate.
    return (group_inputs.get("updateConfig") or {}).get("updateStrategy") == "MINIMAL"


@pytest.mark.parametrize("instance_type", ["g6.12xlarge", "p5.48xlarge"])
def test_gpu_group_updates_terminate_before_launching(instance_type):
    graph = run_program("dev", {"gpuInstanceType": instance_type})
    assert terminates_before_launching(graph.named("nodes-gpu").inputs)


def test_gpu_group_still_replaces_one_node_at_a_time(dev):
    assert dev.named("nodes-gpu").inputs["updateConfig"]["maxUnavailable"] == 1


def test_core_group_keeps_its_nodes_up_while_replacing_them(dev):
    # Core nodes are cheap and run slurmctld: launch the new node first.
    assert dev.named("nodes-core").inputs["updateConfig"]["updateStrategy"] == "DEFAULT"


@pytest.mark.parametrize("update_config", [None, {"maxUnavailable": 1}, {"updateStrategy": "DEFAULT"}])
def test_a_group_without_minimal_updates_is_found(update_config):
    assert not terminates_before_launching({"updateConfig": update_config})
