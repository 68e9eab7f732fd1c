"""How a node group is sized, and what cluster-autoscaler must be told about an autoscaled GPU
pool's nodes before one exists. Pure: components/node_groups.py applies it.

The tags are cluster-autoscaler's node-template tags on the Auto Scaling group (kubernetes/autoscaler
cluster-autoscaler/cloudprovider/aws/README.md at cluster-autoscaler-1.36.1, "Auto-Discovery Setup"
and "Scaling a node group to 0"; read by cloudprovider/aws/aws_manager.go buildNodeFromTemplate):
- label/<name> = <value> for each node label a pending pod selects on;
- taint/<key> = <value>:<effect> for each taint;
- resources/<name> = <quantity>, the whole suffix being the resource name (so one with a '/' works:
  extractAllocatableResourcesFromAsg parses the value with resource.ParseQuantity). CA's built-in
  instance table (cloudprovider/aws/ec2_instance_types.go) knows CPUs, memory and GPUs but not EFA,
  and a slurmd pod requests every EFA interface of its node (model/builders/slurm_values.py gpu_resources).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from model.checks.gpu_pools import GpuPool
from model.facts.catalog import GpuInstanceType
from model.facts.contract import EFA_RESOURCE, GPU_RESOURCE, GPU_TAINT

TEMPLATE = "k8s.io/cluster-autoscaler/node-template"


@dataclass(frozen=True)
class NodeGroupSize:
    """A managed node group's scaling config, and whether the desired size is cluster-autoscaler's."""

    minimum: int
    maximum: int
    desired: int
    autoscaled: bool = False

    @classmethod
    def fixed(cls, count: int) -> "NodeGroupSize":
        return cls(count, count, count)

    @classmethod
    def of_pool(cls, pool: GpuPool) -> "NodeGroupSize":
        """A fixed pool at node_count; an autoscaling one between its bounds, created at minNodes."""
        if not pool.autoscales:
            return cls.fixed(pool.node_count)
        return cls(pool.min_nodes, pool.max_nodes, pool.initial_nodes, autoscaled=True)


def node_template_tags(pool: GpuPool, labels: dict[str, str]) -> dict[str, str]:
    """The node-template tags of a pool's group: its nodes' labels, the GPU taint, and the GPUs and
    EFA interfaces each node offers."""
    tags = {f"{TEMPLATE}/label/{name}": value for name, value in labels.items()}
    tags[f"{TEMPLATE}/taint/{GPU_TAINT.key}"] = f"{GPU_TAINT.value}:{GPU_TAINT.effect}"
    tags[f"{TEMPLATE}/resources/{GPU_RESOURCE}"] = str(pool.gpu.gpus)
    tags[f"{TEMPLATE}/resources/{EFA_RESOURCE}"] = str(pool.gpu.efa_interfaces)
    return tags


# The launch template's user data for a managed node group on an EKS AL2023 AMI: a MIME multi-part
# document, the format EKS requires for Amazon Linux because it merges the document with its own
# user data, the NodeConfig that joins the node to the cluster (EKS user guide, "Customize managed
# nodes with launch templates", Amazon EC2 user data:
# https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html; no merge where the launch
# template names an AMI, which ours never does: the node group's amiType picks it). nodeadm merges
# every application/node.eks.aws part it finds, in document order (awslabs/amazon-eks-ami v20260724
# nodeadm/doc/examples.md, "Merging multiple configuration objects"): ours sets localStorage only,
# EKS's sets the cluster, so neither overrides the other.
_BOUNDARY = "SLINKYEKS"


def local_storage_node_config() -> str:
    """nodeadm's NodeConfig that assembles the instance store into one RAID0 array at boot:
    spec.instance.localStorage.strategy RAID0 (awslabs/amazon-eks-ami v20260724 nodeadm/doc/api.md,
    LocalStorageOptions; nodeadm/internal/system/local_disk.go runs `setup-local-disks raid0`).
    templates/al2023/runtime/bin/setup-local-disks (maybe_raid) builds one md RAID0 array of every
    NVMe instance store disk (the /dev/disk/by-id/*NVMe_Instance_Storage_* links; a store EC2 does
    not attach over NVMe is left alone), formats it XFS and mounts it at /mnt/k8s-disks/0; then,
    stopping kubelet and containerd where they already run, it copies /var/lib/kubelet,
    /var/lib/containerd, /var/lib/soci-snapshotter-grpc and /var/log/pods onto the array and
    bind-mounts each back at its own path (no disabledMounts: all four; the kubelet's cannot be
    disabled). Pods' emptyDirs live under the kubelet's directory (/var/lib/kubelet/pods/<uid>/
    volumes; --root-dir's default, https://kubernetes.io/docs/reference/command-line-tools-reference/kubelet/)
    and the image store under containerd's, so both are on the NVMe (model/builders/containers.py
    NODE_LOCAL_MOUNT)."""
    return (
        "---\n"
        "apiVersion: node.eks.aws/v1alpha1\n"
        "kind: NodeConfig\n"
        "spec:\n"
        "  instance:\n"
        "    localStorage:\n"
        "      strategy: RAID0\n"
    )


def gpu_user_data(gpu: GpuInstanceType) -> str | None:
    """A GPU pool's launch template user data, base64 as EC2 takes it: the instance store as one
    RAID0 volume where the type has NVMe instance store (catalog instance_store); None (no user
    data, everything on the root volume) where it has none."""
    store = gpu.instance_store
    if store is None or not store.nvme:
        return None
    document = (
        "MIME-Version: 1.0\n"
        f'Content-Type: multipart/mixed; boundary="{_BOUNDARY}"\n'
        "\n"
        f"--{_BOUNDARY}\n"
        "Content-Type: application/node.eks.aws\n"
        "\n"
        f"{local_storage_node_config()}"
        "\n"
        f"--{_BOUNDARY}--\n"
    )
    return base64.b64encode(document.encode()).decode()
