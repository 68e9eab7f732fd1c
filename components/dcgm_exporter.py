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
from model.builders import metrics
from model.builders.node_repair import DCGM_HOST_ENGINE_PORT
from model.facts import versions
from model.facts.contract import GPU_LABELS, GPU_TOLERATION

# Where the chart mounts the counter list, the path its default `arguments` read
# (NVIDIA/dcgm-exporter deployment/values.yaml at 4.5.3-4.8.2: arguments -f
# /etc/dcgm-exporter/default-counters.csv, extraVolumeMounts exporter-metrics-volume).
COUNTERS_PATH = "/etc/dcgm-exporter/default-counters.csv"
# The exporter reads the job files with --hpc-job-mapping-dir, env DCGM_HPC_JOB_MAPPING_DIR
# (NVIDIA/dcgm-exporter pkg/cmd/app.go at 4.5.3-4.8.2, CLIHPCJobMappingDir), one file per GPU index
# holding the job id (internal/pkg/transformation/hpc.go).
JOB_MAPPING_ENV = "DCGM_HPC_JOB_MAPPING_DIR"
# The node's IP, from the pod's status.hostIP, which the exporter's `-r` argument names.
NODE_IP_ENV = "NODE_IP"
# Left to itself the exporter starts a DCGM host engine of its own inside its pod (the chart's
# default arguments have no -r). The node monitoring agent's dcgm-server already runs one on every
# GPU node (model/builders/node_repair.py), and two engines watching one GPU contend for its profiling
# counters: the DCGM_FI_PROF_* fields may come back empty or in error in one of them.
# `-r <host>:<port>` connects to the running engine instead (NVIDIA/dcgm-exporter deployment/
# values.yaml at 4.5.3-4.8.2, `arguments`: 'Use "-r", "<HOST>:<PORT>" to connect to an already
# running hostengine'); Kubernetes expands $(NODE_IP) from the container's env in args. Both are
# DCGM 4 (the exporter image's 4.5.3, the agent's 4.6.1).
HOST_ENGINE = f"$({NODE_IP_ENV}):{DCGM_HOST_ENGINE_PORT}"
ARGUMENTS = ["-f", COUNTERS_PATH, "-r", HOST_ENGINE]


def exporter_values(counters: str) -> dict:
    """The release's computed values (over charts-values/dcgm-exporter.yaml)."""
    repository, tag = versions.DCGM_EXPORTER_IMAGE
    job_mapping = {
        "name": "slurm-job-mapping",
        "hostPath": {
            # The directory slurmd's prolog writes (the slurm chart's vendor.nvidia.dcgm mounts the same
            # host path into slurmd, DirectoryOrCreate: slurm-1.2.1 _vendor/nvidia/dcgm/snippets/nodeset.yaml);
            # whichever pod starts first on a node creates it.
            "path": metrics.DCGM_JOB_MAPPING_DIR,
            "type": "DirectoryOrCreate",
        },
    }
    return {
        "image": {"repository": repository, "tag": tag},
        "nodeSelector": dict(GPU_LABELS),
        # The chart's default tolerates only the control-plane taint; GPU nodes carry the GPU taint.
        "tolerations": [dict(GPU_TOLERATION)],
        "customMetrics": counters,
        "arguments": list(ARGUMENTS),
        # The chart's extraHostVolumes take no hostPath type: the job directory goes with the
        # counter list's ConfigMap volume in the raw volume list (templates/daemonset.yaml toYaml).
        "extraConfigMapVolumes": [
            {
                "name": "exporter-metrics-volume",
                "configMap": {
                    "name": "exporter-metrics-config-map",
                    "items": [{"key": "metrics", "path": "default-counters.csv"}],
                },
            },
            job_mapping,
        ],
        "extraVolumeMounts": [
            {
                "name": "exporter-metrics-volume",
                "mountPath": COUNTERS_PATH,
                "subPath": "default-counters.csv",
            },
            {"name": job_mapping["name"], "mountPath": metrics.DCGM_JOB_MAPPING_DIR, "readOnly": True},
        ],
        "extraEnv": [
            {"name": JOB_MAPPING_ENV, "value": metrics.DCGM_JOB_MAPPING_DIR},
            {"name": NODE_IP_ENV, "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
        ],
        "podSecurityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        # Root stays (model/builders/pod_hardening.py says why); the rest is held. No capability: the chart's
        # SYS_ADMIN is for the profiling module of an engine inside the pod, and with `-r` the
        # profiling runs in the agent's engine, whose own pod is privileged.
        "securityContext": {
            "runAsNonRoot": False,
            "runAsUser": 0,
            # `add: []`, not left out: Helm merges maps, so the chart's SYS_ADMIN would stay.
            "capabilities": {"drop": ["ALL"], "add": []},
            "allowPrivilegeEscalation": False,
            "privileged": False,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }


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
            values=exporter_values(args.counters),
            parent=self,
            provider=args.cluster.provider,
            depends_on=args.depends_on,
        )
        self.ready = [self.release]
        self.register_outputs({"status": self.release.status})
