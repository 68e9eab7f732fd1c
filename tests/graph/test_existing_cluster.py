"""Into an existing EKS cluster (existingClusterName): the stack reads the cluster and creates none,
puts its node groups in the given private subnets, installs none of the cluster's shared add-ons
unless installSharedAddons lists them, adopts none of its EKS add-ons, and refuses, before any
resource and all at once, a cluster that is missing, not ACTIVE, on a version outside Slinky's
range, in another VPC than vpcId, without the add-ons its nodes need, or not administered by the
deployer."""

import ast
import json

import pytest

from devkit import offline_account
from devkit.offline_account import (
    DEPLOYER_ROLE,
    EXISTING_CLUSTER,
    EXISTING_CLUSTER_NAME,
    LANDING_ZONE_PRIVATE,
    LANDING_ZONE_PUBLIC,
    LANDING_ZONE_VPC,
    OTHER_VPC,
    existing_cluster,
)
from devkit.offline_run import run_program
from model.facts.contract import CNI_POLICY, GP3
from tests.support.paths import REPO

PRIVATE = list(LANDING_ZONE_PRIVATE.values())
INTO_CLUSTER = {
    "existingClusterName": EXISTING_CLUSTER_NAME,
    "vpcId": LANDING_ZONE_VPC,
    "privateSubnetIds": PRIVATE,
    "publicSubnetIds": list(LANDING_ZONE_PUBLIC.values()),
}


def deployed(account=EXISTING_CLUSTER, **overrides):
    return run_program("dev", {**INTO_CLUSTER, **overrides}, account=account)


def refused(account=EXISTING_CLUSTER, **overrides) -> str:
    graph = run_program("dev", {**INTO_CLUSTER, **overrides}, expect_error=True, account=account)
    assert graph.resources == [], [r.name for r in graph.resources]
    return str(graph.error)


@pytest.fixture(scope="module")
def into() -> object:
    return deployed()


def types(graph) -> set[str]:
    return {r.type for r in graph.resources}


def releases(graph) -> set[str]:
    return {r.inputs["chart"].rsplit("/", 1)[-1] for r in graph.of_type("kubernetes:helm.sh/v3:Release")}


# What the stack creates, and what it leaves alone


def test_no_cluster_is_created(into):
    assert not {"eks:index:Cluster", "aws:eks/cluster:Cluster", "slinky-eks:cluster:Cluster"} & types(into)
    assert "slinky-eks:cluster:ExistingCluster" in types(into)


def test_existing_cluster_exposes_what_the_program_reads_of_cluster_with_clusters_types():
    # __main__.py uses either in the same place: every `cluster.<attribute>` it reads is on both.
    from components.cluster import Cluster
    from components.existing_cluster import ExistingCluster

    tree = ast.parse((REPO / "__main__.py").read_text())
    read = {
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "cluster"
    }
    assert read and read <= set(ExistingCluster.__annotations__)
    assert {a: ExistingCluster.__annotations__[a] for a in read} == {
        a: Cluster.__annotations__[a] for a in read
    }


def test_no_cluster_role_is_created(into):
    # The control plane's role is EKS's service principal's; every role the stack makes here is
    # for nodes or pods.
    trusted = [json.loads(r.inputs["assumeRolePolicy"]) for r in into.of_type("aws:iam/role:Role")]
    principals = [s["Principal"] for doc in trusted for s in doc["Statement"]]
    assert {"Service": "eks.amazonaws.com"} not in principals
    assert {"Service": "ec2.amazonaws.com"} in principals


def test_no_network_is_created(into):
    network = {
        "aws:ec2/vpc:Vpc",
        "aws:ec2/subnet:Subnet",
        "aws:ec2/routeTable:RouteTable",
        "aws:ec2/natGateway:NatGateway",
        "aws:ec2/internetGateway:InternetGateway",
        "aws:ec2/eip:Eip",
        "aws:ec2/flowLog:FlowLog",
        "aws:ec2/vpcEndpoint:VpcEndpoint",
    }
    assert network & types(into) == set()


def test_the_node_roles_access_entry_is_the_stacks_made_before_the_node_groups(into):
    # EKS would make it but never delete it: after destroy it would name a deleted role.
    (entry,) = into.of_type("aws:eks/accessEntry:AccessEntry")
    assert entry.inputs["type"] == "EC2_LINUX" and entry.inputs["clusterName"] == EXISTING_CLUSTER_NAME
    role = into.named("nodes-node-role")
    assert role.urn in entry.property_dependencies["principalArn"]
    for group in into.of_type("aws:eks/nodeGroup:NodeGroup"):
        assert into.depends_on(group, entry)


def test_a_config_map_only_cluster_gets_no_access_entry_of_the_stacks():
    graph = deployed(existing_cluster(authentication_mode="CONFIG_MAP", access_entries={}))
    assert graph.of_type("aws:eks/accessEntry:AccessEntry") == []


def test_the_node_groups_join_the_existing_cluster_in_the_given_subnets(into):
    groups = into.of_type("aws:eks/nodeGroup:NodeGroup")
    assert groups and {g.inputs["clusterName"] for g in groups} == {EXISTING_CLUSTER_NAME}
    assert all(set(g.inputs["subnetIds"]) <= set(PRIVATE) for g in groups)


def test_pod_identity_and_outputs_name_the_existing_cluster(into):
    associations = into.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert associations and {a.inputs["clusterName"] for a in associations} == {EXISTING_CLUSTER_NAME}
    assert into.output("clusterName") == EXISTING_CLUSTER_NAME


def test_the_provider_reads_the_clusters_endpoint_and_ca_and_asks_aws_for_a_token(into):
    described = offline_account.answer(
        EXISTING_CLUSTER, "aws:eks/getCluster:getCluster", {"name": "platform"}
    )
    (provider,) = into.of_type("pulumi:providers:kubernetes")
    config = json.loads(provider.inputs["kubeconfig"])
    (cluster,) = config["clusters"]
    assert cluster["cluster"] == {
        "server": described["endpoint"],
        "certificate-authority-data": described["certificateAuthorities"][0]["data"],
    }
    (user,) = config["users"]
    assert user["user"]["exec"]["command"] == "aws"
    assert user["user"]["exec"]["args"] == [
        "eks",
        "get-token",
        "--cluster-name",
        "platform",
        "--region",
        "us-west-2",
    ]


def test_the_providers_token_is_the_stacks_aws_profiles():
    graph = deployed(**{"aws:profile": "platform-ops"})
    (provider,) = graph.of_type("pulumi:providers:kubernetes")
    (user,) = json.loads(provider.inputs["kubeconfig"])["users"]
    assert user["user"]["exec"]["env"] == [{"name": "AWS_PROFILE", "value": "platform-ops"}]


def test_the_provider_never_adopts_an_object_the_cluster_holds(into):
    # pulumi-kubernetes answers AlreadyExists for an object of the same name unless upsert is on
    # (docs/existing-cluster.md).
    (provider,) = into.of_type("pulumi:providers:kubernetes")
    assert not provider.inputs.get("upsertExistingObjects")


def test_the_clusters_eks_addons_are_left_alone(into):
    # CoreDNS, the node monitoring agent and the CSI drivers are the owner's unless listed.
    assert into.of_type("aws:eks/addon:Addon") == []


def test_a_csi_driver_neither_an_eks_addon_nor_listed_is_a_warning_not_a_refusal(into):
    # A driver installed with Helm is no EKS add-on, and AWS cannot be asked about it.
    for addon, key in (("aws-ebs-csi-driver", "ebsCsiDriver"), ("aws-efs-csi-driver", "efsCsiDriver")):
        (warned,) = [w for w in into.warnings if "[csi-driver-unseen]" in w and f"no EKS add-on {addon}" in w]
        assert f"list {key}" in warned


def test_a_csi_driver_the_cluster_runs_as_an_eks_addon_gets_no_warning():
    running = {**offline_account.EXISTING_CLUSTER_RECORD.addons, "aws-ebs-csi-driver": "v1.50.0-eksbuild.1"}
    graph = deployed(existing_cluster(addons=running))
    assert [w for w in graph.warnings if "[csi-driver-unseen]" in w and "aws-ebs-csi-driver" in w] == []


def test_a_listed_csi_driver_is_installed_taking_nothing_over_and_kept_on_destroy():
    graph = deployed(installSharedAddons=["ebsCsiDriver", "efsCsiDriver"])
    addons = graph.of_type("aws:eks/addon:Addon")
    assert {a.inputs["addonName"] for a in addons} == {"aws-ebs-csi-driver", "aws-efs-csi-driver"}
    for addon in addons:
        assert addon.inputs["resolveConflictsOnCreate"] == "NONE"
        assert addon.inputs["preserve"] is True


def test_a_listed_csi_driver_the_cluster_runs_as_an_eks_addon_is_refused():
    running = {**offline_account.EXISTING_CLUSTER_RECORD.addons, "aws-efs-csi-driver": "v2.1.0-eksbuild.1"}
    message = refused(existing_cluster(addons=running), installSharedAddons=["efsCsiDriver"])
    assert "a list without efsCsiDriver" in message and "[csi-driver-listed-but-present]" in message


def test_csi_drivers_the_cluster_runs_are_not_adopted():
    running = {**offline_account.EXISTING_CLUSTER_RECORD.addons, "aws-ebs-csi-driver": "v1.50.0-eksbuild.1"}
    graph = deployed(existing_cluster(addons={**running, "aws-efs-csi-driver": "v2.1.0-eksbuild.1"}))
    assert graph.of_type("aws:eks/addon:Addon") == []


def test_the_gp3_class_is_not_made_the_clusters_default(into):
    (gp3,) = [
        c
        for c in into.of_type("kubernetes:storage.k8s.io/v1:StorageClass")
        if c.inputs["metadata"]["name"] == GP3
    ]
    assert "storageclass.kubernetes.io/is-default-class" not in gp3.inputs["metadata"].get("annotations", {})


def test_the_node_role_gets_no_cni_policy_where_the_cni_has_its_own_role(into):
    attached = {
        a.inputs["policyArn"] for a in into.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    }
    assert CNI_POLICY not in attached


def test_the_node_role_gets_the_cni_policy_where_the_cni_runs_on_it():
    graph = deployed(existing_cluster(addon_roles={}))
    attached = {
        a.inputs["policyArn"] for a in graph.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    }
    assert CNI_POLICY in attached


# Who reaches the stack's database and file system


def test_the_stacks_nodes_carry_a_security_group_of_their_own_beside_the_clusters(into):
    own = into.named("nodes-sg")
    assert "ingress" not in own.inputs and own.inputs["vpcId"] == LANDING_ZONE_VPC
    core = into.named("nodes-core-lt").inputs["vpcSecurityGroupIds"]
    # The cluster's first: a launch template that names groups replaces the one EKS would attach.
    assert len(core) == 2 and core[0].startswith("sg-0e") and core[1] == "nodes-sg-id"
    interfaces = into.named("nodes-gpu-lt").inputs["networkInterfaces"]
    assert interfaces and all(i["securityGroups"] == core for i in interfaces)


def test_the_database_admits_the_stacks_nodes_not_every_node_of_the_cluster(into):
    (rule,) = [
        r
        for r in into.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
        if r.inputs["securityGroupId"] == "accounting-sg-id"
    ]
    assert rule.inputs["referencedSecurityGroupId"] == "nodes-sg-id"


def test_the_file_system_admits_the_stacks_nodes_not_every_node_of_the_cluster(into):
    (rule,) = into.named("storage-nfs").inputs["ingress"]
    assert rule["securityGroups"] == ["nodes-sg-id"]


# Fixed names the cluster must not hold


def test_every_fixed_name_the_stack_takes_in_the_cluster_is_documented():
    # The names are the stack's in any cluster; docs/existing-cluster.md lists what an existing
    # cluster must not hold, since the preview cannot see the cluster's objects.
    graph = deployed(
        gpuMinNodes=0,
        gpuMaxNodes=2,
        installSharedAddons=[
            "certManager",
            "loadBalancerController",
            "devicePlugins",
            "keda",
            "clusterAutoscaler",
        ],
    )
    documented = (REPO / "docs" / "existing-cluster.md").read_text()
    documented = " ".join(documented.split())
    taken = set()
    for r in graph.resources:
        if r.type == "kubernetes:helm.sh/v3:Release":
            taken.add(f"`{r.inputs['namespace']}/{r.inputs['name']}`")
            taken.add(f"`{r.inputs['namespace']}`")
        elif r.type.startswith("kubernetes:") and not (r.inputs.get("metadata") or {}).get("namespace"):
            name = r.inputs["metadata"]["name"]
            taken.add(f"`{name}`")
    assert taken and {t for t in taken if t not in documented and t != "`kube-system`"} == set()


# Shared add-ons


def test_no_shared_addon_is_installed_by_default(into):
    assert releases(into) & {"cert-manager", "aws-load-balancer-controller", "nvidia-device-plugin"} == set()
    assert "slinky-eks:ingress:LoadBalancerController" not in types(into)
    assert "slinky-eks:devices:DevicePlugins" not in types(into)


def test_a_listed_shared_addon_is_installed():
    graph = deployed(installSharedAddons=["certManager", "loadBalancerController", "devicePlugins"])
    assert {"cert-manager", "aws-load-balancer-controller", "nvidia-device-plugin"} <= releases(graph)


def test_an_autoscaling_pool_needs_the_stacks_own_scalers():
    message = refused(gpuMinNodes=0, gpuMaxNodes=2)
    assert "slinky-eks:installSharedAddons = []" in message and "keda and clusterAutoscaler" in message
    assert "[autoscaling-needs-own-scalers]" in message


def test_an_autoscaling_pool_with_its_scalers_listed_deploys():
    graph = deployed(gpuMinNodes=0, gpuMaxNodes=2, installSharedAddons=["keda", "clusterAutoscaler"])
    assert {"keda", "cluster-autoscaler"} <= releases(graph)


def test_shared_addons_without_an_existing_cluster_are_ignored_with_a_warning():
    graph = run_program("dev", {"installSharedAddons": ["certManager"]})
    assert any("[shared-addons-without-existing-cluster]" in w for w in graph.warnings)
    assert "cert-manager" in releases(graph)


# Refusals, before any resource


def test_a_cluster_that_does_not_exist_is_refused():
    message = refused(existingClusterName="nosuch")
    assert "slinky-eks:existingClusterName = 'nosuch'" in message and "[existing-cluster-exists]" in message


def test_a_cluster_not_active_is_refused():
    message = refused(existing_cluster(status="CREATING"))
    assert "platform is CREATING" in message and "[existing-cluster-active]" in message


def test_a_cluster_on_a_version_outside_slinkys_range_is_refused():
    message = refused(existing_cluster(version="1.28"))
    assert "platform runs 1.28" in message and "[existing-cluster-version]" in message


def test_a_cluster_in_another_vpc_is_refused():
    message = refused(existing_cluster(vpc_id=OTHER_VPC))
    assert f"platform is in {OTHER_VPC}" in message and "[existing-cluster-vpc]" in message


def test_a_cluster_without_the_pod_identity_agent_add_on_deploys_with_a_warning():
    # It may run self-managed (Helm), which AWS cannot be asked about.
    addons = {
        k: v
        for k, v in offline_account.EXISTING_CLUSTER_RECORD.addons.items()
        if k != "eks-pod-identity-agent"
    }
    graph = deployed(existing_cluster(addons=addons))
    (warned,) = [w for w in graph.warnings if "[existing-cluster-addon-unseen]" in w]
    assert "no EKS add-on eks-pod-identity-agent" in warned


def test_a_self_managed_vpc_cni_deploys_with_a_warning_and_the_cni_policy_on_the_node_role():
    # EKS installs the VPC CNI self-managed on a cluster not made in the console.
    addons = {k: v for k, v in offline_account.EXISTING_CLUSTER_RECORD.addons.items() if k != "vpc-cni"}
    graph = deployed(existing_cluster(addons=addons))
    assert any("[existing-cluster-addon-unseen]" in w and "vpc-cni" in w for w in graph.warnings)
    attached = {
        a.inputs["policyArn"] for a in graph.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    }
    assert CNI_POLICY in attached


def test_a_deployer_without_an_access_entry_is_refused():
    message = refused(existing_cluster(authentication_mode="API", access_entries={}))
    assert f"no access entry for {DEPLOYER_ROLE}" in message and "[deployer-cluster-admin]" in message


def test_a_deployer_without_an_access_entry_deploys_with_a_warning_where_aws_auth_is_read():
    graph = deployed(existing_cluster(access_entries={}))
    assert any("[deployer-cluster-admin-unreadable]" in w and "aws-auth" in w for w in graph.warnings)


def test_a_config_map_only_cluster_deploys_with_a_warning():
    graph = deployed(existing_cluster(authentication_mode="CONFIG_MAP", access_entries={}))
    assert any("[deployer-cluster-admin-unreadable]" in w for w in graph.warnings)


def test_the_network_keys_are_required_beside_an_existing_cluster():
    message = refused(vpcId="", privateSubnetIds=[])
    assert "slinky-eks:vpcId is not set" in message and "slinky-eks:privateSubnetIds is not set" in message
    assert "[existing-cluster-needs-network]" in message


def test_every_refusal_comes_at_once():
    message = refused(
        existing_cluster(
            status="UPDATING", version="1.28", vpc_id=OTHER_VPC, authentication_mode="API", access_entries={}
        )
    )
    for rule in (
        "existing-cluster-active",
        "existing-cluster-version",
        "existing-cluster-vpc",
        "deployer-cluster-admin",
    ):
        assert f"[{rule}]" in message


def test_the_own_cluster_reads_no_existing_one(dev):
    assert not [t for t, _ in dev.calls if t.startswith("aws:eks/")]


def test_the_autoscaler_matches_the_existing_clusters_version():
    graph = deployed(
        existing_cluster(version="1.35"),
        gpuMinNodes=0,
        gpuMaxNodes=2,
        installSharedAddons=["keda", "clusterAutoscaler"],
    )
    (autoscaler,) = [
        r for r in graph.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == "cluster-autoscaler"
    ]
    assert autoscaler.inputs["values"]["image"]["tag"] == "v1.35.2"
