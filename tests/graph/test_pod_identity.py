"""Pods get AWS credentials only as the one service account a role is meant for: Pod Identity
trust policies carry the namespace, service account and cluster conditions of the EKS user guide
(https://docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html), and no pod reaches the node
role through IMDS (hop limit 1)."""

import copy
import json

import pytest

CLUSTER = "slinky-eks-dev"
ACCOUNT = "123456789012"
CLUSTER_ARN = f"arn:aws:eks:us-west-2:{ACCOUNT}:cluster/{CLUSTER}"
TAG_KEYS = {
    "aws:SourceAccount": "account",
    "aws:RequestTag/eks-cluster-arn": "cluster ARN",
    "aws:RequestTag/eks-cluster-name": "cluster",
    "aws:RequestTag/kubernetes-namespace": "namespace",
    "aws:RequestTag/kubernetes-service-account": "service account",
}


def trust_problems(trust: dict, cluster: str, namespace: str, service_account: str) -> list[str]:
    """Why some other pod could assume this role; empty when only the named one can."""
    want = {
        "aws:SourceAccount": ACCOUNT,
        "aws:RequestTag/eks-cluster-arn": CLUSTER_ARN,
        "aws:RequestTag/eks-cluster-name": cluster,
        "aws:RequestTag/kubernetes-namespace": namespace,
        "aws:RequestTag/kubernetes-service-account": service_account,
    }
    problems = []
    for i, statement in enumerate(trust["Statement"]):
        if statement["Principal"] != {"Service": "pods.eks.amazonaws.com"}:
            continue
        equals = (statement.get("Condition") or {}).get("StringEquals", {})
        for key, value in want.items():
            if equals.get(key) not in (value, [value]):
                problems.append(
                    f"statement {i}: {TAG_KEYS[key]} is not fixed to {value!r} "
                    f"(StringEquals {key} = {equals.get(key)!r})"
                )
    return problems


def _pod_identity_roles(graph):
    """(role, namespace, service account) of every Pod Identity association in the graph."""
    found = []
    for assoc in graph.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation"):
        found.append(
            (
                assoc.inputs["roleArn"].rsplit("/", 1)[1],
                assoc.inputs["namespace"],
                assoc.inputs["serviceAccount"],
            )
        )
    for addon in graph.of_type("aws:eks/addon:Addon"):
        for assoc in addon.inputs.get("podIdentityAssociations", []):
            # Add-on associations are in the add-on's namespace: kube-system for the CSI drivers.
            found.append((assoc["roleArn"].rsplit("/", 1)[1], "kube-system", assoc["serviceAccount"]))
    return found


def _trust(graph, role):
    return json.loads(graph.named(role).inputs["assumeRolePolicy"])


def test_the_graph_has_the_pod_identity_roles_this_file_is_about(dev):
    assert sorted(_pod_identity_roles(dev)) == [
        ("cluster-vpc-cni-role", "kube-system", "aws-node"),
        ("grafana-role", "grafana", "grafana"),
        ("lbc-role", "kube-system", "aws-load-balancer-controller"),
        ("slurm-registry-role", "slurm", "slurmd"),
        ("storage-ebs-csi-role", "kube-system", "ebs-csi-controller-sa"),
    ]


def test_every_pod_identity_role_trusts_only_its_service_account(dev):
    for role, namespace, account in _pod_identity_roles(dev):
        assert trust_problems(_trust(dev, role), CLUSTER, namespace, account) == [], role


def test_trust_still_lets_pod_identity_tag_the_session(dev):
    for role, _, _ in _pod_identity_roles(dev):
        (statement,) = _trust(dev, role)["Statement"]
        assert statement["Action"] == ["sts:AssumeRole", "sts:TagSession"]


@pytest.mark.parametrize(
    "breakage,lost",
    [
        (lambda c: c["StringEquals"].pop("aws:RequestTag/kubernetes-namespace"), "namespace"),
        (lambda c: c["StringEquals"].pop("aws:RequestTag/kubernetes-service-account"), "service account"),
        (lambda c: c["StringEquals"].update({"aws:RequestTag/eks-cluster-name": "other-cluster"}), "cluster"),
        (lambda c: c.update({"StringLike": c.pop("StringEquals")}), "namespace"),
        (lambda c: c["StringEquals"].pop("aws:SourceAccount"), "account"),
        (
            lambda c: c["StringEquals"].update(
                {"aws:RequestTag/eks-cluster-arn": CLUSTER_ARN.replace(ACCOUNT, "210987654321")}
            ),
            "cluster ARN",
        ),
    ],
)
def test_a_loose_trust_policy_is_found(dev, breakage, lost):
    trust = copy.deepcopy(_trust(dev, "lbc-role"))
    breakage(trust["Statement"][0]["Condition"])
    problems = trust_problems(trust, CLUSTER, "kube-system", "aws-load-balancer-controller")
    assert any(f"{lost} is not fixed" in p for p in problems), problems


def test_a_trust_policy_without_conditions_is_found(dev):
    trust = copy.deepcopy(_trust(dev, "storage-ebs-csi-role"))
    del trust["Statement"][0]["Condition"]
    assert len(trust_problems(trust, CLUSTER, "kube-system", "ebs-csi-controller-sa")) == 5


def pods_reach_node_role(metadata_options: dict) -> bool:
    """Whether a pod on the pod network can get an IMDSv2 token (and so the node role)."""
    return (
        metadata_options.get("httpEndpoint") != "disabled"
        and int(metadata_options.get("httpPutResponseHopLimit") or 1) > 1
    )


@pytest.mark.parametrize("group", ["core", "gpu"])
def test_pods_cannot_take_the_node_role_through_imds(dev, group):
    meta = dev.named(f"nodes-{group}-lt").inputs["metadataOptions"]
    assert meta["httpTokens"] == "required"
    assert not pods_reach_node_role(meta)


def test_every_launch_template_is_checked(dev):
    assert sorted(lt.name for lt in dev.of_type("aws:ec2/launchTemplate:LaunchTemplate")) == [
        "nodes-core-lt",
        "nodes-gpu-lt",
    ]


def test_a_hop_limit_of_two_is_found(dev):
    meta = dict(dev.named("nodes-gpu-lt").inputs["metadataOptions"], httpPutResponseHopLimit=2)
    assert pods_reach_node_role(meta)


def test_the_load_balancer_controller_needs_no_imds(dev):
    # It would read region and VPC from IMDS; both are given (chart 3.5.0 values.yaml).
    (release,) = [r for r in dev.of_type("kubernetes:helm.sh/v3:Release") if r.name == "lbc-release"]
    assert release.inputs["values"]["region"] and release.inputs["values"]["vpcId"]
