"""The slurmd image pulled onto every GPU node as soon as the nodes and the pushed image exist: a
DaemonSet whose init container is the image itself (running `true`), so the multi-GB pull runs
while cert-manager, the operator and the Slurm release install, and the NodeSet's pods find the
image in the node's cache (the chart's pull policy is IfNotPresent and both name the same digest)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components._parts import jobs_await
from components.cluster import ClusterContext
from model.builders import image_prepull

# Pulumi waits until every GPU node has the image (the DaemonSet rolled out,
# pulumi-kubernetes provider/pkg/await/daemonset.go); a cold pull of the image takes minutes.
TIMEOUT_SECONDS = 1800


@dataclass(frozen=True)
class ImagePrePullArgs:
    """Every field is required (no defaults)."""

    # <repository>@sha256:<digest>, the reference the slurm chart renders for a digest
    # (SlinkyProject/slurm-operator v1.2.1 helm/slurm/templates/_helpers.tpl "slurm.format-image").
    image: pulumi.Input[str]
    # The namespace's name; the DaemonSet lives there.
    namespace: str
    # The EKS cluster it is part of (ClusterContext), for its Kubernetes provider.
    cluster: ClusterContext
    # What the DaemonSet waits for: the GPU nodes to pull on, and the namespace that holds it.
    depends_on: Sequence[pulumi.Resource]


class ImagePrePull(pulumi.ComponentResource):
    # Done once every GPU node has the image; nothing waits for it (the NodeSet's pods would pull
    # the same digest themselves).
    daemon_set: k8s.apps.v1.DaemonSet

    def __init__(self, name: str, args: ImagePrePullArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:image:ImagePrePull", name, None, opts)
        self._name, self._args = name, args
        self.daemon_set = self._daemon_set()
        self.register_outputs({"name": image_prepull.NAME})

    def _daemon_set(self) -> k8s.apps.v1.DaemonSet:
        args = self._args
        return k8s.apps.v1.DaemonSet(
            f"{self._name}-ds",
            metadata={
                "name": image_prepull.NAME,
                "namespace": args.namespace,
                "labels": image_prepull.labels(),
                "annotations": {jobs_await.TIMEOUT: str(TIMEOUT_SECONDS)},
            },
            spec=image_prepull.daemon_set_spec(args.image),
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.cluster.provider, depends_on=list(args.depends_on)
            ),
        )
