"""cluster-autoscaler: the EC2 capacity under the autoscaling GPU pools. It adds a node to a pool's
managed node group when a slurmd pod cannot be scheduled, and removes a node once the operator has
drained and deleted its slurmd pod; it finds the groups by the tags EKS puts on their Auto Scaling
groups, and only changes a group's desired size within its min and max (minNodes, maxNodes).
Why this and not Karpenter: docs/decisions/node-autoscaler.md."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components._parts.helm import pinned_release
from components._parts.pod_identity import ServiceAccountRef, pod_identity
from components.cluster import ClusterContext
from model.facts import versions
from model.facts.contract import CORE_LABELS, SYSTEM_NAMESPACE

NAMESPACE = SYSTEM_NAMESPACE
# The chart's ServiceAccount is its fullname (templates/_helpers.tpl serviceAccountName, chart
# 9.59.0); fullnameOverride fixes it, so the Pod Identity association can name it.
SERVICE_ACCOUNT = "cluster-autoscaler"


def autoscaler_policy(cluster_name: str, region: str, account_id: str) -> str:
    """The recommended policy of CA's AWS README for auto-discovery (kubernetes/autoscaler
    cluster-autoscaler/cloudprovider/aws/README.md at cluster-autoscaler-1.36.1, "Full Cluster
    Autoscaler Features Policy (Recommended)"), with its writes narrowed as the README advises "by
    ... tag based conditionals": SetDesiredCapacity and TerminateInstanceInAutoScalingGroup only on
    Auto Scaling groups of this account and region that carry k8s.io/cluster-autoscaler/<cluster>
    = owned, the tag EKS puts on every managed node group's Auto Scaling group (EKS user guide,
    "Managed node groups": node groups are tagged for cluster-autoscaler auto-discovery;
    https://docs.aws.amazon.com/eks/latest/userguide/managed-node-groups.html). DescribeNodegroup
    is narrowed to this cluster's node groups (its resource type nodegroup:
    arn:${Partition}:eks:${Region}:${Account}:nodegroup/${ClusterName}/${NodegroupName}/${UUID},
    Service Authorization Reference, Amazon EKS). The reads take no resource ("*")."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "Discover",
                    "Effect": "Allow",
                    "Resource": "*",
                    "Action": [
                        "autoscaling:DescribeAutoScalingGroups",
                        "autoscaling:DescribeAutoScalingInstances",
                        "autoscaling:DescribeLaunchConfigurations",
                        "autoscaling:DescribeScalingActivities",
                        "ec2:DescribeImages",
                        "ec2:DescribeInstanceTypes",
                        "ec2:DescribeLaunchTemplateVersions",
                        "ec2:GetInstanceTypesFromInstanceRequirements",
                    ],
                },
                {
                    "Sid": "ReadNodeGroups",
                    "Effect": "Allow",
                    "Action": ["eks:DescribeNodegroup"],
                    "Resource": f"arn:aws:eks:{region}:{account_id}:nodegroup/{cluster_name}/*/*",
                },
                {
                    "Sid": "ScaleOwnGroups",
                    "Effect": "Allow",
                    "Action": [
                        "autoscaling:SetDesiredCapacity",
                        "autoscaling:TerminateInstanceInAutoScalingGroup",
                    ],
                    "Resource": f"arn:aws:autoscaling:{region}:{account_id}:autoScalingGroup:*:autoScalingGroupName/*",
                    "Condition": {
                        "StringEquals": {f"aws:ResourceTag/k8s.io/cluster-autoscaler/{cluster_name}": "owned"}
                    },
                },
            ],
        }
    )


def autoscaler_values(cluster_name: str, region: str, kubernetes_version: str) -> dict:
    """The values computed here, over charts-values/cluster-autoscaler.yaml."""
    tag = versions.cluster_autoscaler_tag(kubernetes_version)
    if tag is None:
        raise ValueError(
            f"kubernetesVersion {kubernetes_version}: no cluster-autoscaler release is pinned for it; "
            f"pinned: {', '.join(versions.CLUSTER_AUTOSCALER_FOR_KUBERNETES)}"
        )
    return {
        "fullnameOverride": SERVICE_ACCOUNT,
        # The chart's --node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,
        # k8s.io/cluster-autoscaler/<clusterName> (templates/deployment.yaml, autoDiscovery.tags).
        "autoDiscovery": {"clusterName": cluster_name},
        # Given, so CA never asks IMDS (one hop only: components/node_groups.py IMDS_HOP_LIMIT).
        "awsRegion": region,
        "image": {"repository": versions.CLUSTER_AUTOSCALER_IMAGE, "tag": tag},
        "nodeSelector": dict(CORE_LABELS),
    }


@dataclass(frozen=True)
class ClusterAutoscalerArgs:
    """Every field is required (no defaults)."""

    # The EKS cluster it is part of (ClusterContext), for its name, its region, its account, its
    # Kubernetes provider and what Pod Identity associations wait for.
    cluster: ClusterContext
    # The cluster's Kubernetes version (kubernetesVersion): CA's image is of its minor.
    kubernetes_version: str
    # What the release waits for: the core nodes it runs on (NodeGroups.core_ready) and the GPU
    # node groups whose tags it reads (NodeGroups.gpu_ready).
    depends_on: Sequence[pulumi.Resource]


class ClusterAutoscaler(pulumi.ComponentResource):
    release: k8s.helm.v3.Release  # cluster-autoscaler, in kube-system on the core nodes
    ready: list[pulumi.Resource]  # what waits for CA running: its release

    def __init__(self, name: str, args: ClusterAutoscalerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:scaling:ClusterAutoscaler", name, None, opts)
        self._name, self._args = name, args
        association = self._identity()
        self.release = pinned_release(
            f"{name}-release",
            versions.CLUSTER_AUTOSCALER,
            namespace=NAMESPACE,
            values=autoscaler_values(args.cluster.name, args.cluster.region, args.kubernetes_version),
            parent=self,
            provider=args.cluster.provider,
            depends_on=[*args.depends_on, association],
        )
        self.ready = [self.release]
        self.register_outputs({"release": self.release.status})

    def _identity(self) -> aws.eks.PodIdentityAssociation:
        name, args = self._name, self._args
        document = pulumi.Output.from_input(args.cluster.account_id).apply(
            lambda account: autoscaler_policy(args.cluster.name, args.cluster.region, account)
        )
        return pod_identity(
            name,
            ServiceAccountRef(args.cluster.name, NAMESPACE, SERVICE_ACCOUNT),
            document,
            self,
            [*args.depends_on, *args.cluster.pod_identity_ready],
        )
