"""The AWS Load Balancer Controller: what turns the login Service into an internet-facing NLB,
and what deletes that NLB again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components._parts.helm import pinned_release
from components._parts.load_balancer_policy import Scope, policy
from components._parts.pod_identity import ServiceAccountRef, pod_identity
from model.facts import versions
from model.facts.contract import CORE_LABELS, SYSTEM_NAMESPACE

NAMESPACE = SYSTEM_NAMESPACE
SERVICE_ACCOUNT = "aws-load-balancer-controller"


@dataclass(frozen=True)
class LoadBalancerControllerArgs:
    """Every field is required (no defaults)."""

    # The EKS cluster the controller serves, and its Pod Identity association's cluster.
    cluster_name: str
    # Given to the controller so it never asks IMDS (node_groups.py, IMDS_HOP_LIMIT).
    region: str
    # Given to the controller for the same reason as the region (Network.vpc_id).
    vpc_id: pulumi.Input[str]
    # The VPC's ARN (Network.vpc_arn): the only VPC whose security groups the controller's IAM
    # policy lets it create or change.
    vpc_arn: pulumi.Input[str]
    # The account that owns the VPC (Network.account_id): the only one whose listeners it may change.
    account_id: pulumi.Input[str]
    # The cluster's Kubernetes provider (Cluster.provider).
    provider: k8s.Provider
    # What the controller waits for: the core nodes it runs on (NodeGroups.core_ready).
    depends_on: Sequence[pulumi.Resource]
    # What its Pod Identity association waits for besides: the Pod Identity agent
    # (Cluster.pod_identity_ready), which hands the controller its credentials and on destroy
    # must outlive it while it deletes the NLB.
    identity_depends_on: Sequence[pulumi.Resource]


class LoadBalancerController(pulumi.ComponentResource):
    release: k8s.helm.v3.Release  # the controller's Helm release, in kube-system
    # What a Service of type LoadBalancer waits for (and is deleted before, so the controller
    # still runs to delete its NLB): the controller's release.
    ready: list[pulumi.Resource]

    def __init__(
        self, name: str, args: LoadBalancerControllerArgs, opts: Optional[pulumi.ResourceOptions] = None
    ):
        super().__init__("slinky-eks:ingress:LoadBalancerController", name, None, opts)
        self._name, self._args = name, args
        association = self._identity()
        self.release = self._release(association)
        self.ready = [self.release]
        self.register_outputs({"release": self.release.status})

    def _identity(self) -> aws.eks.PodIdentityAssociation:
        name, args = self._name, self._args
        document = pulumi.Output.all(args.account_id, args.vpc_arn).apply(
            lambda a: policy(Scope(region=args.region, account_id=a[0], vpc_arn=a[1]))
        )
        # The association must name exactly the service account the chart creates, or the
        # controller runs without credentials and Services stay <pending>
        # (kubernetes-sigs/aws-load-balancer-controller issue #3850).
        return pod_identity(
            name,
            ServiceAccountRef(args.cluster_name, NAMESPACE, SERVICE_ACCOUNT),
            document,
            self,
            [*args.depends_on, *args.identity_depends_on],
        )

    def _release(self, association: aws.eks.PodIdentityAssociation) -> k8s.helm.v3.Release:
        args = self._args
        return pinned_release(
            f"{self._name}-release",
            versions.AWS_LOAD_BALANCER_CONTROLLER,
            namespace=NAMESPACE,
            values={
                "clusterName": args.cluster_name,
                "region": args.region,
                "vpcId": args.vpc_id,
                "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT},
                "nodeSelector": dict(CORE_LABELS),
            },
            parent=self,
            provider=args.provider,
            depends_on=[*args.depends_on, association],
        )
