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
from components.cluster import ClusterContext
from model.builders import load_balancer_controller
from model.facts import versions


@dataclass(frozen=True)
class LoadBalancerControllerArgs:
    """Every field is required (no defaults)."""

    # The EKS cluster it is part of (ClusterContext), for its name, its region, its account, its
    # Kubernetes provider and what Pod Identity associations wait for.
    cluster: ClusterContext
    # Given to the controller for the same reason as the region (Network.vpc_id).
    vpc_id: pulumi.Input[str]
    # The VPC's ARN (Network.vpc_arn): the only VPC whose security groups the controller's IAM
    # policy lets it create or change.
    vpc_arn: pulumi.Input[str]
    # What the controller waits for: the core nodes it runs on (NodeGroups.core_ready).
    depends_on: Sequence[pulumi.Resource]


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
        document = pulumi.Output.all(args.cluster.account_id, args.vpc_arn).apply(
            lambda a: policy(Scope(region=args.cluster.region, account_id=a[0], vpc_arn=a[1]))
        )
        # The association must name exactly the service account the chart creates, or the
        # controller runs without credentials and Services stay <pending>
        # (kubernetes-sigs/aws-load-balancer-controller issue #3850).
        return pod_identity(
            name,
            ServiceAccountRef(
                args.cluster.name,
                args.cluster.arn,
                load_balancer_controller.NAMESPACE,
                load_balancer_controller.SERVICE_ACCOUNT,
            ),
            document,
            self,
            [*args.depends_on, *args.cluster.pod_identity_ready],
        )

    def _release(self, association: aws.eks.PodIdentityAssociation) -> k8s.helm.v3.Release:
        args = self._args
        return pinned_release(
            f"{self._name}-release",
            versions.AWS_LOAD_BALANCER_CONTROLLER,
            namespace=load_balancer_controller.NAMESPACE,
            values=load_balancer_controller.release_values(
                args.cluster.name, args.cluster.region, args.vpc_id
            ),
            parent=self,
            provider=args.cluster.provider,
            depends_on=[*args.depends_on, association],
        )
