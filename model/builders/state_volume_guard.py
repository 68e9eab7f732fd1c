"""The state-volume guard's Deployment spec (components/state_volume_guard.py): one pod running
cluster_programs/state_volume_guard.py as program_job.py's pods run their programs, whose
termination grace period is how long `pulumi destroy` may wait for the state volume."""

from __future__ import annotations

from typing import Any

from model.builders.pod_security import NOBODY, pod_security
from model.builders.program_job import code_volume, program_container
from model.facts.contract import CORE_LABELS

GUARD = "slurm-state-volume-guard"
# EBS detaches in seconds to a minute and deletes in seconds; ten minutes is generous, and past
# it destroy goes on rather than hanging.
WAIT_SECONDS = 600


def labels() -> dict:
    """The Deployment's pod labels."""
    return {"app.kubernetes.io/name": GUARD}


def deployment_spec(namespace: str, claim: str, code_configmap: Any) -> dict:
    """One replica of the guard over `claim` in `namespace`, its code from `code_configmap` (a
    ConfigMap's name, a str or the Output of one)."""
    guard = program_container("guard", "state_volume_guard", ["--namespace", namespace, "--claim", claim])
    return {
        "replicas": 1,
        "selector": {"matchLabels": labels()},
        "template": {
            "metadata": {"labels": labels()},
            "spec": {
                "serviceAccountName": GUARD,
                "nodeSelector": dict(CORE_LABELS),
                "terminationGracePeriodSeconds": WAIT_SECONDS,
                # It writes nothing; the service account token it reads is readable by the
                # pod's user (the readiness Job runs the same way).
                "securityContext": pod_security(NOBODY),
                "containers": [
                    {
                        **guard,
                        "resources": {
                            "requests": {"cpu": "10m", "memory": "32Mi"},
                            "limits": {"cpu": "100m", "memory": "64Mi"},
                        },
                    }
                ],
                "volumes": [code_volume(code_configmap)],
            },
        },
    }
