"""Cluster services: device plugins, the load balancer controller, EFS /shared and gp3 storage."""

import json

import pytest

from model.facts import versions
from model.facts.contract import GPU_TOLERATION

SHARED_FS_ID = "fs-0123456789abcdef0"


def _release(graph, name):
    r = graph.named(name)
    assert r.type == "kubernetes:helm.sh/v3:Release"
    return r


@pytest.mark.parametrize(
    "name,pin",
    [
        ("devices-nvidia", versions.NVIDIA_DEVICE_PLUGIN),
        ("devices-efa", versions.EFA_DEVICE_PLUGIN),
        ("lbc-release", versions.AWS_LOAD_BALANCER_CONTROLLER),
    ],
)
def test_upstream_charts_are_pinned(dev, name, pin):
    inputs = _release(dev, name).inputs
    assert (inputs["chart"], inputs["version"]) == (pin.chart, pin.version)
    assert inputs["repositoryOpts"]["repo"] == pin.repository


@pytest.mark.parametrize("name", ["devices-nvidia", "devices-efa"])
def test_device_plugins_tolerate_the_gpu_taint(dev, name):
    assert GPU_TOLERATION in _release(dev, name).inputs["values"]["tolerations"]


@pytest.mark.parametrize("name", ["devices-nvidia", "devices-efa"])
def test_device_plugins_select_the_gpu_nodes(dev, name):
    assert _release(dev, name).inputs["values"]["nodeSelector"] == {"role": "gpu"}


def test_nvidia_plugin_affinity_does_not_depend_on_nfd_labels(dev):
    terms = _release(dev, "devices-nvidia").inputs["values"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "role", "operator": "In", "values": ["gpu"]}]}]


@pytest.mark.parametrize("name", ["devices-nvidia", "devices-efa"])
def test_device_plugins_wait_for_the_gpu_nodes(dev, name):
    assert dev.depends_on(_release(dev, name), dev.named("nodes-gpu"))


def test_load_balancer_controller_knows_its_cluster(dev):
    values = _release(dev, "lbc-release").inputs["values"]
    assert values["clusterName"] == "slinky-eks-dev"
    assert values["region"] == "us-west-2"
    assert values["vpcId"] == "network-vpc-id"


def test_load_balancer_controller_runs_on_core_nodes(dev):
    assert _release(dev, "lbc-release").inputs["values"]["nodeSelector"] == {"role": "core"}


def test_load_balancer_controller_gets_credentials_through_pod_identity(dev):
    values = _release(dev, "lbc-release").inputs["values"]
    association = dev.named("lbc-identity")
    assert association.inputs["serviceAccount"] == values["serviceAccount"]["name"]
    assert association.inputs["namespace"] == _release(dev, "lbc-release").inputs["namespace"]
    assert association.inputs["roleArn"] == dev.named("lbc-role").inputs.get(
        "arn", "arn:aws:iam::123456789012:role/lbc-role"
    )
    assert dev.depends_on(_release(dev, "lbc-release"), association)


def test_load_balancer_controller_policy_manages_nlbs(dev):
    policy = json.loads(dev.named("lbc-policy").inputs["policy"])
    actions = {
        a
        for s in policy["Statement"]
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert {
        "elasticloadbalancing:CreateLoadBalancer",
        "elasticloadbalancing:DeleteLoadBalancer",
        "ec2:CreateSecurityGroup",
        "ec2:DeleteSecurityGroup",
    } <= actions
    trust = json.loads(dev.named("lbc-role").inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}


@pytest.mark.parametrize(
    "short,addon,policy",
    [
        ("ebs-csi", "aws-ebs-csi-driver", "AmazonEBSCSIDriverPolicy"),
        ("efs-csi", "aws-efs-csi-driver", "AmazonEFSCSIDriverPolicy"),
    ],
)
def test_csi_drivers_are_eks_add_ons_with_their_iam(dev, short, addon, policy):
    driver = dev.named(f"storage-{short}")
    assert driver.inputs["addonName"] == addon
    (assoc,) = driver.inputs["podIdentityAssociations"]
    assert assoc["roleArn"].endswith(f"storage-{short}-role")
    attached = dev.named(f"storage-{short}-policy-0").inputs["policyArn"]
    assert attached == f"arn:aws:iam::aws:policy/service-role/{policy}"


def test_gp3_storage_class(dev):
    sc = dev.named("storage-gp3").inputs
    assert sc["metadata"]["name"] == "gp3" and sc["provisioner"] == "ebs.csi.aws.com"
    assert sc["parameters"]["type"] == "gp3" and sc["parameters"]["encrypted"] == "true"
    assert sc["volumeBindingMode"] == "WaitForFirstConsumer"


def test_efs_is_encrypted(dev):
    assert dev.named("storage-efs").inputs["encrypted"] is True


def test_efs_has_a_mount_target_in_every_node_az(dev):
    subnets = {m.inputs["subnetId"] for m in dev.of_type("aws:efs/mountTarget:MountTarget")}
    assert subnets == {"network-private-us-west-2a-id", "network-private-us-west-2b-id"}
    assert dev.named("nodes-gpu").inputs["subnetIds"][0] in subnets


def test_only_the_cluster_reaches_nfs(dev):
    sg = dev.named("storage-nfs").inputs
    (rule,) = sg["ingress"]
    assert (rule["protocol"], rule["fromPort"], rule["toPort"]) == ("tcp", 2049, 2049)
    assert rule["securityGroups"] == ["sg-0cluster0primary0"] and not rule.get("cidrBlocks")
    for m in dev.of_type("aws:efs/mountTarget:MountTarget"):
        assert m.inputs["securityGroups"] == ["storage-nfs-id"]


def test_slurm_namespace_exists(dev):
    assert dev.named("storage-slurm-ns").inputs["metadata"]["name"] == "slurm"


def test_shared_volume_is_static_rwx_retained_efs(dev):
    pv = dev.named("storage-shared-pv").inputs
    assert pv["spec"]["accessModes"] == ["ReadWriteMany"]
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert pv["spec"]["csi"] == {"driver": "efs.csi.aws.com", "volumeHandle": SHARED_FS_ID}


def test_shared_claim_is_bound_to_the_volume_by_name(dev):
    pv = dev.named("storage-shared-pv").inputs
    pvc = dev.named("storage-shared-pvc").inputs
    assert pvc["metadata"] == {"name": "shared", "namespace": "slurm"}
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
    assert pvc["spec"]["storageClassName"] == "" == pv["spec"]["storageClassName"]
    assert pv["spec"]["claimRef"] == {"namespace": "slurm", "name": "shared"}
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]


def test_shared_file_system_id_is_an_output(dev):
    assert dev.output("sharedFileSystemId") == SHARED_FS_ID


# Ordering, for create and destroy (destroy runs the edges backwards).


@pytest.mark.parametrize("name", ["lbc-release", "storage-ebs-csi", "storage-efs-csi"])
def test_system_installs_wait_for_core_nodes(dev, name):
    assert dev.depends_on(dev.named(name), dev.named("nodes-core"))


def test_shared_volume_waits_for_every_mount_target(dev):
    pv = dev.named("storage-shared-pv")
    for m in dev.of_type("aws:efs/mountTarget:MountTarget"):
        assert dev.depends_on(pv, m)


def test_shared_volume_is_deleted_before_the_efs_driver(dev):
    assert dev.depends_on(dev.named("storage-shared-pv"), dev.named("storage-efs-csi"))


def test_in_cluster_objects_use_the_one_kubernetes_provider(dev):
    provider = dev.named("cluster-k8s")
    for r in dev.resources:
        if r.type.startswith("kubernetes:") and r.custom and not r.type.startswith("pulumi:"):
            assert r.provider.startswith(provider.urn + "::"), r.name
