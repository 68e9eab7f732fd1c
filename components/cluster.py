"""The EKS control plane, its access entries, the add-ons nodes need to join, and the one
Kubernetes provider every in-cluster object uses."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


@dataclass(frozen=True)
class ClusterArgs:
    cluster_name: str
    kubernetes_version: str
    vpc_id: pulumi.Input[str]
    private_subnet_ids: Sequence[pulumi.Input[str]]
    public_subnet_ids: Sequence[pulumi.Input[str]]
    admin_role_arns: Sequence[str]
    # Who may reach the public API endpoint (the deployer's and admins' addresses).
    api_allowed_cidrs: Sequence[str]


class Cluster(pulumi.ComponentResource):
    name: str
    kubeconfig: pulumi.Output[str]
    security_group_id: pulumi.Output[str]
    provider: k8s.Provider
    ready: list[pulumi.Resource]
    pod_identity_agent: aws.eks.Addon

    def __init__(self, name: str, args: ClusterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:cluster:Cluster", name, None, opts)
        self.name = args.cluster_name
        access = {
            f"admin-{i}": eks.AccessEntryArgs(
                principal_arn=arn,
                access_policies={"admin": eks.AccessPolicyAssociationArgs(
                    policy_arn=ADMIN_POLICY,
                    access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"))})
            for i, arn in enumerate(args.admin_role_arns)
        }
        self.eks = eks.Cluster(
            f"{name}-eks",
            name=args.cluster_name,
            version=args.kubernetes_version,
            vpc_id=args.vpc_id,
            private_subnet_ids=args.private_subnet_ids,
            public_subnet_ids=args.public_subnet_ids,
            node_associate_public_ip_address=False,
            # Public for `pulumi up` and kubectl, from api_allowed_cidrs only; private for the
            # nodes, which never leave the VPC to reach the control plane.
            endpoint_public_access=True,
            public_access_cidrs=list(args.api_allowed_cidrs),
            endpoint_private_access=True,
            # API mode: no aws-auth ConfigMap; the creator (the deployer) is bootstrapped as
            # cluster admin and further admins are access entries (pulumi/pulumi-eks v4.4.0
            # docs/authentication-mode-migration.md; nodejs/eks/cluster/cluster.ts).
            authentication_mode=eks.AuthenticationMode.API,
            access_entries=access,
            skip_default_node_group=True,
            # Nodes keep the EKS-created cluster security group: it allows all traffic to and
            # from itself, which EFA requires
            # (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html, security group step;
            # https://docs.aws.amazon.com/eks/latest/userguide/sec-group-reqs.html).
            skip_default_security_groups=True,
            # EKS installs vpc-cni, kube-proxy and CoreDNS itself at creation, so all are in place
            # before any node joins. vpc-cni and kube-proxy become managed add-ons right away
            # (DaemonSets: fine without nodes). The CoreDNS add-on is a Deployment: created before
            # nodes it sits DEGRADED until the create times out (pulumi-eks #1819, #1525), so
            # node_groups.py adopts the running CoreDNS as a managed add-on once core nodes are up.
            bootstrap_self_managed_addons=True,
            coredns_addon_options=eks.CoreDnsAddonOptionsArgs(enabled=False),
            vpc_cni_options=eks.VpcCniOptionsArgs(),
            kube_proxy_addon_options=eks.KubeProxyAddonOptionsArgs(enabled=True),
            opts=pulumi.ResourceOptions(parent=self),
        )
        # Pod Identity gives the load balancer controller and the CSI drivers their AWS
        # credentials; its agent must run before those pods start. It is a DaemonSet, ACTIVE with
        # no nodes yet (like vpc-cni and kube-proxy), so it installs alongside the node groups
        # instead of in front of them: only the Pod Identity users wait for it, which also keeps
        # it running on destroy until they are gone
        # (https://docs.aws.amazon.com/eks/latest/userguide/pod-id-agent-setup.html).
        self.pod_identity_agent = aws.eks.Addon(
            f"{name}-pod-identity-agent", cluster_name=args.cluster_name,
            addon_name="eks-pod-identity-agent", resolve_conflicts_on_create="OVERWRITE",
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.eks]))
        self.kubeconfig = pulumi.Output.secret(self.eks.kubeconfig_json)
        self.security_group_id = self.eks.cluster_security_group_id
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=self.eks.kubeconfig_json,
                                     opts=pulumi.ResourceOptions(parent=self))
        # What node groups wait for: the control plane with its vpc-cni/kube-proxy add-ons.
        self.ready = [self.eks]
        self.register_outputs({"kubeconfig": self.kubeconfig,
                               "security_group_id": self.security_group_id})
