"""The slurmd image's pre-pull DaemonSet spec (components/image_prepull.py): on every GPU node, an
init container that is the image itself (running `true`), so the multi-GB pull runs while the
operator and the Slurm release install, and a pause container that keeps the pod, and so the
image, on the node."""

from __future__ import annotations

from typing import Any

from model.builders.pod_security import PAUSE_USER, container_security, pod_security
from model.facts import versions
from model.facts.contract import GPU_LABELS, GPU_TOLERATION

NAME = "slurmd-image-prepull"
# A few millicores and MiB: the pod asks for no GPU or EFA device, so slurmd, which takes them
# all, schedules beside it and Slurm sees the node as idle.
TINY = {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "10m", "memory": "16Mi"}}


def labels() -> dict:
    """The DaemonSet's and its pods' labels."""
    return {"app.kubernetes.io/name": NAME}


def daemon_set_spec(image: Any) -> dict:
    """The DaemonSet's spec; `image` is <repository>@sha256:<digest>, a str or the Output of one."""
    return {
        "selector": {"matchLabels": labels()},
        # A new digest is pulled on every node at once, not node after node.
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}},
        "template": {
            "metadata": {"labels": labels()},
            "spec": {
                "nodeSelector": dict(GPU_LABELS),
                "tolerations": [dict(GPU_TOLERATION)],
                "automountServiceAccountToken": False,
                "terminationGracePeriodSeconds": 1,
                # The pause image's own user for both containers: `true` in the slurmd
                # image (whose user is root) runs as any user, and a fixed uid lets the
                # kubelet check runAsNonRoot without reading the image.
                "securityContext": pod_security(PAUSE_USER),
                "initContainers": [
                    {
                        "name": "pull",
                        "image": image,
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["true"],
                        "resources": TINY,
                        "securityContext": container_security(),
                    }
                ],
                # The pod stays: its exited init container keeps the image in use, so the
                # kubelet's image garbage collection leaves it on the node.
                "containers": [
                    {
                        "name": "pause",
                        "image": versions.PAUSE_IMAGE,
                        "resources": TINY,
                        "securityContext": container_security(),
                    }
                ],
            },
        },
    }
