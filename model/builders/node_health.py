"""The node health check as the release ships it: the program (cluster_programs/node_health.py)
and one expectations file per GPU pool in one ConfigMap, which each pool's NodeSet mounts into
slurmd at HEALTH_DIR with its own pool's file as expected.json; and the slurm.conf lines that make
slurmd run it (docs/health.md).

Why a ConfigMap and not the slurmd image: the check changes without a multi-gigabyte image
rebuild, the kubelet updates a mounted ConfigMap directory in place (no pod restart, no rollout),
and the pool's expectations -- which differ per NodeSet while the image is one for all pools --
travel with it. The chart passes a NodeSet's slurmd volumeMounts and podSpec volumes through
(SlinkyProject/slurm-operator v1.2.1 helm/slurm/values.yaml nodesets.slinky.slurmd.volumeMounts,
podSpec.volumes), and controller.extraConfMap carries the slurm.conf lines (the operator appends
them under "### MERGED CONFIG ###": internal/builder/controllerbuilder/controller_config.go).

slurm.conf (SchedMD/slurm doc/man/man5/slurm.conf.5 at slurm-26-05-3-1):
- HealthCheckProgram: run as root on every compute node not NOT_RESPONDING, at slurmd start
  (before it registers) and every HealthCheckInterval; it must drain the node itself.
- HealthCheckInterval: seconds between runs; 0 (the default) never runs it.
- HealthCheckNodeState=ANY: on drained nodes too, so the check can undrain what it drained, and on
  allocated ones, so a GPU lost under a running job keeps the next job off the node.
HealthCheckTimeout stays at its default, 60 s, and is set nowhere here: its one home is the
program's SLURMD_HEALTH_CHECK_TIMEOUT, from which the check's one deadline for its whole run is
derived (cluster_programs/node_health.py BUDGET). Setting it here would need that constant moved.
"""

from __future__ import annotations

import json
from typing import Sequence

from model.checks.gpu_pools import GpuPool
from model.facts.contract import HEALTH_CONFIGMAP, HEALTH_DIR, SHARED_MOUNT

# The program's file in the repository, under cluster_programs/ (the component reads it), and its
# name in the ConfigMap and in the pod.
PROGRAM_MODULE = "node_health.py"
PROGRAM = "node-health"
EXPECTED = "expected.json"
PROGRAM_PATH = f"{HEALTH_DIR}/{PROGRAM}"
VOLUME = "node-health"
# The check's Xid cursor lives on the node (cluster_programs/node_health.py STATE_FILE, which must
# lie in this directory: a unit test holds them together). It describes the node's kernel log of one
# boot, so it must outlast the pod: the operator replaces a NodeSet's pods at every template change,
# and a pod starting without the cursor would read the whole boot's log again and re-drain a node for
# an Xid that was already handled and resumed (a drain that holds, so the rollout wait fails). A
# hostPath, DirectoryOrCreate (the kubelet makes it, root-owned, on first use), mounted read-write:
# as the slurm chart 1.2.1 mounts a host directory into slurmd for the DCGM job mapping
# (SlinkyProject/slurm-operator v1.2.1 helm/slurm/_vendor/nvidia/dcgm/snippets/nodeset.yaml).
# A reboot is told by the boot id in the cursor itself.
STATE_DIR = "/var/lib/slinky-eks/node-health"
STATE_VOLUME = "node-health-state"
# Five minutes: a fault is found before most queued jobs would land, for two scontrol calls and
# one nvidia-smi per node per run.
INTERVAL_SECONDS = 300
NODE_STATE = "ANY"


def expected_key(pool: GpuPool) -> str:
    return f"{pool.name}.json"


def expectations(pool: GpuPool) -> dict:
    """What the check holds a node of `pool` to, from the catalog (model/facts/catalog.py): the GPUs'
    count and nvidia-smi/procfs model, the EFA interfaces the pod requests (slurm_values.gpu_resources
    gives it all of them), the shared mount."""
    gpu = pool.gpu
    return {
        "pool": pool.name,
        "gpus": gpu.gpus,
        "gpu_model": gpu.gpu_model,
        "efa_interfaces": gpu.efa_interfaces,
        "shared": SHARED_MOUNT,
    }


def configmap_data(program: str, pools: Sequence[GpuPool]) -> dict[str, str]:
    """The ConfigMap's files: the program's source and each pool's expectations."""
    data = {PROGRAM: program}
    for pool in pools:
        data[expected_key(pool)] = json.dumps(expectations(pool), sort_keys=True, indent=2) + "\n"
    return data


def volume(pool: GpuPool) -> dict:
    """The pool's view of the ConfigMap: the program, executable by root (slurm.conf.5 "FILE AND
    DIRECTORY PERMISSIONS": HealthCheckProgram must be executable by root), and its own
    expectations as expected.json."""
    return {
        "name": VOLUME,
        "configMap": {
            "name": HEALTH_CONFIGMAP,
            "defaultMode": 0o444,
            "items": [
                {"key": PROGRAM, "path": PROGRAM, "mode": 0o555},
                {"key": expected_key(pool), "path": EXPECTED},
            ],
        },
    }


def mount() -> dict:
    """A directory mount (not subPath), so the kubelet keeps the files current."""
    return {"name": VOLUME, "mountPath": HEALTH_DIR, "readOnly": True}


def state_volume() -> dict:
    """The node's directory for the check's Xid cursor (STATE_DIR)."""
    return {"name": STATE_VOLUME, "hostPath": {"path": STATE_DIR, "type": "DirectoryOrCreate"}}


def state_mount() -> dict:
    """Read-write: the check replaces the cursor file there."""
    return {"name": STATE_VOLUME, "mountPath": STATE_DIR}


def slurm_conf() -> dict[str, list[str]]:
    """controller.extraConfMap entries."""
    return {
        "HealthCheckProgram": [PROGRAM_PATH],
        "HealthCheckInterval": [str(INTERVAL_SECONDS)],
        "HealthCheckNodeState": [NODE_STATE],
    }
