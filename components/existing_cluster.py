"""An EKS cluster the stack does not own (existingClusterName): read, never created or deleted.
It exposes what __main__.py reads of components/cluster.py's Cluster, from the cluster as
DescribeCluster described it at preview (model/checks/existing_cluster.py, which also refused a
cluster that is missing, not ACTIVE, on an unsupported version, in another VPC, without the
vpc-cni and eks-pod-identity-agent add-ons, or whose admin the deployer is not).

What the stack leaves alone in it: the control plane, its access entries and aws-auth, and every
EKS add-on (vpc-cni, kube-proxy, CoreDNS, the Pod Identity agent, the node monitoring agent): they
are the cluster owner's, and an add-on the stack adopted would be deleted by its `destroy`. The
node role's access entry is the stack's (components/node_groups.py, node_access_entry): EKS would
create one of type EC2_LINUX for a managed node group's role but never delete it; with aws-auth
only (CONFIG_MAP) EKS maps the role there (EKS user guide, "Create access entries":
https://docs.aws.amazon.com/eks/latest/userguide/creating-access-entries.html; "Simplify node
lifecycle with managed node groups":
https://docs.aws.amazon.com/eks/latest/userguide/managed-node-groups.html). This component
creates nothing but the Kubernetes provider.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from model.builders.kubeconfig import exec_kubeconfig
from model.checks.existing_cluster import EksCluster


@dataclass(frozen=True)
class ExistingClusterArgs:
    """Every field is required (no defaults)."""

    # The cluster as DescribeCluster described it (StackConfig.existing_cluster).
    cluster: EksCluster
    # The region the cluster is in (aws:region): `aws eks get-token` asks there.
    region: str
    # The stack's aws:profile (None without one): `aws eks get-token` signs with it.
    aws_profile: Optional[str]


class ExistingCluster(pulumi.ComponentResource):
    name: str  # the EKS cluster's name (existingClusterName)
    arn: pulumi.Output[str]  # as DescribeCluster gives it: the Pod Identity roles' trust names it
    kubeconfig: pulumi.Output[str]  # the exec kubeconfig (secret, as Cluster's)
    security_group_id: pulumi.Output[str]  # the EKS-created cluster security group
    provider: k8s.Provider  # the one provider every in-cluster object uses
    # What the node groups wait for: nothing of the stack's; the cluster and its VPC CNI are there.
    ready: list[pulumi.Resource]
    # What Pod Identity users wait for: nothing of the stack's; the cluster's agent is running.
    pod_identity_ready: list[pulumi.Resource]

    def __init__(self, name: str, args: ExistingClusterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:cluster:ExistingCluster", name, None, opts)
        cluster = args.cluster
        self.name = cluster.name
        self.arn = pulumi.Output.from_input(cluster.arn)
        self.security_group_id = pulumi.Output.from_input(cluster.security_group_id)
        document = exec_kubeconfig(
            cluster.name, args.region, cluster.endpoint, cluster.certificate_authority, args.aws_profile
        )
        self.kubeconfig = pulumi.Output.secret(document)
        self.provider = self._kubernetes_provider(name)
        self.ready = []
        self.pod_identity_ready = []
        self.register_outputs({"kubeconfig": self.kubeconfig, "security_group_id": self.security_group_id})

    def _kubernetes_provider(self, name: str) -> k8s.Provider:
        return k8s.Provider(
            f"{name}-k8s", kubeconfig=self.kubeconfig, opts=pulumi.ResourceOptions(parent=self)
        )
