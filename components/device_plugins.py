"""The NVIDIA and EFA device plugins: what makes GPU nodes advertise nvidia.com/gpu and
vpc.amazonaws.com/efa."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components._parts.helm import pinned_release
from components.cluster import ClusterContext
from model.facts import versions
from model.facts.contract import GPU_LABELS, GPU_TOLERATION, SYSTEM_NAMESPACE


def gpu_placement() -> dict:
    """Run on the GPU nodes only, through their NoSchedule taint. Both charts ship without a
    toleration for it (EFA: aws/eks-charts stable/aws-efa-k8s-device-plugin/templates/daemonset.yaml
    at chart v0.5.30 tolerates only CriticalAddonsOnly; a plugin that never schedules means 0 EFA
    devices)."""
    return {
        "nodeSelector": dict(GPU_LABELS),
        "tolerations": [dict(GPU_TOLERATION), {"key": "CriticalAddonsOnly", "operator": "Exists"}],
    }


@dataclass(frozen=True)
class DevicePluginsArgs:
    """Every field is required (no defaults)."""

    # The EKS cluster it is part of (ClusterContext), for its Kubernetes provider.
    cluster: ClusterContext
    # What both plugins wait for: the GPU node groups (NodeGroups.gpu_ready). Depending on them
    # also deletes the plugins before the nodes.
    depends_on: Sequence[pulumi.Resource]


class DevicePlugins(pulumi.ComponentResource):
    nvidia: k8s.helm.v3.Release  # advertises nvidia.com/gpu on every GPU node
    efa: k8s.helm.v3.Release  # advertises vpc.amazonaws.com/efa on every GPU node
    # What pods that request GPUs or EFA devices wait for: both plugins running.
    ready: list[pulumi.Resource]

    def __init__(self, name: str, args: DevicePluginsArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:devices:DevicePlugins", name, None, opts)
        self._name, self._args = name, args
        self.nvidia = self._nvidia()
        self.efa = self._efa()
        self.ready = [self.nvidia, self.efa]
        self.register_outputs({"nvidia": self.nvidia.status, "efa": self.efa.status})

    def _nvidia(self) -> k8s.helm.v3.Release:
        return pinned_release(
            f"{self._name}-nvidia",
            versions.NVIDIA_DEVICE_PLUGIN,
            namespace=SYSTEM_NAMESPACE,
            # The chart's default affinity wants NFD's PCI label or nvidia.com/gpu.present, which
            # nodeadm sets only from Kubernetes 1.35 on (NVIDIA/k8s-device-plugin v0.20.0
            # deployments/helm/nvidia-device-plugin/values.yaml; awslabs/amazon-eks-ami
            # nodeadm/internal/kubelet/config.go): select by our label.
            values={
                **gpu_placement(),
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": k, "operator": "In", "values": [v]}
                                        for k, v in GPU_LABELS.items()
                                    ]
                                }
                            ]
                        }
                    }
                },
            },
            parent=self,
            provider=self._args.cluster.provider,
            depends_on=self._args.depends_on,
        )

    def _efa(self) -> k8s.helm.v3.Release:
        return pinned_release(
            f"{self._name}-efa",
            versions.EFA_DEVICE_PLUGIN,
            namespace=SYSTEM_NAMESPACE,
            values=gpu_placement(),
            parent=self,
            provider=self._args.cluster.provider,
            depends_on=self._args.depends_on,
        )
