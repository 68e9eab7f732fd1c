"""The NVIDIA and EFA device plugins: what makes GPU nodes advertise nvidia.com/gpu and
vpc.amazonaws.com/efa."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components._parts.helm import pinned_release
from components.cluster import ClusterContext
from model.builders import device_plugins
from model.facts import versions
from model.facts.contract import SYSTEM_NAMESPACE


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
            values=device_plugins.nvidia_values(),
            parent=self,
            provider=self._args.cluster.provider,
            depends_on=self._args.depends_on,
        )

    def _efa(self) -> k8s.helm.v3.Release:
        return pinned_release(
            f"{self._name}-efa",
            versions.EFA_DEVICE_PLUGIN,
            namespace=SYSTEM_NAMESPACE,
            values=device_plugins.efa_values(),
            parent=self,
            provider=self._args.cluster.provider,
            depends_on=self._args.depends_on,
        )
