"""An autoscaling pool's EC2 side (components/node_groups.py, components/cluster_autoscaler.py): its node
group between minNodes and maxNodes with the desired size left to cluster-autoscaler, the tags CA
scales it up from zero with, CA itself with its narrowed IAM, and nothing of it for a fixed pool."""

import json

import pytest

from devkit.offline_run import run_program
from model.builders.node_templates import TEMPLATE

SCALED = {"gpuMinNodes": "0", "gpuMaxNodes": "4"}
TWO = [
    {"name": "infer", "instanceType": "g6e.12xlarge", "nodeCount": 1},
    {"name": "train", "instanceType": "p5.48xlarge", "nodeCount": 2, "minNodes": 0, "maxNodes": 8},
]


@pytest.fixture(scope="module")
def scaled():
    return run_program("dev", SCALED)


@pytest.fixture(scope="module")
def two():
    return run_program("dev", {"gpuPools": json.dumps(TWO)})


def _tags(graph, group):
    return {
        r.inputs["tag"]["key"]: r.inputs["tag"]["value"]
        for r in graph.of_type("aws:autoscaling/tag:Tag")
        if r.name.startswith(f"{group}-template-")
    }


def test_an_autoscaling_pools_group_spans_its_bounds_and_starts_at_its_minimum(scaled):
    assert scaled.named("nodes-gpu").inputs["scalingConfig"] == {"minSize": 0, "maxSize": 4, "desiredSize": 0}


def test_up_leaves_an_autoscaling_groups_desired_size_to_cluster_autoscaler(scaled):
    assert scaled.named("nodes-gpu").ignore_changes == ["scalingConfig.desiredSize"]


def test_a_fixed_pool_keeps_min_max_and_desired_at_its_count_and_owns_its_size(dev):
    group = dev.named("nodes-gpu")
    assert group.inputs["scalingConfig"] == {"minSize": 2, "maxSize": 2, "desiredSize": 2}
    assert group.ignore_changes == []


def test_the_core_group_never_autoscales(scaled):
    assert scaled.named("nodes-core").ignore_changes == []


def test_the_auto_scaling_group_describes_the_pools_nodes_to_cluster_autoscaler(scaled):
    assert _tags(scaled, "nodes-gpu") == {
        f"{TEMPLATE}/label/role": "gpu",
        f"{TEMPLATE}/taint/nvidia.com/gpu": "true:NoSchedule",
        f"{TEMPLATE}/resources/nvidia.com/gpu": "4",
        f"{TEMPLATE}/resources/vpc.amazonaws.com/efa": "1",
    }


def test_the_tags_go_on_the_auto_scaling_group_eks_made_and_never_onto_instances(scaled):
    tags = [r.inputs for r in scaled.of_type("aws:autoscaling/tag:Tag")]
    (group,) = {t["autoscalingGroupName"] for t in tags}
    assert group.startswith("eks-nodes-gpu-")  # eks-<node group>-<id>: the node group's resources output
    assert not any(t["tag"]["propagateAtLaunch"] for t in tags)


def test_in_a_stack_of_pools_only_the_autoscaling_one_is_tagged_with_its_pool_label(two):
    assert _tags(two, "nodes-gpu-infer") == {}
    tags = _tags(two, "nodes-gpu-train")
    assert tags[f"{TEMPLATE}/label/slinky-eks/gpu-pool"] == "train"
    assert tags[f"{TEMPLATE}/resources/nvidia.com/gpu"] == "8"
    assert tags[f"{TEMPLATE}/resources/vpc.amazonaws.com/efa"] == "32"
    assert two.named("nodes-gpu-infer").inputs["scalingConfig"] == {
        "minSize": 1,
        "maxSize": 1,
        "desiredSize": 1,
    }


def test_a_stack_without_autoscaling_pools_installs_no_autoscaler(dev):
    assert not [r for r in dev.resources if r.type.startswith("slinky-eks:scaling:")]
    assert not dev.of_type("aws:autoscaling/tag:Tag")


def test_cluster_autoscaler_runs_the_release_of_the_clusters_kubernetes_minor(scaled):
    values = scaled.named("autoscaler-release").inputs["values"]
    assert values["image"] == {
        "repository": "registry.k8s.io/autoscaling/cluster-autoscaler",
        "tag": "v1.36.1",
    }
    older = run_program("dev", {**SCALED, "kubernetesVersion": "1.34"})
    assert older.named("autoscaler-release").inputs["values"]["image"]["tag"] == "v1.34.5"


def test_cluster_autoscaler_never_removes_a_node_under_a_slurmd_pod(scaled):
    args = scaled.named("autoscaler-release").inputs["values"]["extraArgs"]
    assert (
        args["skip-nodes-with-custom-controller-pods"] is True
        and args["skip-nodes-with-local-storage"] is True
    )


def test_cluster_autoscaler_may_only_resize_this_clusters_groups(scaled):
    policy = json.loads(scaled.named("autoscaler-policy").inputs["policy"])
    (write,) = [s for s in policy["Statement"] if "autoscaling:SetDesiredCapacity" in s["Action"]]
    assert write["Condition"] == {
        "StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/slinky-eks-dev": "owned"}
    }
    assert (
        write["Resource"]
        == "arn:aws:autoscaling:us-west-2:123456789012:autoScalingGroup:*:autoScalingGroupName/*"
    )
    (read,) = [s for s in policy["Statement"] if s["Action"] == ["eks:DescribeNodegroup"]]
    assert read["Resource"] == "arn:aws:eks:us-west-2:123456789012:nodegroup/slinky-eks-dev/*/*"


def test_cluster_autoscalers_identity_is_its_own_service_account(scaled):
    association = scaled.named("autoscaler-identity").inputs
    assert (association["namespace"], association["serviceAccount"]) == ("kube-system", "cluster-autoscaler")
    trust = json.loads(scaled.named("autoscaler-role").inputs["assumeRolePolicy"])
    assert (
        trust["Statement"][0]["Condition"]["StringEquals"]["aws:RequestTag/kubernetes-service-account"]
        == "cluster-autoscaler"
    )


def test_an_autoscaling_pools_nodeset_is_written_at_its_floor(scaled):
    values = scaled.named("slurm-release").inputs["values"]
    assert values["nodesets"]["slinky"]["replicas"] == 0


def test_an_autoscaling_pools_readiness_waits_for_its_floor_only(scaled):
    (job,) = [r for r in scaled.of_type("kubernetes:batch/v1:Job") if r.name == "slurm-ready-job"]
    command = job.inputs["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[:3] == ["python3", "-m", "cluster_programs.pool_floor"] and command[-2:] == [
        "--min-nodes",
        "0",
    ]
    code = scaled.named("slurm-ready-code").inputs["data"]
    assert "pool_floor.py" in code


def test_the_outputs_carry_each_pools_bounds(scaled):
    (pool,) = scaled.output("gpuPools")
    assert (pool["nodeCount"], pool["minNodes"], pool["maxNodes"]) == (2, 0, 4)
