"""An existing EKS cluster (existingClusterName) as the stack needs it, asked before any resource:
that it exists, is ACTIVE, runs a Kubernetes version Slinky supports and EKS still offers, sits in
vpcId, runs the EKS add-ons the stack's nodes and pods need (the VPC CNI, the Pod Identity agent),
and that the deployer is already its admin. Then the rules over the keys of that mode: vpcId and
privateSubnetIds are required, what the mode ignores is said, and an autoscaling pool needs the
stack's own KEDA and cluster-autoscaler.

Pure, as model/checks/preflight.py: the account is asked through the ClusterAccount protocol
(stack/account.py answers it with pulumi-aws invokes, devkit's offline account answers those), and
every finding is a Problem filed under the key it is about.
"""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass
from typing import Any, Mapping, Protocol, Sequence

from model.checks.gpu_pools import GpuPool
from model.checks.preflight import PermissionDenied
from model.checks.problems import ERROR, NOT_SET, WARNING, Problem, error, identify, warning
from model.facts import eks_versions, shared_addons, versions

KEY = "existingClusterName"

CLUSTER_EXISTS = identify("existing-cluster-exists", ERROR, "an EKS cluster of that name in the region", KEY)
CLUSTER_ACTIVE = identify("existing-cluster-active", ERROR, "a cluster whose status is ACTIVE", KEY)
CLUSTER_VERSION = identify(
    "existing-cluster-version",
    ERROR,
    "a cluster on a Kubernetes version Slinky supports and EKS offers",
    KEY,
)
CLUSTER_VPC = identify("existing-cluster-vpc", ERROR, "a cluster in vpcId", KEY, "vpcId")
CLUSTER_ADDONS = identify(
    "existing-cluster-addons", ERROR, "a cluster running the EKS add-ons the nodes and pods need", KEY
)
CLUSTER_ADDON_UNSEEN = identify(
    "existing-cluster-addon-unseen",
    WARNING,
    "a cluster running the VPC CNI and the Pod Identity agent as EKS add-ons",
    KEY,
)
CLUSTER_READABLE = identify("existing-cluster-readable", ERROR, "a cluster the deployer can describe", KEY)
DEPLOYER_ADMIN = identify(
    "deployer-cluster-admin", ERROR, "a deployer with an access entry in the existing cluster", KEY
)
DEPLOYER_ADMIN_UNREADABLE = identify(
    "deployer-cluster-admin-unreadable",
    WARNING,
    "a deployer whose cluster access can be read from AWS",
    KEY,
)
NEEDS_NETWORK = identify(
    "existing-cluster-needs-network",
    ERROR,
    "vpcId and privateSubnetIds set beside existingClusterName",
    "vpcId",
    "privateSubnetIds",
)
IGNORED_BESIDE_CLUSTER = identify(
    "ignored-beside-existing-cluster",
    WARNING,
    "no key set that an existing cluster makes meaningless",
    "kubernetesVersion",
    "apiAllowedCidrs",
    "adminRoleArns",
    "controlPlaneLogTypes",
)
SHARED_ADDONS_WITHOUT_CLUSTER = identify(
    "shared-addons-without-existing-cluster",
    WARNING,
    "installSharedAddons only beside existingClusterName",
    "installSharedAddons",
)
CLUSTER_REGION = identify(
    "cluster-region",
    ERROR,
    "aws:region set to the region of the cluster the Slurm layer goes into",
    "aws:region",
)
CSI_DRIVER_PRESENT = identify(
    "csi-driver-listed-but-present",
    ERROR,
    "a CSI driver listed in installSharedAddons only where the cluster has no EKS add-on of it",
    "installSharedAddons",
)
CSI_DRIVER_UNSEEN = identify(
    "csi-driver-unseen",
    WARNING,
    "a CSI driver the stack needs that the cluster runs as an EKS add-on or installSharedAddons lists",
    KEY,
    "installSharedAddons",
)
AUTOSCALING_NEEDS_OWN_SCALERS = identify(
    "autoscaling-needs-own-scalers",
    ERROR,
    "keda and clusterAutoscaler listed where a pool autoscales in an existing cluster",
    "installSharedAddons",
)

# The status a cluster takes requests in (EKS API Reference, Cluster: status CREATING | ACTIVE |
# DELETING | FAILED | UPDATING | PENDING, https://docs.aws.amazon.com/eks/latest/APIReference/API_Cluster.html).
ACTIVE = "ACTIVE"
# The access modes (EKS API Reference, AccessConfigResponse.authenticationMode: API |
# API_AND_CONFIG_MAP | CONFIG_MAP,
# https://docs.aws.amazon.com/eks/latest/APIReference/API_AccessConfigResponse.html).
CONFIG_MAP = "CONFIG_MAP"
API = "API"
# The EKS add-ons every node and pod of the stack needs in a cluster it does not own: the VPC CNI
# gives the pods their VPC addresses (and the EFA interfaces stay beside it), the Pod Identity agent
# the load balancer controller, the CSI drivers and the jobs their AWS credentials
# (https://docs.aws.amazon.com/eks/latest/userguide/pod-id-agent-setup.html). The stack changes
# neither: they are the cluster's.
REQUIRED_ADDONS = ("vpc-cni", "eks-pod-identity-agent")
REQUIRED_WHY = {
    "vpc-cni": "the nodes' pods get their VPC addresses from it; the stack's node role gets the CNI policy",
    "eks-pod-identity-agent": "the load balancer controller, the CSI drivers and the jobs get their AWS "
    "credentials from it",
}
# The EKS add-ons the stack installs in its own cluster that an existing one may run already (the
# CSI drivers: model/facts/shared_addons.py EKS_ADDONS): read so that the preflight can say which
# of them the cluster runs and which the stack must install or find installed otherwise.
DETECTED_ADDONS = tuple(a.eks_addon for a in shared_addons.EKS_ADDONS)


@dataclass(frozen=True)
class EksCluster:
    """The existing cluster as EKS DescribeCluster describes it (EKS API Reference, Cluster:
    https://docs.aws.amazon.com/eks/latest/APIReference/API_Cluster.html)."""

    name: str
    arn: str
    status: str  # status
    version: str  # version: the Kubernetes minor, e.g. "1.34"
    endpoint: str  # endpoint: the API server's URL
    certificate_authority: str  # certificateAuthority.data: the base64 PEM of the cluster's CA
    oidc_issuer: str  # identity.oidc.issuer
    security_group_id: str  # resourcesVpcConfig.clusterSecurityGroupId: the EKS-created group
    vpc_id: str  # resourcesVpcConfig.vpcId
    subnet_ids: tuple[str, ...]  # resourcesVpcConfig.subnetIds: the control plane's
    authentication_mode: str  # accessConfig.authenticationMode
    # The VPC CNI add-on's own role (DescribeAddon serviceAccountRoleArn, or its Pod Identity
    # association's), "" where aws-node runs on the node role's permissions (EKS user guide,
    # "Configure Amazon VPC CNI plugin to use IRSA":
    # https://docs.aws.amazon.com/eks/latest/userguide/cni-iam-role.html): then the stack's node
    # role needs the CNI policy for its nodes to get pod addresses.
    cni_role_arn: str = ""
    # The DETECTED_ADDONS the cluster runs (DescribeAddon found them).
    addons: frozenset[str] = frozenset()


@dataclass(frozen=True)
class EksAddon:
    """An EKS add-on as DescribeAddon describes it (EKS API Reference, Addon:
    https://docs.aws.amazon.com/eks/latest/APIReference/API_Addon.html)."""

    version: str  # addonVersion
    # serviceAccountRoleArn (IRSA), else the role of its Pod Identity association; "" for neither.
    role_arn: str


@dataclass(frozen=True)
class AccessEntry:
    """An access entry as EKS DescribeAccessEntry describes it (EKS API Reference, AccessEntry:
    https://docs.aws.amazon.com/eks/latest/APIReference/API_AccessEntry.html)."""

    principal_arn: str
    type: str  # STANDARD for a person's or a pipeline's role; EC2_LINUX etc. for nodes


class ClusterAccount(Protocol):
    """The questions asked of the deploying account about an existing cluster. A refused call
    raises PermissionDenied naming the IAM action it needed."""

    def eks_cluster(self, region: str, name: str) -> EksCluster | None:
        """The cluster, or None when EKS knows no cluster of that name in the region."""

    def eks_addon(self, region: str, cluster: str, addon: str) -> EksAddon | None:
        """The cluster's EKS add-on, or None when the cluster has no such add-on."""

    def access_entry(self, region: str, cluster: str, principal_arn: str) -> AccessEntry | None:
        """The cluster's access entry for the principal, or None when it has none."""

    def deployer_principal_arn(self) -> str:
        """The IAM principal an access entry names for the deployer: the role behind an assumed
        role's session, else the caller's own ARN (an IAM user)."""


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def check(
    account: ClusterAccount, region: str, name: str, vpc_id: str, day: datetime.date, out: list[Problem]
) -> EksCluster | None:
    """The cluster as DescribeCluster read it, when every check passed; None (with the problems
    in `out`) otherwise. vpcId "" (unset or refused) skips the VPC check."""
    try:
        cluster = account.eks_cluster(region, name)
    except PermissionDenied as denied:
        out.append(
            error(
                CLUSTER_READABLE,
                KEY,
                name,
                f"a cluster the deployer can describe (it lacks {denied.action}, which the program "
                "needs to read the cluster's endpoint, CA and network)",
            )
        )
        return None
    if cluster is None:
        out.append(
            error(
                CLUSTER_EXISTS,
                KEY,
                name,
                f"the name of an EKS cluster in {region}: EKS knows no cluster {name!r} there "
                "(DescribeCluster); list them with `aws eks list-clusters --region " + region + "`",
            )
        )
        return None
    found = len(out)
    if cluster.status != ACTIVE:
        out.append(
            error(
                CLUSTER_ACTIVE,
                KEY,
                name,
                f"a cluster whose status is {ACTIVE}: {name} is {cluster.status}; deploy once EKS "
                "reports it ACTIVE (`aws eks describe-cluster --name " + name + "`)",
            )
        )
    offered = eks_versions.offered(day)
    minimum = versions.SLINKY_MIN_KUBERNETES
    if cluster.version not in offered or _version_tuple(cluster.version) < _version_tuple(minimum):
        allowed = [v for v in offered if _version_tuple(v) >= _version_tuple(minimum)]
        out.append(
            error(
                CLUSTER_VERSION,
                KEY,
                name,
                f"a cluster on a Kubernetes version Slinky supports (>= {minimum}) and EKS offers "
                f"({', '.join(allowed)}): {name} runs {cluster.version}; upgrade its control plane first",
            )
        )
    if vpc_id and cluster.vpc_id != vpc_id:
        out.append(
            error(
                CLUSTER_VPC,
                KEY,
                name,
                f"a cluster in vpcId {vpc_id}: {name} is in {cluster.vpc_id}; set vpcId to "
                f"{cluster.vpc_id} and privateSubnetIds to subnets of it, since the nodes must reach "
                "the control plane's interfaces and share the cluster security group",
            )
        )
    missing, addons = [], {}
    for addon in REQUIRED_ADDONS + DETECTED_ADDONS:
        try:
            addons[addon] = account.eks_addon(region, name, addon)
            if addons[addon] is None and addon in REQUIRED_ADDONS:
                missing.append(addon)
        except PermissionDenied as denied:
            out.append(
                error(
                    CLUSTER_ADDONS,
                    KEY,
                    name,
                    f"a cluster whose add-ons the deployer can describe (it lacks {denied.action})",
                )
            )
            break
    for addon in missing:
        # EKS installs the VPC CNI self-managed on a cluster not made in the console, and the Pod
        # Identity agent may be installed with Helm: neither is then an EKS add-on, and AWS cannot
        # be asked about it (EKS user guide, "Amazon EKS add-ons": EKS "automatically installs
        # self-managed add-ons such as the Amazon VPC CNI plugin for Kubernetes",
        # https://docs.aws.amazon.com/eks/latest/userguide/eks-add-ons.html). A self-managed CNI is
        # taken to run on the node role (cni_role_arn ""), which then gets the CNI policy.
        out.append(
            warning(
                CLUSTER_ADDON_UNSEEN,
                KEY,
                name,
                f"{name} has no EKS add-on {addon} (DescribeAddon): the stack takes it to run "
                f"self-managed, which it needs ({REQUIRED_WHY[addon]}) and does not install in a "
                "cluster it does not own; where the cluster has none, add it with `aws eks "
                f"create-addon --cluster-name {name} --addon-name {addon}`",
            )
        )
    deployer_is_admin(account, region, cluster, out)
    if any(p.is_error for p in out[found:]):
        return None
    return dataclasses.replace(
        cluster,
        cni_role_arn=addons["vpc-cni"].role_arn if addons.get("vpc-cni") else "",
        addons=frozenset(a for a in DETECTED_ADDONS if addons.get(a) is not None),
    )


def cluster_region(arn: str, region: str) -> list[Problem]:
    """The Slurm layer's settings against the cluster it is given: its ARN
    (arn:<partition>:eks:<region>:<account>:cluster/<name>, Service Authorization Reference,
    Amazon EKS resource types:
    https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonelastickubernetesservice.html)
    names the region the cluster is in, and the layer's preflight, image build and Pod Identity
    scopes use aws:region; a cluster elsewhere would get nodes, a file system and a database the
    preflight never checked, in a region its nodes cannot reach."""
    parts = arn.split(":")
    in_region = parts[3] if len(parts) > 5 and parts[2] == "eks" else ""
    if in_region == region:
        return []
    return [
        error(
            CLUSTER_REGION,
            "aws:region",
            region,
            f"the region of the cluster the Slurm layer is given: its ARN {arn} names "
            f"{in_region or 'no region'}; set aws:region to it (the layer reads aws:region and "
            "aws:profile from the stack's config, not from the AWS provider its caller passes)",
        )
    ]


def csi_drivers(cluster: EksCluster, listed: Sequence[str], out: list[Problem]) -> None:
    """The CSI drivers the stack needs (/shared on EFS, the Slurm state volumes on gp3) in a cluster
    it does not own. One listed where the cluster runs its EKS add-on already is refused: CreateAddon
    would fail on the add-on that exists, and the stack must not own the cluster's. One neither
    listed nor an EKS add-on is a warning, not a refusal: a driver installed with Helm or a manifest
    is no EKS add-on, and AWS cannot be asked about it (the Kubernetes API needs the cluster's
    credentials), so the stack uses it and `up` fails at the first volume where there is none
    (docs/existing-cluster.md, "The CSI drivers")."""
    for addon in shared_addons.EKS_ADDONS:
        present = addon.eks_addon in cluster.addons
        if present and addon.key in listed:
            out.append(
                error(
                    CSI_DRIVER_PRESENT,
                    "installSharedAddons",
                    list(listed),
                    f"a list without {addon.key}: {cluster.name} runs the EKS add-on {addon.eks_addon} "
                    "already (DescribeAddon), which the stack uses as it is; remove it with `pulumi "
                    "config set --path 'installSharedAddons[...]'`",
                )
            )
        elif not present and addon.key not in listed:
            out.append(
                warning(
                    CSI_DRIVER_UNSEEN,
                    KEY,
                    cluster.name,
                    f"{cluster.name} has no EKS add-on {addon.eks_addon} (DescribeAddon) and "
                    f"installSharedAddons does not list {addon.key}: the stack needs {addon.what} "
                    f"({addon.needs}) and installs none. Where the cluster runs it otherwise (Helm, a "
                    f"manifest) nothing is to be done; else list {addon.key}, or `up` fails: {addon.fails}",
                )
            )


def deployer_is_admin(account: ClusterAccount, region: str, cluster: EksCluster, out: list[Problem]) -> None:
    """The deployer must already be the cluster's admin: the stack installs cluster-wide objects
    (CRDs, ClusterRoles, webhooks) through a provider that authenticates as the deployer. With
    access entries (API, API_AND_CONFIG_MAP) its entry is read (DescribeAccessEntry); pulumi-aws
    7.51.1 has no data source for ListAssociatedAccessPolicies (its aws.eks.get_access_policies is
    ListAccessPolicies, the catalogue of policies), so the entry's presence is what is checked, and
    a missing admin policy shows as the first Kubernetes object refused. With CONFIG_MAP only, the
    aws-auth ConfigMap is inside the cluster, which AWS cannot be asked about: a warning says so."""
    if cluster.authentication_mode == CONFIG_MAP:
        out.append(
            warning(
                DEPLOYER_ADMIN_UNREADABLE,
                KEY,
                cluster.name,
                f"{cluster.name} authenticates through the aws-auth ConfigMap only (CONFIG_MAP), which "
                "AWS cannot be asked about: the deployer must be mapped there to system:masters, or "
                "`up` fails at the first Kubernetes object (switch the cluster to API_AND_CONFIG_MAP "
                "to have this checked)",
            )
        )
        return
    try:
        principal = account.deployer_principal_arn()
        entry = None
        for arn in dict.fromkeys((principal, without_path(principal))):
            entry = entry or account.access_entry(region, cluster.name, arn)
    except PermissionDenied as denied:
        out.append(
            warning(
                DEPLOYER_ADMIN_UNREADABLE,
                KEY,
                cluster.name,
                f"preflight: could not check that the deployer is an admin of {cluster.name}: the "
                f"deployer lacks {denied.action}; the check is skipped",
            )
        )
        return
    if entry is None and cluster.authentication_mode != API:
        # API_AND_CONFIG_MAP: the deployer may be an admin through aws-auth instead, which AWS
        # cannot be asked about (EKS user guide, "Change authentication mode to use access
        # entries": both sources are read in that mode,
        # https://docs.aws.amazon.com/eks/latest/userguide/setting-up-access-entries.html).
        out.append(
            warning(
                DEPLOYER_ADMIN_UNREADABLE,
                KEY,
                cluster.name,
                f"{cluster.name} has no access entry for {principal}, and it also reads the aws-auth "
                "ConfigMap (API_AND_CONFIG_MAP), which AWS cannot be asked about: the deployer must "
                "be mapped there to system:masters, or `up` fails at the first Kubernetes object "
                f"(or give it an access entry: `aws eks create-access-entry --cluster-name "
                f"{cluster.name} --principal-arn {principal}` with the AmazonEKSClusterAdminPolicy)",
            )
        )
        return
    if entry is None or entry.type != "STANDARD":
        out.append(
            error(
                DEPLOYER_ADMIN,
                KEY,
                cluster.name,
                f"a cluster the deployer is an admin of: {cluster.name} has no access entry for "
                f"{principal}; ask its owner for one with the AmazonEKSClusterAdminPolicy (`aws eks "
                f"create-access-entry --cluster-name {cluster.name} --principal-arn {principal}` and "
                "`aws eks associate-access-policy ... --access-scope type=cluster`)",
            )
        )


def without_path(principal_arn: str) -> str:
    """A role's ARN without its path: an access entry may name a role either way (EKS user guide,
    "Create access entries": "If the ARN is for an IAM role, it can include a path",
    https://docs.aws.amazon.com/eks/latest/userguide/creating-access-entries.html), so the
    deployer's is looked up under both; any other ARN as it is."""
    head, _, resource = principal_arn.partition(":role/")
    return f"{head}:role/{resource.rsplit('/', 1)[-1]}" if resource else principal_arn


def mode_rules(
    values: Mapping[str, Any],
    raw: Mapping[str, str | None],
    defaults: Mapping[str, Any],
    pools: Sequence[GpuPool],
) -> list[Problem]:
    """The rules over the keys beside existingClusterName: the network keys it needs, the keys it
    makes meaningless (set to other than their default: the CLI hands the program Pulumi.yaml's
    default for an unset key), installSharedAddons without it, and an autoscaling pool without the
    stack's own scalers."""
    name = values.get(KEY) or ""
    listed = values.get("installSharedAddons")
    listed = listed if isinstance(listed, list) else []
    if not name:
        if listed:
            return [
                warning(
                    SHARED_ADDONS_WITHOUT_CLUSTER,
                    "installSharedAddons",
                    listed,
                    "installSharedAddons is ignored without existingClusterName: the stack installs "
                    "every shared add-on in a cluster of its own",
                )
            ]
        return []
    out = [
        error(
            NEEDS_NETWORK,
            key,
            NOT_SET,
            f"required beside existingClusterName: the node groups go into the given private "
            f"subnets of the cluster's VPC (set {key} to the {what})",
        )
        for key, what in (
            ("vpcId", "cluster's VPC id"),
            ("privateSubnetIds", "private subnet ids for the nodes"),
        )
        if not values.get(key)
    ]
    for key, why in (
        ("kubernetesVersion", "the cluster's own version is used; upgrade it with its owner's tools"),
        ("apiAllowedCidrs", "the cluster's endpoint access is its owner's"),
        ("adminRoleArns", "the stack grants no one access to a cluster it does not own"),
        ("controlPlaneLogTypes", "the control plane's logging is its owner's"),
    ):
        if raw.get(key) is not None and values.get(key) != defaults.get(key):
            out.append(
                warning(
                    IGNORED_BESIDE_CLUSTER,
                    key,
                    raw[key],
                    f"{key} is ignored beside existingClusterName: {why}; remove it with "
                    f"`pulumi config rm {key}`",
                )
            )
    scaled = [p for p in pools if p.autoscales]
    lacking = [a for a in shared_addons.FOR_AUTOSCALING if a not in listed]
    if scaled and lacking:
        out.append(
            error(
                AUTOSCALING_NEEDS_OWN_SCALERS,
                "installSharedAddons",
                listed,
                f"a list with {' and '.join(lacking)}, since {scaled[0].key('maxNodes')} makes pool "
                f"{scaled[0].name} autoscale and its scaling is the stack's own KEDA and "
                "cluster-autoscaler (install them only where the cluster runs none), or pools of a "
                "fixed size",
            )
        )
    return out
