"""Core and EFA GPU node groups: sizes, labels, taint, one AZ, placement group, interfaces from the
catalog, root volume, IMDSv2."""

import pytest

from devkit.offline_run import run_program
from model.facts import catalog


def _lt(graph, group):
    return graph.named(f"nodes-{group}-lt").inputs


def test_core_group_size_and_type_come_from_config(dev):
    core = dev.named("nodes-core").inputs
    assert core["instanceTypes"] == ["m6i.2xlarge"]
    assert core["scalingConfig"] == {"desiredSize": 2, "maxSize": 2, "minSize": 2}


def test_core_nodes_are_labelled_role_core(dev):
    assert dev.named("nodes-core").inputs["labels"] == {"role": "core"}


def test_gpu_group_size_and_type_come_from_config():
    graph = run_program("dev", {"gpuInstanceType": "p5.48xlarge", "gpuNodeCount": 4})
    gpu = graph.named("nodes-gpu").inputs
    assert gpu["instanceTypes"] == ["p5.48xlarge"]
    assert gpu["scalingConfig"] == {"desiredSize": 4, "maxSize": 4, "minSize": 4}


def test_gpu_nodes_run_the_al2023_nvidia_ami(dev):
    assert dev.named("nodes-gpu").inputs["amiType"] == "AL2023_x86_64_NVIDIA"
    assert "imageId" not in _lt(dev, "gpu")  # EKS picks the AMI from amiType


def test_gpu_group_has_exactly_one_subnet_in_the_gpu_az(dev):
    assert dev.named("nodes-gpu").inputs["subnetIds"] == ["network-private-us-west-2a-id"]
    assert dev.named("network-private-us-west-2a").inputs["availabilityZone"] == "us-west-2a"


def test_gpu_nodes_are_tainted_for_gpu_work_only(dev):
    assert dev.named("nodes-gpu").inputs["taints"] == [
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}
    ]
    assert not dev.named("nodes-core").inputs.get("taints")


def test_gpu_nodes_carry_a_label_to_select_them_by(dev):
    assert dev.named("nodes-gpu").inputs["labels"] == {"role": "gpu"}


def test_gpu_nodes_share_a_cluster_placement_group(dev):
    pg = dev.named("nodes-gpu-pg")
    assert pg.inputs["strategy"] == "cluster"
    assert _lt(dev, "gpu")["placement"]["groupName"] == "nodes-gpu-pg"


@pytest.mark.parametrize(
    "instance_type",
    ["g6.12xlarge", "g6e.48xlarge", "p4d.24xlarge", "p5.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"],
)
def test_gpu_interfaces_follow_the_catalog(instance_type):
    graph = run_program("dev", {"gpuInstanceType": instance_type})
    ifaces = _lt(graph, "gpu")["networkInterfaces"]
    assert len(ifaces) == catalog.CATALOG[instance_type].efa_interfaces
    assert ifaces[0]["interfaceType"] == "efa" and ifaces[0]["deviceIndex"] == 0
    assert all(i["interfaceType"] == "efa-only" and i["deviceIndex"] == 1 for i in ifaces[1:])
    assert [i["networkCardIndex"] for i in ifaces] == list(range(len(ifaces)))


def test_gpu_interfaces_keep_the_cluster_security_group(dev):
    # Interfaces naming SGs replace the cluster SG EKS would attach: EFA needs its self rule.
    for iface in _lt(dev, "gpu")["networkInterfaces"]:
        assert iface["securityGroups"] == ["sg-0cluster0primary0"]
        assert "subnetId" not in iface


def test_gpu_root_volume_is_large_gp3_with_raised_throughput(dev):
    (root,) = _lt(dev, "gpu")["blockDeviceMappings"]
    ebs = root["ebs"]
    assert root["deviceName"] == "/dev/xvda"
    assert ebs["volumeType"] == "gp3" and ebs["volumeSize"] == 400 and ebs["encrypted"] == "true"
    assert ebs["throughput"] > 125 and ebs["iops"] > 3000  # above gp3's baseline


def test_gpu_root_volume_size_comes_from_config():
    graph = run_program("dev", {"gpuRootVolumeGiB": 800})
    assert _lt(graph, "gpu")["blockDeviceMappings"][0]["ebs"]["volumeSize"] == 800


@pytest.mark.parametrize("group", ["core", "gpu"])
def test_nodes_require_imdsv2(dev, group):
    meta = _lt(dev, group)["metadataOptions"]
    assert meta["httpTokens"] == "required" and meta["httpPutResponseHopLimit"] == 1


@pytest.mark.parametrize("group", ["core", "gpu"])
def test_node_groups_use_their_launch_templates(dev, group):
    ng = dev.named(f"nodes-{group}")
    assert ng.inputs["launchTemplate"]["id"] == f"nodes-{group}-lt-id"
    assert dev.depends_on(ng, dev.named(f"nodes-{group}-lt"))


def test_node_role_has_worker_cni_and_registry_policies(dev):
    arns = {
        r.inputs["policyArn"]
        for r in dev.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.name.startswith("nodes-node-policy")
    }
    assert {
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
    } <= arns


def test_an_ena_only_first_card_gets_an_ena_primary_and_efa_only_on_the_other_cards():
    # p6-b300.48xlarge: card 0 takes ENA only, cards 1-16 take EFA
    # (../shared/ref/aws/describe-instance-types.json, NetworkInfo.NetworkCards).
    graph = run_program("dev", {"gpuInstanceType": "p6-b300.48xlarge"})
    ifaces = _lt(graph, "gpu")["networkInterfaces"]
    assert (ifaces[0]["interfaceType"], ifaces[0]["deviceIndex"]) == ("interface", 0)
    assert [(i["networkCardIndex"], i["interfaceType"], i["deviceIndex"]) for i in ifaces[1:]] == [
        (card, "efa-only", 1) for card in range(1, 17)
    ]
    assert catalog.CATALOG["p6-b300.48xlarge"].efa_interfaces == 16
