"""The security settings every pod the program writes starts from: the kernel's default syscall
filter, no capabilities, no privilege escalation, a read-only root, and (where the work allows)
a fixed non-root uid. What each pod may not have, and why, is listed in model/builders/pod_hardening.py."""

from __future__ import annotations

# Debian's and busybox's `nobody` (uid and gid 65534): owns nothing in the images the pods run.
NOBODY = 65534
# The uid and gid the pause image runs as since pause 3.5 (kubernetes/kubernetes
# build/pause/CHANGELOG.md, "Run the container image as non root user per default", #97963;
# build/pause/Dockerfile: `USER 65535:65535`).
PAUSE_USER = 65535
# Python imports of the standard library would try to write bytecode beside the modules: on a
# read-only root that write fails (silently), so it is not attempted.
NO_BYTECODE = {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}


def pod_security(uid: int | None) -> dict:
    """The pod-level context: RuntimeDefault seccomp, and with a uid that uid and group, non-root.
    uid None keeps the image's user (a pod that must be root says why where it passes None)."""
    context: dict = {"seccompProfile": {"type": "RuntimeDefault"}}
    if uid is not None:
        context.update(runAsNonRoot=True, runAsUser=uid, runAsGroup=uid)
    return context


def container_security() -> dict:
    """The container-level context: no capability, no escalation (setuid binaries stay
    unprivileged), nothing written to the image's filesystem."""
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
