"""The add-ons a cluster is shared by: the ones a platform team's EKS cluster usually runs already,
which this stack installs in a cluster of its own. Into an existing cluster (existingClusterName)
the stack installs none of them unless installSharedAddons lists it: a second cert-manager or load
balancer controller beside the cluster's own would fight it over the same webhooks, CRDs and
Services (cert-manager's installation guide: "only one installation of cert-manager per cluster",
https://cert-manager.io/docs/installation/helm/; KEDA: "only one metrics server per cluster",
https://keda.sh/docs/2.20/deploy/). The Kubernetes API cannot be asked at preview (the provider
needs the cluster's credentials before anything exists), so which of them a cluster runs is the
deployer's word, not a detection.

Each entry says what this stack needs of the cluster's own, and where a missing one fails loudly.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SharedAddon:
    key: str  # as installSharedAddons lists it
    what: str  # the add-on, in words
    # What the stack needs of the cluster's own when it installs none (the README's table says it).
    needs: str
    # Where the stack fails loudly when the cluster has none.
    fails: str
    # The EKS add-on's name where the stack installs it as one (CreateAddon), "" for a chart.
    eks_addon: str = ""


CERT_MANAGER = SharedAddon(
    "certManager",
    "cert-manager",
    "its cert-manager.io/v1 CRDs, webhook and CA injector: the Slinky operator's chart creates an "
    "Issuer and a Certificate for its webhook, whose configurations carry "
    "cert-manager.io/inject-ca-from (slurm-operator chart templates/cert-manager/pki.yaml, "
    "templates/webhook/webhook.yaml)",
    "the Slinky operator's Helm release: without the CRDs the chart's Certificate is refused "
    "(no matches for kind Certificate) and `up` fails there",
)
LOAD_BALANCER_CONTROLLER = SharedAddon(
    "loadBalancerController",
    "the AWS Load Balancer Controller",
    "a controller that reconciles Services of `loadBalancerClass: service.k8s.aws/nlb` (v2.4 or "
    "later) with the IAM to create NLBs in the cluster's VPC: the login Service's load balancer",
    "the login Service: Pulumi waits for its NLB's hostname (components/slurm_cluster.py, 1500 s) and "
    '`up` fails there naming the Service; `tools/verify.py` fails its check "login endpoint accepts '
    'SSH"',
)
NVIDIA_DEVICE_PLUGIN = SharedAddon(
    "devicePlugins",
    "the NVIDIA and EFA device plugins",
    "DaemonSets that advertise the GPUs and EFA interfaces as the extended resources the NodeSet "
    "requests (model/facts/contract.py) on the GPU nodes, tolerating their taint (the NVIDIA GPU "
    "Operator does the GPUs')",
    "the slurmd pods: they stay Pending on resources no node advertises, the Slurm readiness Job "
    "fails `up` naming the pool, and `tools/verify.py` fails its device plugin check",
)
KEDA = SharedAddon(
    "keda",
    "KEDA",
    "nothing: an autoscaling pool's scaler is KEDA's ScaledObject, which this stack installs with KEDA",
    "the config rules: an autoscaling pool in an existing cluster is refused unless keda is listed",
)
CLUSTER_AUTOSCALER = SharedAddon(
    "clusterAutoscaler",
    "cluster-autoscaler",
    "nothing: an autoscaling pool's node group is scaled by the cluster-autoscaler this stack installs",
    "the config rules: an autoscaling pool in an existing cluster is refused unless clusterAutoscaler is "
    "listed",
)
# The CSI drivers are EKS add-ons where the stack installs them (components/shared_storage.py). In
# an existing cluster one it installs is created with resolve_conflicts_on_create NONE (CreateAddon
# fails rather than taking over a driver installed otherwise, e.g. with Helm) and kept on destroy
# (preserve: DeleteAddon leaves the driver running): EKS API Reference, CreateAddon
# resolveConflicts and DeleteAddon preserve,
# https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAddon.html,
# https://docs.aws.amazon.com/eks/latest/APIReference/API_DeleteAddon.html.
EBS_CSI_DRIVER = SharedAddon(
    "ebsCsiDriver",
    "the Amazon EBS CSI driver",
    "a driver for the provisioner ebs.csi.aws.com whose controller may create, attach and delete "
    "encrypted gp3 volumes, and whose node plugin tolerates the core nodes' taint: the stack's gp3 "
    "StorageClass names it, and the Slurm controller's state volume is a gp3 claim",
    "the Slurm controller's state claim stays Pending, so its pod never starts and the Slurm readiness "
    "Job fails `up`; the preflight warns where the cluster has no EKS add-on of it",
    eks_addon="aws-ebs-csi-driver",
)
EFS_CSI_DRIVER = SharedAddon(
    "efsCsiDriver",
    "the Amazon EFS CSI driver",
    "a driver for efs.csi.aws.com whose node plugin runs on every node (the GPU nodes' taint "
    "tolerated) and mounts with TLS and IAM on the node's role: the shared file system is a static EFS volume",
    "every pod mounting the shared file system stays ContainerCreating and the Slurm readiness Job fails `up`; the "
    "preflight warns where the cluster has no EKS add-on of it",
    eks_addon="aws-efs-csi-driver",
)

ALL = (
    CERT_MANAGER,
    LOAD_BALANCER_CONTROLLER,
    NVIDIA_DEVICE_PLUGIN,
    KEDA,
    CLUSTER_AUTOSCALER,
    EBS_CSI_DRIVER,
    EFS_CSI_DRIVER,
)
KEYS = tuple(a.key for a in ALL)
# The ones the stack installs as EKS add-ons.
EKS_ADDONS = tuple(a for a in ALL if a.eks_addon)
# What an autoscaling pool's scaling needs installed by the stack (components/pool_autoscaling.py,
# components/cluster_autoscaler.py): the stack's own KEDA and cluster-autoscaler.
FOR_AUTOSCALING = (KEDA.key, CLUSTER_AUTOSCALER.key)


def installed(existing_cluster: str, listed: tuple[str, ...] | list[str]) -> frozenset[str]:
    """The shared add-ons the stack installs: every one in a cluster of its own, only those listed
    in an existing one."""
    return frozenset(KEYS) if not existing_cluster else frozenset(listed)
