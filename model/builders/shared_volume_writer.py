"""The pod spec of a Job that writes onto the shared volume as root: the job staging copy and the
users' homes. Root, the image's user (busybox has no USER): /shared is the root of the EFS file
system (the PV in components/shared_storage.py names no access point), owned by uid 0 with mode
755 until someone changes it (https://docs.aws.amazon.com/efs/latest/ug/accessing-fs-nfs-permissions.html).
Otherwise hardened (model/builders/pod_hardening.py lists why these pods keep root), on the core nodes,
with no service account token: neither Job calls the Kubernetes API."""

from __future__ import annotations

from typing import Sequence

from model.builders.pod_security import container_security, pod_security
from model.facts import versions
from model.facts.contract import CORE_LABELS, SHARED_MOUNT


def writer_spec(
    container: str,
    script: str,
    shared_claim: str,
    deadline_seconds: int,
    *,
    mounts: Sequence[dict] = (),
    volumes: Sequence[dict] = (),
    add_capabilities: Sequence[str] = (),
) -> dict:
    """The Job spec: `script` run by sh in busybox with the shared volume at SHARED_MOUNT, plus
    `mounts` and `volumes`, and only the capabilities in `add_capabilities`."""
    security = container_security()
    if add_capabilities:
        security = {**security, "capabilities": {"drop": ["ALL"], "add": list(add_capabilities)}}
    return {
        "backoffLimit": 3,
        "activeDeadlineSeconds": deadline_seconds,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "nodeSelector": dict(CORE_LABELS),
                "automountServiceAccountToken": False,
                "securityContext": pod_security(None),
                "containers": [
                    {
                        "name": container,
                        "image": versions.BUSYBOX_IMAGE,
                        "command": ["sh", "-c", script],
                        "securityContext": security,
                        "volumeMounts": [*mounts, {"name": "shared", "mountPath": SHARED_MOUNT}],
                    }
                ],
                "volumes": [
                    *volumes,
                    {"name": "shared", "persistentVolumeClaim": {"claimName": shared_claim}},
                ],
            }
        },
    }
