"""The cluster contract: the names, labels and taint that the node groups, the charts' values,
the in-cluster objects and tools/verify.py must agree on. Each fact is written once here."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Namespaces: the Slurm release's, and the Slinky operator's (its CRDs' webhook lives there).
SLURM_NAMESPACE = "slurm"
OPERATOR_NAMESPACE = "slinky"
# Where EKS installs its add-ons (the CSI drivers' service accounts are there), and where the
# program installs the cluster-wide services: the device plugins, the load balancer controller.
SYSTEM_NAMESPACE = "kube-system"

# The VPC CNI's permissions (any network interface of the account), on a role of its own rather
# than the node role, as the EKS user guide recommends ("Configure Amazon VPC CNI plugin to use
# IRSA": "We recommend that you assign it to a separate role"; the plugin "also supports Amazon EKS
# Pod Identities": https://docs.aws.amazon.com/eks/latest/userguide/cni-iam-role.html). Its
# DaemonSet, aws-node, runs as the service account aws-node in kube-system (the same page).
CNI_POLICY = "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy"

# The extended resources a GPU node advertises and slurmd requests: NVIDIA's device plugin
# advertises the GPUs (Kubernetes docs, "Schedule GPUs":
# https://kubernetes.io/docs/tasks/manage-gpus/scheduling-gpus/), the EFA device plugin the EFA
# interfaces (aws/eks-charts stable/aws-efa-k8s-device-plugin/templates/NOTES.txt, chart v0.5.30).
GPU_RESOURCE = "nvidia.com/gpu"
EFA_RESOURCE = "vpc.amazonaws.com/efa"

# Node labels: every core node and every GPU node carries one of these (the node groups set them,
# every nodeSelector reads them). A GPU pool's own label is in gpu_pools.py.
CORE_LABELS = {"role": "core"}
GPU_LABELS = {"role": "gpu"}
# In a cluster the stack does not own, `role` is no one's in particular: the stack's nodes also
# carry this label, valued with clusterName, and its core nodes a taint of it
# (model/builders/stack_placement.py).
STACK_LABEL = "slinky-eks/cluster"


@dataclass(frozen=True)
class Taint:
    """A node taint, its effect as Kubernetes spells it (NoSchedule); the EKS node group form and
    the toleration that admits a pod are derived from it."""

    key: str
    value: str
    effect: str

    @property
    def node_group(self) -> dict[str, str]:
        # The EKS API spells effects NO_SCHEDULE, NO_EXECUTE, PREFER_NO_SCHEDULE
        # (https://docs.aws.amazon.com/eks/latest/APIReference/API_Taint.html).
        return {
            "key": self.key,
            "value": self.value,
            "effect": re.sub(r"(?<!^)(?=[A-Z])", "_", self.effect).upper(),
        }

    @property
    def toleration(self) -> dict[str, str]:
        # Exists tolerates the key whatever its value
        # (https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/).
        return {"key": self.key, "operator": "Exists", "effect": self.effect}


# Keeps everything but GPU work off the GPU nodes; every pod meant for them (slurmd, the device
# plugins, the image pre-pull) carries its toleration. Its key is the GPU resource's name, which
# the NVIDIA device plugin's chart tolerates by default (NVIDIA/k8s-device-plugin v0.20.0
# deployments/helm/nvidia-device-plugin/values.yaml, tolerations).
GPU_TAINT = Taint(GPU_RESOURCE, "true", "NoSchedule")
GPU_TOLERATION = GPU_TAINT.toleration

# Storage: the default StorageClass (the controller's state volume binds to it).
GP3 = "gp3"
# Services opt in to the load balancer controller by this class; it ignores every other
# LoadBalancer Service (aws-load-balancer-controller v2.17 docs, guide/service/nlb,
# https://kubernetes-sigs.github.io/aws-load-balancer-controller/v2.17/guide/service/nlb/).
NLB_CLASS = "service.k8s.aws/nlb"

# The search path every Prolog and Epilog of the release sets first: Slurm runs them with none
# (https://slurm.schedmd.com/prolog_epilog.html: "for security reasons"), and a shell then falls back
# to a built-in path that starts with /usr/local; only the system's own directories
# (model/builders/identities.py, model/builders/containers.py).
SCRIPT_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"

# The Slurm release and its objects.
RELEASE = "slurm"  # fixed: object names and ClusterName derive from it
LOGINSET = "slinky"
# What the operator names the LoginSet (<release>-login-<loginset>); its pods carry it as
# app.kubernetes.io/instance (the operator's login selector labels).
LOGINSET_OBJECT = f"{RELEASE}-login-{LOGINSET}"
LOGIN_SERVICE = "slurm-login-nlb"
SLURM_KEY_SECRET = "slurm-auth-slurm"
JWT_KEY_SECRET = "slurm-auth-jwt"
STATE_CLAIM = "slurm-controller-state"
# The named users' passwd/group entries and their SSH keys (model/builders/identities.py), read by the
# login, controller and slurmd pods.
IDENTITIES_CONFIGMAP = "slinky-eks-identities"
SSH_KEYS_CONFIGMAP = "slinky-eks-ssh-keys"
# The node health check (cluster_programs/node_health.py) and each pool's expectations, which
# every slurmd pod mounts at HEALTH_DIR (model/builders/node_health.py).
HEALTH_CONFIGMAP = "slinky-eks-node-health"
HEALTH_DIR = "/etc/slinky-eks/health"

# The accounting database as slurmdbd reaches it (components/accounting_database.py makes it, the
# release's accounting.storageConfig names it): the chart's default database (slurm chart 1.2.1
# values.yaml accounting.storageConfig), slurmdbd's own user with every privilege on it and no
# other, MariaDB's port, and the Secret the program writes that user's generated password into
# (storageConfig.passwordKeyRef).
ACCOUNTING_DATABASE = "slurm_acct_db"
ACCOUNTING_USER = "slurmdbd"
ACCOUNTING_PORT = 3306
ACCOUNTING_PASSWORD_SECRET = "slurm-accounting-database"
ACCOUNTING_PASSWORD_KEY = "password"
# The RDS master user, which only the database user Job uses (to create ACCOUNTING_USER), and the
# Secret with its password, which only that Job mounts. "slurm" since the first release, when
# slurmdbd used it: RDS cannot rename a master user, and a new name would replace the instance.
ACCOUNTING_ADMIN_USER = "slurm"
ACCOUNTING_ADMIN_SECRET = "slurm-accounting-admin"
# The RDS CA bundle of the stack's region (components/accounting_database.py fetches it at deploy
# time), as a ConfigMap mounted read-only where slurmdbd's StorageParameters and the Job read it.
ACCOUNTING_CA_CONFIGMAP = "slurm-accounting-ca"
ACCOUNTING_CA_KEY = "rds-ca-bundle.pem"
ACCOUNTING_CA_DIR = "/etc/slinky-eks/accounting-ca"

# The shared volume (EFS: components/shared_storage.py) where every Slurm pod and the staging Job
# mount it, and the layout on it: the staged jobs/ and cluster.env (components/job_staging.py),
# root's and no user's; and each user's own work directory, SHARED_WORK/<user>, made for root and
# every named user by the staging Job (theirs, mode 0700), where their jobs write everything: the
# #SBATCH --output (%u), the rank logs, the Hugging Face cache, the nccl-tests build and the
# fine-tune's adapters (jobs/lib/job-env.sh WORK_DIR; why per user: docs/decisions/job-work-dirs.md).
# The files under jobs/ are shipped as they are and spell these paths themselves;
# tests/repo/test_escaped_facts.py holds them to this list.
SHARED_MOUNT = "/shared"
SHARED_JOBS = f"{SHARED_MOUNT}/jobs"
SHARED_WORK = f"{SHARED_MOUNT}/work"
SHARED_LAYOUT = (SHARED_MOUNT, SHARED_JOBS, SHARED_WORK)
# The efs-utils mount helper's options on every mount of /shared (TLS is the EFS CSI driver's
# default; `iam` signs each mount as the node: components/shared_storage.py). The driver reads them
# only when it mounts the volume for a new pod, so the pods that mount /shared carry them in their
# template (SHARED_MOUNT_OPTIONS_ENV) and roll when they change.
SHARED_MOUNT_OPTIONS = ("iam",)
SHARED_MOUNT_OPTIONS_ENV = "SLINKY_EKS_SHARED_MOUNT_OPTIONS"

# Pod name prefixes the operator uses for release `slurm` (SlinkyProject/slurm-operator v1.2.1
# helm/slurm/templates/{controller,restapi,loginset,nodeset}/_helpers.tpl: <release>-<role>, then
# the set's name).
CONTROLLER_POD_PREFIX = f"{RELEASE}-controller-"
RESTAPI_POD_PREFIX = f"{RELEASE}-restapi-"
LOGIN_POD_PREFIX = f"{LOGINSET_OBJECT}-"


# The controller is a StatefulSet <release>-controller of one pod; its slurmctld container has
# scontrol (the operator's reconfigure sidecar runs it from the same image: slurm-operator v1.2.1
# internal/builder/controllerbuilder/controller_app.go, scripts/reconfigure.sh).
CONTROLLER_POD = f"{RELEASE}-controller-0"
CONTROLLER_CONTAINER = "slurmctld"
# Slurm's ClusterName, which the accounting records are kept under: the values set no clusterName,
# so the operator names it <namespace>_<Controller name> (SlinkyProject/slurm-operator v1.2.1
# api/v1beta1/controller_keys.go ClusterName; the chart names the Controller after the release).
SLURM_CLUSTER = f"{SLURM_NAMESPACE}_{RELEASE}"


def nodeset_object(nodeset: str) -> str:
    """The chart names a NodeSet <release>-worker-<key> (helm/slurm/templates/nodeset/nodeset-cr.yaml,
    chart 1.2.1)."""
    return f"{RELEASE}-worker-{nodeset}"


def worker_pod_prefix(nodeset: str) -> str:
    return f"{nodeset_object(nodeset)}-"


def slurm_node_prefix(nodeset: str) -> str:
    """The NodeSet's pods get the hostname (= Slurm node name) prefix <key>- (nodeset-cr.yaml)."""
    return f"{nodeset}-"


def label_selector(labels: dict[str, str]) -> str:
    """The Kubernetes label selector (k=v,...) that matches nodes carrying `labels`."""
    return ",".join(f"{k}={v}" for k, v in labels.items())
