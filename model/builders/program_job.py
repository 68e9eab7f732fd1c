"""The pod of a Job that runs one of the program's in-cluster Python programs (cluster_programs/):
the standard-library code from an immutable ConfigMap mounted as a package under /app, run by
the utility python image as nobody on the core nodes, hardened (model/builders/pod_security.py),
under the Job's own service account (components/_parts/job_identity.py)."""

from __future__ import annotations

from typing import Any, Sequence

from model.builders.pod_security import NO_BYTECODE, NOBODY, container_security, pod_security
from model.facts import versions
from model.facts.contract import CORE_LABELS


def program_pod(
    container: str,
    package: str,
    module: str,
    arguments: Sequence[str],
    account: str,
    code_configmap: Any,
    *,
    mounts: Sequence[dict] = (),
    volumes: Sequence[dict] = (),
) -> dict:
    """The Job's pod template spec: `python3 -m <package>.<module> <arguments>`, with the code
    ConfigMap at /app/<package>, plus `mounts` and `volumes`. `code_configmap` is the ConfigMap's
    name, a str or the Output of one (the spec is a plain dict, whatever its leaves are)."""
    return {
        "restartPolicy": "Never",
        "serviceAccountName": account,
        "nodeSelector": dict(CORE_LABELS),
        "securityContext": pod_security(NOBODY),
        "containers": [
            {
                "name": container,
                "image": versions.PYTHON_IMAGE,
                "workingDir": "/app",
                "command": ["python3", "-m", f"{package}.{module}", *arguments],
                "env": [NO_BYTECODE],
                "securityContext": container_security(),
                "volumeMounts": [{"name": "code", "mountPath": f"/app/{package}", "readOnly": True}, *mounts],
            }
        ],
        "volumes": [{"name": "code", "configMap": {"name": code_configmap}}, *volumes],
    }
