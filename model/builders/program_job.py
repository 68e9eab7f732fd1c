"""The pods that run the program's in-cluster Python programs (cluster_programs/): the
standard-library code from the immutable ConfigMap components/_parts/program_code.py makes, mounted
as the package `cluster_programs` under /app and run as `python3 -m cluster_programs.<module>` by the
utility python image, as nobody on the core nodes, hardened (model/builders/pod_security.py), under
the pod's own service account (components/_parts/job_identity.py for the Jobs)."""

from __future__ import annotations

from typing import Any, Sequence

from model.builders.pod_security import NO_BYTECODE, NOBODY, container_security, pod_security
from model.facts import versions
from model.facts.contract import CORE_LABELS

# One standard-library Python process that waits on the API and execs a command elsewhere: the
# interpreter's own few tens of MiB, and room to read a NodeSet's pod list. Limited, so it shares
# the core nodes with the control plane on known terms
# (https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/).
RESOURCES = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}
# The package's name in the pod: its name in the repository.
PACKAGE = "cluster_programs"
WORKING_DIR = "/app"


def program_container(container: str, module: str, arguments: Sequence[str]) -> dict:
    """The container: `python3 -m cluster_programs.<module> <arguments>` from /app, with the code
    volume at /app/cluster_programs."""
    return {
        "name": container,
        "image": versions.PYTHON_IMAGE,
        "workingDir": WORKING_DIR,
        "command": ["python3", "-m", f"{PACKAGE}.{module}", *arguments],
        "env": [NO_BYTECODE],
        "securityContext": container_security(),
        "resources": RESOURCES,
        "volumeMounts": [{"name": "code", "mountPath": f"{WORKING_DIR}/{PACKAGE}", "readOnly": True}],
    }


def code_volume(code_configmap: Any) -> dict:
    """The code ConfigMap as the pod's `code` volume; `code_configmap` is its name, a str or the
    Output of one (the spec is a plain dict, whatever its leaves are)."""
    return {"name": "code", "configMap": {"name": code_configmap}}


def program_pod(
    container: str,
    module: str,
    arguments: Sequence[str],
    account: str,
    code_configmap: Any,
    *,
    mounts: Sequence[dict] = (),
    volumes: Sequence[dict] = (),
) -> dict:
    """A Job's pod template spec: program_container's, run once, plus `mounts` and `volumes`."""
    run = program_container(container, module, arguments)
    return {
        "restartPolicy": "Never",
        "serviceAccountName": account,
        "nodeSelector": dict(CORE_LABELS),
        "securityContext": pod_security(NOBODY),
        "containers": [{**run, "volumeMounts": [*run["volumeMounts"], *mounts]}],
        "volumes": [code_volume(code_configmap), *volumes],
    }
