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
from model.builders import cluster_autoscaler
from model.facts import versions


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
            namespace=cluster_autoscaler.NAMESPACE,
            values=cluster_autoscaler.release_values(
                args.cluster.name, args.cluster.region, args.kubernetes_version
            ),
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
            ServiceAccountRef(
                args.cluster.name,
                args.cluster.arn,
                cluster_autoscaler.NAMESPACE,
                cluster_autoscaler.SERVICE_ACCOUNT,
            ),
            document,
            self,
            [*args.depends_on, *args.cluster.pod_identity_ready],
        )
