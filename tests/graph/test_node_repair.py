"""Instance replacement (issue 27, item 2): node auto repair on every managed node group, the EKS
node monitoring agent add-on pinned and installed with the control plane, its DCGM host engine
admitted onto the tainted GPU nodes, and no IAM for it."""

import json

import pytest

from devkit.offline_run import run_program
from model.facts import versions

TWO_POOLS = [
    {"name": "infer", "instanceType": "g6e.12xlarge", "nodeCount": 1},
    {"name": "train", "instanceType": "p5.48xlarge", "nodeCount": 2},
]
AGENT = "nodes-monitoring-agent"


@pytest.fixture(scope="module")
def two():
    return run_program("dev", {"gpuPools": TWO_POOLS})


def _gpu_groups(graph):
    return [r for r in graph.of_type("aws:eks/nodeGroup:NodeGroup") if r.name != "nodes-core"]


def tolerated(toleration: dict, taint: dict) -> bool:
    """Whether a pod's toleration admits it past a node group's taint (EKS form, NO_SCHEDULE), by
    Kubernetes' rules: the same key (or none, with Exists), the same effect (or none), and for
    Equal the same value (https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/)."""
    effect = "".join(w.capitalize() for w in taint["effect"].split("_"))
    if toleration.get("effect") not in (None, effect):
        return False
    if toleration.get("operator", "Equal") == "Exists":
        return toleration.get("key") in (None, taint["key"])
    return toleration.get("key") == taint["key"] and toleration.get("value") == taint.get("value")


def test_the_toleration_rule_refuses_another_key_or_effect():
    taint = {"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}
    assert tolerated({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, taint)
    assert tolerated({"operator": "Exists"}, taint)
    assert not tolerated({"key": "aws.amazon.com/efa", "operator": "Exists"}, taint)
    assert not tolerated({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, taint)
    assert not tolerated({"key": "nvidia.com/gpu", "value": "false"}, taint)


def test_every_gpu_pool_group_replaces_its_broken_nodes(two):
    groups = _gpu_groups(two)
    assert sorted(g.name for g in groups) == ["nodes-gpu-infer", "nodes-gpu-train"]
    for group in groups:
        assert group.inputs["nodeRepairConfig"] == {"enabled": True}, group.name


def test_the_core_group_repairs_one_node_at_a_time(dev):
    assert dev.named("nodes-core").inputs["nodeRepairConfig"] == {
        "enabled": True,
        "maxParallelNodesRepairedCount": 1,
    }


def test_the_monitoring_agent_is_the_pinned_eks_add_on(dev):
    agent = dev.named(AGENT).inputs
    assert agent["addonName"] == "eks-node-monitoring-agent"
    assert agent["addonVersion"] == versions.NODE_MONITORING_AGENT_VERSION
    assert agent["clusterName"] == dev.named("cluster-eks").inputs["name"]


def test_the_agents_dcgm_host_engine_is_admitted_onto_every_gpu_group(two):
    # Without it the agent on a GPU node sees no Xid or ECC fault (model/builders/node_repair.py).
    config = json.loads(two.named(AGENT).inputs["configurationValues"])
    tolerations = config["dcgmAgent"]["tolerations"]
    for group in _gpu_groups(two):
        for taint in group.inputs["taints"]:
            assert any(tolerated(t, taint) for t in tolerations), (group.name, taint)


def test_the_monitoring_agent_has_no_aws_credentials(dev):
    # The EKS user guide: the add-on "doesn't require additional permissions".
    agent = dev.named(AGENT).inputs
    assert not agent.get("podIdentityAssociations") and not agent.get("serviceAccountRoleArn")


def test_the_monitoring_agent_installs_with_the_control_plane_before_any_node(dev):
    agent = dev.named(AGENT)
    assert dev.depends_on(agent, dev.named("cluster-eks"))
    for group in dev.of_type("aws:eks/nodeGroup:NodeGroup"):
        assert not dev.depends_on(agent, group), group.name


def test_nothing_waits_for_the_monitoring_agent(dev):
    agent = dev.named(AGENT)
    assert [r.name for r in dev.resources if r.custom and dev.depends_on(r, agent)] == []
