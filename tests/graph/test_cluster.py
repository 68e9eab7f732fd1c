"""EKS through pulumi-eks: version, private nodes, API access entries, add-ons before nodes, one
Kubernetes provider."""

import pytest

from components.cluster import ADMIN_POLICY
from devkit.offline_run import run_program
from model.facts import versions


def test_eks_version_comes_from_config(dev):
    assert dev.named("cluster-eks").inputs["version"] == versions.KUBERNETES_VERSION
    graph = run_program("dev", {"kubernetesVersion": "1.35"})
    assert graph.named("cluster-eks").inputs["version"] == "1.35"


def test_cluster_is_a_pulumi_eks_cluster_named_from_the_stack(dev):
    eks = dev.named("cluster-eks")
    assert eks.type == "eks:index:Cluster" and eks.remote
    assert eks.inputs["name"] == "slinky-eks-dev"


def test_nodes_live_in_private_subnets(dev):
    eks = dev.named("cluster-eks")
    assert eks.inputs["nodeAssociatePublicIpAddress"] is False
    assert sorted(eks.inputs["privateSubnetIds"]) == [
        "network-private-us-west-2a-id",
        "network-private-us-west-2b-id",
    ]
    assert sorted(eks.inputs["publicSubnetIds"]) == [
        "network-public-us-west-2a-id",
        "network-public-us-west-2b-id",
    ]


def test_authentication_is_api_mode_without_default_node_group(dev):
    eks = dev.named("cluster-eks")
    assert eks.inputs["authenticationMode"] == "API"
    assert eks.inputs["skipDefaultNodeGroup"] is True


def test_no_extra_admins_by_default(dev):
    assert not dev.named("cluster-eks").inputs.get("accessEntries")


def test_extra_admin_roles_get_cluster_admin_access_entries():
    arn = "arn:aws:iam::123456789012:role/platform-admins"
    graph = run_program("dev", {"adminRoleArns": [arn]})
    (entry,) = graph.named("cluster-eks").inputs["accessEntries"].values()
    assert entry["principalArn"] == arn
    assert entry["accessPolicies"]["admin"]["policyArn"] == ADMIN_POLICY
    assert entry["accessPolicies"]["admin"]["accessScope"]["type"] == "cluster"


def test_vpc_cni_and_kube_proxy_are_managed_with_the_cluster(dev):
    eks = dev.named("cluster-eks")
    assert eks.inputs["kubeProxyAddonOptions"]["enabled"] is True
    assert "vpcCniOptions" in eks.inputs


def test_eks_installs_cni_kube_proxy_and_coredns_before_any_node(dev):
    assert dev.named("cluster-eks").inputs["bootstrapSelfManagedAddons"] is True


def test_coredns_add_on_adopts_it_once_core_nodes_can_run_it(dev):
    assert dev.named("cluster-eks").inputs["corednsAddonOptions"]["enabled"] is False
    coredns = dev.named("nodes-coredns")
    assert (
        coredns.inputs["addonName"] == "coredns" and coredns.inputs["resolveConflictsOnCreate"] == "OVERWRITE"
    )
    assert dev.depends_on(coredns, dev.named("nodes-core"))


def test_nothing_waits_for_the_coredns_adoption(dev):
    # The bootstrapped CoreDNS serves from the moment the core nodes are up.
    coredns = dev.named("nodes-coredns")
    assert [r.name for r in dev.resources if r.custom and dev.depends_on(r, coredns)] == []


def test_pod_identity_agent_installs_with_the_cluster(dev):
    agent = dev.named("cluster-pod-identity-agent")
    assert agent.inputs["addonName"] == "eks-pod-identity-agent"
    assert dev.depends_on(agent, dev.named("cluster-eks"))


@pytest.mark.parametrize("group", ["nodes-core", "nodes-gpu"])
def test_node_groups_join_without_waiting_for_the_pod_identity_agent(dev, group):
    assert dev.depends_on(dev.named(group), dev.named("cluster-eks"))
    assert not dev.depends_on(dev.named(group), dev.named("cluster-pod-identity-agent"))


@pytest.mark.parametrize("user", ["lbc-identity", "lbc-release", "storage-ebs-csi", "storage-efs-csi"])
def test_pod_identity_users_wait_for_its_agent(dev, user):
    assert dev.depends_on(dev.named(user), dev.named("cluster-pod-identity-agent"))


def test_one_kubernetes_provider_built_from_the_cluster_kubeconfig(dev):
    (provider,) = dev.of_type("pulumi:providers:kubernetes")
    assert provider.name == "cluster-k8s"
    assert dev.named("cluster-eks").urn in provider.property_dependencies["kubeconfig"]


def test_control_plane_logs_api_audit_and_authenticator_by_default(dev):
    assert dev.named("cluster-eks").inputs["enabledClusterLogTypes"] == ["api", "audit", "authenticator"]


@pytest.mark.parametrize("types", [["scheduler", "controllerManager"], []])
def test_control_plane_log_types_follow_config(types):
    graph = run_program("dev", {"controlPlaneLogTypes": types})
    assert graph.named("cluster-eks").inputs["enabledClusterLogTypes"] == types


def test_control_plane_log_group_is_the_one_eks_writes_to(dev):
    # EKS's own name for it (Amazon EKS user guide, "Send control plane logs to CloudWatch Logs").
    assert dev.named("cluster-logs").inputs["name"] == "/aws/eks/slinky-eks-dev/cluster"


def test_control_plane_log_group_keeps_logs_for_the_configured_retention(dev):
    assert dev.named("cluster-logs").inputs["retentionInDays"] == 90
    graph = run_program("dev", {"controlPlaneLogRetentionDays": 365})
    assert graph.named("cluster-logs").inputs["retentionInDays"] == 365


def test_control_plane_log_group_exists_before_the_cluster(dev):
    assert dev.depends_on(dev.named("cluster-eks"), dev.named("cluster-logs"))


def test_control_plane_log_group_waits_for_nothing(dev):
    # So it is made while the VPC comes up and never lengthens the way to the control plane.
    group = dev.named("cluster-logs")
    assert group.dependencies == [] and not any(group.property_dependencies.values())


def test_control_plane_log_group_stays_while_logging_is_off():
    graph = run_program("dev", {"controlPlaneLogTypes": []})
    assert graph.named("cluster-logs").inputs["name"] == "/aws/eks/slinky-eks-dev/cluster"
