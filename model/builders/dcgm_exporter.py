"""NVIDIA's DCGM exporter's values: what components/dcgm_exporter.py's release gets over the
reviewed base (charts-values/dcgm-exporter.yaml): on the GPU nodes only, the chosen counter list,
the node's own DCGM host engine, and the Slurm job mapping directory."""

from __future__ import annotations

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


def release_values(counters: str) -> dict:
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
