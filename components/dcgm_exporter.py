"""NVIDIA's DCGM exporter on every GPU node and only there: each GPU's utilisation, memory, power,
temperature, Xid and ECC counters from the chosen field list (observability/dcgm-counters.csv),
each series of a GPU a Slurm job holds labelled with the job id."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components._parts.helm import pinned_release
from components.cluster import ClusterContext
from model.builders import dcgm_exporter, metrics
from model.facts import versions


@dataclass(frozen=True)
class DcgmExporterArgs:
    """Every field is required (no defaults)."""

    # The EKS cluster it is part of (ClusterContext), for its Kubernetes provider.
    cluster: ClusterContext
    # The counter list the exporter exports (observability/dcgm-counters.csv, model/builders/metrics.py
    # DCGM_COUNTERS_FILE), in the exporter's CSV format.
    counters: str
    # What the release waits for (and is deleted before): the GPU nodes (NodeGroups.gpu_ready) and
    # the NVIDIA device plugin (DevicePlugins.ready), whose runtime set-up gives the pods the GPUs.
    # Not the node monitoring agent, whose host engine it reads: nothing waits for the agent
    # (tests/graph/test_node_repair.py). Its add-on installs with the control plane, before any
    # node; its dcgm-server comes with each GPU node, and an exporter that starts first restarts
    # until the engine answers.
    depends_on: Sequence[pulumi.Resource]


class DcgmExporter(pulumi.ComponentResource):
    release: k8s.helm.v3.Release  # one exporter pod per GPU node, in metrics.DCGM_EXPORTER_NAMESPACE
    # What readers of the GPU series wait for: the exporter running on every GPU node.
    ready: list[pulumi.Resource]

    def __init__(self, name: str, args: DcgmExporterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:metrics:DcgmExporter", name, None, opts)
        self._name, self._args = name, args
        self.release = pinned_release(
            f"{name}-release",
            versions.DCGM_EXPORTER,
            namespace=metrics.DCGM_EXPORTER_NAMESPACE,
            release_name=metrics.DCGM_EXPORTER_RELEASE,
            create_namespace=True,
            values=dcgm_exporter.release_values(args.counters),
            parent=self,
            provider=args.cluster.provider,
            depends_on=args.depends_on,
        )
        self.ready = [self.release]
        self.register_outputs({"status": self.release.status})
