"""The EKS control plane, its access entries, the add-ons nodes need to join, and the one
Kubernetes provider every in-cluster object uses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from components._parts.pod_identity import ServiceAccountRef, pod_identity
from model.facts import audit_logs
from model.facts.contract import CNI_POLICY, SYSTEM_NAMESPACE

ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
# The VPC CNI's DaemonSet, aws-node, runs as the service account aws-node in kube-system (EKS user
# guide, "Configure Amazon VPC CNI plugin to use IRSA", as for model/facts/contract.py CNI_POLICY);
# its role here is a role of its own.
CNI_SERVICE_ACCOUNT = "aws-node"


@dataclass(frozen=True)
class ClusterArgs:
    """Every field is required (no defaults)."""

    # The EKS cluster's name (clusterName): also names its IAM roles, tags and kubeconfig.
    cluster_name: str
    # The region the cluster is in (aws:region): with the name and account, the cluster's ARN.
    region: str
    # The account that owns the cluster (Network.account_id): with the name and region, its ARN.
    account_id: pulumi.Input[str]
    # The control plane's Kubernetes version (kubernetesVersion), e.g. "1.34".
    kubernetes_version: str
    # The VPC the control plane's interfaces go into (Network.vpc_id).
    vpc_id: pulumi.Input[str]
    # The cluster's two AZs' private subnets (Network.private_subnet_ids): the control plane's
    # interfaces and the core nodes'. Nodes may run in any subnet of the VPC, and subnets added
    # to a cluster later must lie in the AZs it was created with (EKS user guide, "View Amazon
    # EKS networking requirements for VPC and subnets":
    # https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html): a pool AZ added later
    # stays out of these and leaves the cluster as it is.
    private_subnet_ids: Sequence[pulumi.Input[str]]
    # The load balancer subnets, in the same two AZs (Network.public_subnet_ids).
    public_subnet_ids: Sequence[pulumi.Input[str]]
    # IAM roles made cluster admins through access entries, besides the deployer (adminRoleArns).
    admin_role_arns: Sequence[str]
    # Who may reach the public API endpoint (the deployer's and admins' addresses).
    api_allowed_cidrs: Sequence[str]
    # The control-plane log types sent to CloudWatch Logs (controlPlaneLogTypes; empty: none).
    log_types: Sequence[str]
    # How long their log group keeps them (controlPlaneLogRetentionDays).
    log_retention_days: int


@dataclass(frozen=True)
class ClusterContext:
    """The EKS cluster as the components that run in it or beside it see it: __main__.py builds
    it once from the Cluster and the Network and passes it to each of them as `cluster`."""

    # The EKS cluster's name (clusterName): tags, IAM scopes, Pod Identity associations.
    name: str
    # The stack's AWS region (aws:region): ARNs and the AWS SDKs' region in the pods.
    region: str
    # The account that owns the cluster's VPC (Network.account_id): IAM scopes and ARNs.
    account_id: pulumi.Input[str]
    # The cluster's ARN (Cluster.arn), known before the cluster exists: the Pod Identity roles'
    # trust names it.
    arn: pulumi.Input[str]
    # The one provider every in-cluster object uses (Cluster.provider).
    provider: k8s.Provider
    # The EKS-created cluster security group every node has (Cluster.security_group_id).
    security_group_id: pulumi.Input[str]
    # What a Pod Identity association waits for besides its component's own dependencies: the Pod
    # Identity agent add-on (Cluster.pod_identity_ready); on destroy the agent outlives them.
    pod_identity_ready: Sequence[pulumi.Resource]


class Cluster(pulumi.ComponentResource):
    name: str  # the EKS cluster's name
    # arn:aws:eks:<region>:<account>:cluster/<name>, the form of the Service Authorization
    # Reference's EKS `cluster` resource type
    # (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonelastickubernetesservice.html):
    # what the Pod Identity roles' trust names, known before the cluster exists.
    arn: pulumi.Output[str]
    eks: eks.Cluster  # the control plane and its vpc-cni/kube-proxy add-ons
    log_group: aws.cloudwatch.LogGroup  # where EKS writes the control-plane logs
    kubeconfig: pulumi.Output[str]  # admin kubeconfig (secret)
    security_group_id: pulumi.Output[str]  # the EKS-created cluster security group every node has
    provider: k8s.Provider  # the one provider every in-cluster object uses
    # What the node groups wait for: the control plane with its vpc-cni/kube-proxy add-ons, and
    # the VPC CNI's Pod Identity association, which must exist before aws-node's pods start on the
    # first nodes (EKS hands credentials only to pods created after it) and outlives the nodes.
    ready: list[pulumi.Resource]
    # What Pod Identity users wait for (their credentials come from its agent; on destroy it
    # outlives them): the eks-pod-identity-agent add-on.
    pod_identity_ready: list[pulumi.Resource]

    def __init__(self, name: str, args: ClusterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:cluster:Cluster", name, None, opts)
        self._name, self._args = name, args
        self.name = args.cluster_name
        self.arn = pulumi.Output.concat(
            "arn:aws:eks:", args.region, ":", args.account_id, ":cluster/", args.cluster_name
        )
        self.log_group = self._log_group()
        self.eks = self._control_plane()
        self.pod_identity_ready = [self._pod_identity_agent()]
        self.kubeconfig = pulumi.Output.secret(self.eks.kubeconfig_json)
        self.security_group_id = self.eks.cluster_security_group_id
        self.provider = self._kubernetes_provider()
        self.ready = [self.eks, self._vpc_cni_identity()]
        self.register_outputs({"kubeconfig": self.kubeconfig, "security_group_id": self.security_group_id})

    def _access_entries(self) -> dict[str, eks.AccessEntryArgs]:
        return {
            f"admin-{i}": eks.AccessEntryArgs(
                principal_arn=arn,
                access_policies={
                    "admin": eks.AccessPolicyAssociationArgs(
                        policy_arn=ADMIN_POLICY,
                        access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                    )
                },
            )
            for i, arn in enumerate(self._args.admin_role_arns)
        }

    def _log_group(self) -> aws.cloudwatch.LogGroup:
        # EKS writes to /aws/eks/<cluster>/cluster, creating the group with no retention (kept
        # forever) where it does not exist, and deleting the cluster leaves the group behind
        # (Amazon EKS user guide, "Send control plane logs to CloudWatch Logs":
        # https://docs.aws.amazon.com/eks/latest/userguide/control-plane-logs.html). Made here first,
        # it has a retention and goes with the stack. It stays while logging is off, so turning
        # the types off keeps what was already logged until it expires. It needs nothing, so it is
        # created while the VPC comes up, well before the control plane may start.
        return aws.cloudwatch.LogGroup(
            f"{self._name}-logs",
            name=audit_logs.control_plane_log_group(self._args.cluster_name),
            retention_in_days=self._args.log_retention_days,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _control_plane(self) -> eks.Cluster:
        args = self._args
        return eks.Cluster(
            f"{self._name}-eks",
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
            # API mode: the deployer is bootstrapped as admin, other admins are access entries
            # (docs/decisions/cluster-access-entries.md).
            authentication_mode=eks.AuthenticationMode.API,
            access_entries=self._access_entries(),
            skip_default_node_group=True,
            # Nodes keep the EKS-created cluster security group: it allows all traffic to and
            # from itself, which EFA requires
            # (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html, security group step;
            # https://docs.aws.amazon.com/eks/latest/userguide/sec-group-reqs.html).
            skip_default_security_groups=True,
            # EKS bootstraps vpc-cni, kube-proxy and CoreDNS before any node joins; the first two
            # become managed add-ons now, CoreDNS only once core nodes run it (node_groups.py;
            # docs/decisions/coredns-adoption.md).
            bootstrap_self_managed_addons=True,
            coredns_addon_options=eks.CoreDnsAddonOptionsArgs(enabled=False),
            vpc_cni_options=eks.VpcCniOptionsArgs(),
            kube_proxy_addon_options=eks.KubeProxyAddonOptionsArgs(enabled=True),
            enabled_cluster_log_types=list(args.log_types),
            # Created after its log group, so EKS finds the group there and does not make its own;
            # deleted before it, so nothing writes to the group once it is gone.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.log_group]),
        )

    def _pod_identity_agent(self) -> aws.eks.Addon:
        # Pod Identity gives the load balancer controller and the CSI drivers their AWS
        # credentials; its agent must run before those pods start. It is a DaemonSet, ACTIVE with
        # no nodes yet (like vpc-cni and kube-proxy), so it installs alongside the node groups
        # instead of in front of them: only the Pod Identity users wait for it, which also keeps
        # it running on destroy until they are gone
        # (https://docs.aws.amazon.com/eks/latest/userguide/pod-id-agent-setup.html).
        return aws.eks.Addon(
            f"{self._name}-pod-identity-agent",
            cluster_name=self._args.cluster_name,
            addon_name="eks-pod-identity-agent",
            resolve_conflicts_on_create="OVERWRITE",
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.eks]),
        )

    def _vpc_cni_identity(self) -> aws.eks.PodIdentityAssociation:
        # The association alone is enough: EKS injects the credentials into every pod of the
        # service account, whoever made the DaemonSet (EKS user guide, "IAM roles for Amazon EKS
        # add-ons": https://docs.aws.amazon.com/eks/latest/userguide/add-ons-iam.html). aws-node
        # starts on the host network beside the node's Pod Identity agent (also host network); if
        # it asks before the agent answers, the kubelet restarts it until the agent does.
        return pod_identity(
            f"{self._name}-vpc-cni",
            ServiceAccountRef(self._args.cluster_name, self.arn, SYSTEM_NAMESPACE, CNI_SERVICE_ACCOUNT),
            None,
            self,
            [self.eks],
            managed_policy_arns=[CNI_POLICY],
        )

    def _kubernetes_provider(self) -> k8s.Provider:
        return k8s.Provider(
            f"{self._name}-k8s", kubeconfig=self.eks.kubeconfig_json, opts=pulumi.ResourceOptions(parent=self)
        )
