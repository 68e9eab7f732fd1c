"""Core and EFA GPU node groups: sizes, labels, taint, one AZ, placement group, interfaces from the
catalog, root volume, IMDSv2."""

import fnmatch
import json

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


def _node_role_policies(graph, type_):
    return [r for r in graph.of_type(type_) if r.inputs.get("role") == "nodes-node-role"]


def test_the_node_role_carries_only_the_worker_node_managed_policy(dev):
    # Not AmazonEKS_CNI_Policy (the VPC CNI's own role has it: test_cluster.py), not
    # AmazonEC2ContainerRegistryReadOnly (every image of the account), not AmazonSSMManagedInstanceCore.
    attached = _node_role_policies(dev, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    assert [r.inputs["policyArn"] for r in attached] == ["arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy"]


def may_pull(policy: dict, repository_arn: str) -> bool:
    """Whether an identity policy allows ecr:BatchGetImage on a repository (IAM's wildcard match of
    Resource and NotResource; no Deny statements or conditions to weigh here)."""

    def matches(patterns) -> bool:
        return any(
            fnmatch.fnmatchcase(repository_arn, p)
            for p in ([patterns] if isinstance(patterns, str) else patterns)
        )

    for s in policy["Statement"]:
        actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
        if s["Effect"] != "Allow" or "ecr:BatchGetImage" not in actions:
            continue
        if ("Resource" in s and matches(s["Resource"])) or (
            "NotResource" in s and not matches(s["NotResource"])
        ):
            return True
    return False


def _image_policy(graph) -> dict:
    return json.loads(graph.named("nodes-node-images").inputs["policy"])


SLURMD_REPO = "arn:aws:ecr:us-west-2:123456789012:repository/slinky-eks-dev/slurmd"


@pytest.mark.parametrize(
    "repository,allowed",
    [
        (SLURMD_REPO, True),
        ("arn:aws:ecr:us-west-2:123456789012:repository/someone-elses/secrets", False),
        ("arn:aws:ecr:us-west-2:123456789012:repository/slinky-eks-dev/slurmd-other", False),
        # The EFA device plugin's image (aws/eks-charts aws-efa-k8s-device-plugin v0.5.30 values.yaml).
        ("arn:aws:ecr:us-west-2:602401143452:repository/eks/aws-efa-k8s-device-plugin", True),
        ("arn:aws:ecr:ap-east-1:800184023465:repository/eks/kube-proxy", True),
    ],
)
def test_nodes_pull_the_stacks_repository_and_no_other_of_the_account(dev, repository, allowed):
    assert may_pull(_image_policy(dev), repository) is allowed


def test_registry_tokens_name_no_resource(dev):
    (token,) = [s for s in _image_policy(dev)["Statement"] if s["Action"] == "ecr:GetAuthorizationToken"]
    assert token["Resource"] == "*"


def test_a_policy_of_every_repository_is_found(dev):
    wide = {"Statement": [{"Effect": "Allow", "Action": ["ecr:BatchGetImage"], "Resource": "*"}]}
    assert may_pull(wide, "arn:aws:ecr:us-west-2:123456789012:repository/someone-elses/secrets")


def test_node_groups_wait_for_the_node_role_policies_they_make(dev):
    # The EFS client policy on the same role is the shared volume's to wait for (test_cluster_services.py).
    policies = [
        r
        for t in ("aws:iam/rolePolicy:RolePolicy", "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        for r in _node_role_policies(dev, t)
        if r.parent == dev.named("nodes").urn
    ]
    assert sorted(p.name for p in policies) == ["nodes-node-images", "nodes-node-policy-0"]
    for group in ("nodes-core", "nodes-gpu"):
        for policy in policies:
            assert dev.depends_on(dev.named(group), policy), (group, policy.name)


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


def _node_configs(user_data: str) -> list[str]:
    """The application/node.eks.aws parts of a launch template's MIME user data."""
    import base64
    import email

    message = email.message_from_bytes(base64.b64decode(user_data))
    return [p.get_payload() for p in message.walk() if p.get_content_type() == "application/node.eks.aws"]


def _local_storage(launch_template: dict) -> list:
    """spec.instance.localStorage of each NodeConfig in a launch template's user data; [] where it
    has no user data."""
    import yaml

    if "userData" not in launch_template:
        return []
    return [
        yaml.safe_load(config)["spec"]["instance"]["localStorage"]
        for config in _node_configs(launch_template["userData"])
    ]


def test_every_gpu_type_with_nvme_instance_store_assembles_it_as_one_raid0_volume():
    # One stack with a pool of each such catalog type (the quota check is skipped: no account
    # has quota for all of them at once, and it has nothing to do with storage).
    names = sorted(n for n, t in catalog.CATALOG.items() if t.instance_store and t.instance_store.nvme)
    assert len(names) == len(catalog.CATALOG)  # every catalog type has NVMe instance store (EC2's records)
    pools = [{"name": n.replace(".", "-"), "instanceType": n, "nodeCount": 1} for n in names]
    graph = run_program("dev", {"gpuPools": pools, "skipGpuQuotaCheck": True})
    storage = {n: _local_storage(_lt(graph, f"gpu-{n.replace('.', '-')}")) for n in names}
    assert {n: s for n, s in storage.items() if s != [{"strategy": "RAID0"}]} == {}


def test_a_gpu_type_without_instance_store_gets_no_user_data(monkeypatch):
    import dataclasses

    type_ = catalog.CATALOG["g6e.12xlarge"]
    monkeypatch.setitem(catalog.CATALOG, type_.name, dataclasses.replace(type_, instance_store=None))
    # A configuration no other test runs: run_program keeps each configuration's graph.
    graph = run_program("dev", {"gpuInstanceType": type_.name, "gpuRootVolumeGiB": 513})
    assert "userData" not in _lt(graph, "gpu")


def test_core_nodes_keep_the_amis_own_storage(dev):
    assert "userData" not in _lt(dev, "core")
