"""The Slurm release's computed values: what depends on the stack's config and on other resources
(chart_release merges them over the reviewed base, charts-values/slurm.yaml). Pure functions;
tests walk the release's values against chart 1.2.1's defaults and check what the chart renders
from them (tests/test_rendered_charts.py)."""
from __future__ import annotations

from dataclasses import dataclass

from components.catalog import GpuInstanceType
from components.node_groups import CORE_LABELS, GPU_LABELS, GPU_TOLERATION

RELEASE = "slurm"          # fixed: object names and ClusterName derive from it
NODESET = "slinky"         # Slurm nodes slinky-0, slinky-1, ...
LOGINSET = "slinky"
# What the operator names the LoginSet (<release>-login-<loginset>); its pods carry it as
# app.kubernetes.io/instance (the operator's login selector labels).
LOGINSET_OBJECT = f"{RELEASE}-login-{LOGINSET}"
# The chart names the NodeSet <release>-worker-<key> and gives its pods the hostname (= Slurm
# node name) prefix <key>- (helm/slurm/templates/nodeset/nodeset-cr.yaml, chart 1.2.1).
NODESET_OBJECT = f"{RELEASE}-worker-{NODESET}"
SLURM_NODE_PREFIX = f"{NODESET}-"
# The controller is a StatefulSet <release>-controller of one pod; its slurmctld container has
# scontrol (the operator's reconfigure sidecar runs it from the same image: slurm-operator v1.2.1
# internal/builder/controllerbuilder/controller_app.go, scripts/reconfigure.sh).
CONTROLLER_POD = f"{RELEASE}-controller-0"
CONTROLLER_CONTAINER = "slurmctld"
SHARED_MOUNT = "/shared"


@dataclass(frozen=True)
class SlurmValuesArgs:
    gpu: GpuInstanceType
    gpu_node_count: int
    image_repository: str
    image_digest: str
    image_tag: str
    ssh_public_key: str
    shared_claim: str
    state_claim: str
    slurm_key_secret: str
    jwt_key_secret: str
    # The tag of the Slinky images (slurmctld, slurmrestd, login) of the Slurm build the slurmd
    # image is built on: the chart defaults to the floating <major.minor>-<flavour> tag.
    slinky_image_tag: str


def slinky_image_tag(slurmd_base_image: str) -> str:
    """The tag of the Slinky slurmd base image (e.g. 26.05.2-ubuntu24.04), which every Slinky image
    of that Slurm release carries (SlinkyProject/containers docker-bake.hcl format_tag)."""
    return slurmd_base_image.split("@", 1)[0].rsplit(":", 1)[-1]


def gpu_resources(gpu: GpuInstanceType) -> dict:
    # A pod that does not request the EFA devices sees no /dev/infiniband and NCCL falls back to
    # sockets (https://docs.aws.amazon.com/eks/latest/userguide/device-management-efa.html): every
    # EFA interface of the node goes to its one slurmd.
    amounts = {"nvidia.com/gpu": gpu.gpus, "vpc.amazonaws.com/efa": gpu.efa_interfaces}
    return {"limits": dict(amounts), "requests": dict(amounts)}


def slurm_values(a: SlurmValuesArgs) -> dict:
    shared_volume = {"name": "shared", "persistentVolumeClaim": {"claimName": a.shared_claim}}
    shared_mount = {"name": "shared", "mountPath": SHARED_MOUNT}
    slinky_image = {"tag": a.slinky_image_tag}  # over the chart's repository (ghcr.io/slinkyproject/...)
    return {
        # Pinned references only (the slurmd image by digest), so a pod starts from the node's
        # cache when the image is there: the pre-pull DaemonSet (image_prepull.py) puts it there.
        "imagePullPolicy": "IfNotPresent",
        # Keys made by the program and passed by reference: the chart would otherwise generate
        # random ones, and its Secrets are immutable.
        "slurmKey": {"create": False, "secretRef": {"name": a.slurm_key_secret, "key": "slurm.key"}},
        "jwtKey": {"create": False, "secretRef": {"name": a.jwt_key_secret, "key": "jwt.key"}},
        "controller": {
            # Pulumi owns the gp3 claim, so destroy deletes it (and its EBS volume); a claim from
            # the StatefulSet's template would outlive the release.
            "persistence": {"existingClaim": a.state_claim},
            "podSpec": {"nodeSelector": dict(CORE_LABELS)},
            "slurmctld": {"image": dict(slinky_image)},
            "reconfigure": {"image": dict(slinky_image)},
        },
        "restapi": {"podSpec": {"nodeSelector": dict(CORE_LABELS)},
                    "slurmrestd": {"image": dict(slinky_image)}},
        "nodesets": {NODESET: {
            "enabled": True,
            "replicas": a.gpu_node_count,
            "slurmd": {
                "image": {"repository": a.image_repository, "tag": a.image_tag, "digest": a.image_digest},
                "resources": gpu_resources(a.gpu),
                "volumeMounts": [shared_mount, {"name": "dshm", "mountPath": "/dev/shm"}],
            },
            # The type must be what slurmd autodetects, or GRES is (null) (catalog.gres_type).
            "extraConfMap": {"Gres": [a.gpu.gres]},
            # The partition comes from `partitions` in the base values.
            "partition": {"enabled": False},
            "podSpec": {
                "nodeSelector": dict(GPU_LABELS),
                # Tolerations replace the operator's defaults rather than merge.
                "tolerations": [dict(GPU_TOLERATION)],
                # NCCL's shared-memory transport needs more than the container's 64 MiB /dev/shm.
                "volumes": [shared_volume, {"name": "dshm", "emptyDir": {"medium": "Memory"}}],
            },
        }},
        "loginsets": {LOGINSET: {
            "enabled": True,
            "replicas": 1,
            "rootSshAuthorizedKeys": a.ssh_public_key + "\n",
            "login": {"image": dict(slinky_image), "volumeMounts": [shared_mount]},
            "podSpec": {"nodeSelector": dict(CORE_LABELS), "volumes": [shared_volume]},
            # The chart's default LoadBalancer would go to the in-tree cloud provider: a Classic
            # ELB with SSH open to 0.0.0.0/0. The program owns the login NLB instead.
            "service": {"spec": {"type": "ClusterIP"}},
        }},
    }

