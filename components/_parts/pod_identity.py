"""IAM roles that EKS Pod Identity hands to one service account each."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Sequence

import pulumi
import pulumi_aws as aws


@dataclass(frozen=True)
class ServiceAccountRef:
    """The one service account, in one namespace of one cluster, that may assume a role."""

    cluster_name: str
    # The cluster's ARN (Cluster.arn): it names the account and region as well as the cluster.
    cluster_arn: pulumi.Input[str]
    namespace: str
    name: str


def trust_document(cluster_name: str, cluster_arn: str, namespace: str, service_account: str) -> dict:
    """Pod Identity's trust: the EKS Pod Identity service assumes the role and tags the session
    with the pod's cluster (name and ARN), namespace and service account; the conditions on those
    request tags keep every other association (another namespace, another cluster of this or any
    account with a cluster of the same name) from assuming it, and `aws:SourceAccount`, the
    account the service acts for, keeps the role to this account's clusters whatever the tags
    say. Tags and condition keys: Amazon EKS user guide, "Create IAM role with trust policy
    required by EKS Pod Identity" (https://docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html),
    its list of session tags (https://docs.aws.amazon.com/eks/latest/userguide/pod-id-abac.html),
    and the IAM user guide's global condition keys
    (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html#condition-keys-sourceaccount).
    Pod Identity sends aws:SourceAccount (a role trusting it on that key alone works:
    awslabs/mountpoint-s3-csi-driver issue #781); aws:SourceArn is left out: the user guide gives
    no value for it, and the same issue shows an ARN pattern there denying the pod its
    credentials. The cluster ARN tag pins what it would."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Condition": {
                    "StringEquals": {
                        "aws:SourceAccount": cluster_arn.split(":")[4],
                        "aws:RequestTag/eks-cluster-arn": cluster_arn,
                        "aws:RequestTag/eks-cluster-name": cluster_name,
                        "aws:RequestTag/kubernetes-namespace": namespace,
                        "aws:RequestTag/kubernetes-service-account": service_account,
                    }
                },
            }
        ],
    }


def trust_policy(account: ServiceAccountRef) -> pulumi.Output[str]:
    return pulumi.Output.from_input(account.cluster_arn).apply(
        lambda arn: json.dumps(trust_document(account.cluster_name, arn, account.namespace, account.name))
    )


@dataclass(frozen=True)
class PodRole:
    """A Pod Identity role and the policies that give it its permissions."""

    role: aws.iam.Role
    # What hands the role to a pod (the association, or the add-on that makes one) depends on
    # these, so `destroy` deletes them only after it, and after everything that waits for it: a
    # policy nothing depends on goes in destroy's first wave, while the controller still has load
    # balancers or volumes to delete (the trap of hashicorp/terraform-provider-aws issue #9495).
    policies: list[pulumi.Resource]


def pod_identity_role(
    name: str,
    account: ServiceAccountRef,
    managed_policy_arns: Sequence[str],
    parent: pulumi.Resource,
    inline_policy: pulumi.Input[str] | None = None,
) -> PodRole:
    opts = pulumi.ResourceOptions(parent=parent)
    role = aws.iam.Role(f"{name}-role", assume_role_policy=trust_policy(account), opts=opts)
    # role.id is the role's name, known once the role exists; naming it so gives the engine the
    # edge from the policy to its role.
    policies: list[pulumi.Resource] = [
        aws.iam.RolePolicyAttachment(f"{name}-policy-{i}", role=role.id, policy_arn=arn, opts=opts)
        for i, arn in enumerate(managed_policy_arns)
    ]
    if inline_policy is not None:
        policies.append(aws.iam.RolePolicy(f"{name}-policy", role=role.id, policy=inline_policy, opts=opts))
    return PodRole(role, policies)


def pod_identity(
    name: str,
    account: ServiceAccountRef,
    inline_policy: pulumi.Input[str] | None,
    parent: pulumi.Resource,
    depends_on: Sequence[pulumi.Resource],
    managed_policy_arns: Sequence[str] = (),
) -> aws.eks.PodIdentityAssociation:
    """A role with `inline_policy` and `managed_policy_arns` for `account`, and the EKS Pod Identity association that hands it
    to that service account (`<name>-identity`). The association must exist before the pods start:
    EKS gives credentials only to pods created after it (Amazon EKS user guide, "Assign an IAM role
    to a Kubernetes service account": https://docs.aws.amazon.com/eks/latest/userguide/pod-id-association.html),
    so a release waits for what this returns, and so outlives the role's policy on destroy."""
    pod_role = pod_identity_role(
        name, account, managed_policy_arns, parent=parent, inline_policy=inline_policy
    )
    return aws.eks.PodIdentityAssociation(
        f"{name}-identity",
        cluster_name=account.cluster_name,
        namespace=account.namespace,
        service_account=account.name,
        role_arn=pod_role.role.arn,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[*depends_on, *pod_role.policies]),
    )
