"""The AWS Load Balancer Controller: what turns the login Service into an internet-facing NLB,
and what deletes that NLB again."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.helm import pinned_release
from components.load_balancer_policy import POLICY
from components.pod_identity import ServiceAccountRef, pod_identity_role
from model import versions
from model.contract import CORE_LABELS

NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "aws-load-balancer-controller"


@dataclass(frozen=True)
class LoadBalancerControllerArgs:
    cluster_name: str
    region: str
    vpc_id: pulumi.Input[str]
    provider: k8s.Provider
    system_nodes: Sequence[pulumi.Resource]
    # The Pod Identity agent: it hands the controller its credentials, and on destroy must
    # outlive it while it deletes the NLB.
    pod_identity_agent: pulumi.Resource


class LoadBalancerController(pulumi.ComponentResource):
    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: LoadBalancerControllerArgs,
                 opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:ingress:LoadBalancerController", name, None, opts)
        role = pod_identity_role(name, ServiceAccountRef(args.cluster_name, NAMESPACE, SERVICE_ACCOUNT), [],
                                 parent=self, inline_policy=POLICY)
        # The association must name exactly the service account the chart creates, or the
        # controller runs without credentials and Services stay <pending>
        # (kubernetes-sigs/aws-load-balancer-controller issue #3850;
        # https://docs.aws.amazon.com/eks/latest/userguide/pod-id-association.html).
        association = aws.eks.PodIdentityAssociation(
            f"{name}-identity", cluster_name=args.cluster_name, namespace=NAMESPACE,
            service_account=SERVICE_ACCOUNT, role_arn=role.arn,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*args.system_nodes, args.pod_identity_agent]))
        self.release = pinned_release(
            f"{name}-release", versions.AWS_LOAD_BALANCER_CONTROLLER, namespace=NAMESPACE,
            values={"clusterName": args.cluster_name, "region": args.region, "vpcId": args.vpc_id,
                    "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT},
                    "nodeSelector": dict(CORE_LABELS)},
            parent=self, provider=args.provider, depends_on=[*args.system_nodes, association])
        self.register_outputs({"release": self.release.status})
