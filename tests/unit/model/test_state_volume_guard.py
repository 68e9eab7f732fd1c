"""The state-volume guard's Deployment spec (model/builders/state_volume_guard.py)."""

from model.builders import state_volume_guard as guard
from model.builders.pod_security import NOBODY
from model.builders.program_job import code_volume
from model.facts.contract import CORE_LABELS


def _pod():
    return guard.deployment_spec("slurm", "statesave-slurm-controller-0", "code-abc")["template"]["spec"]


def test_one_guard_runs_the_guard_program_over_the_named_claim_and_namespace():
    spec = guard.deployment_spec("slurm", "statesave-slurm-controller-0", "code-abc")
    (container,) = spec["template"]["spec"]["containers"]
    assert spec["replicas"] == 1
    assert container["command"][-5:] == [
        "cluster_programs.state_volume_guard",
        "--namespace",
        "slurm",
        "--claim",
        "statesave-slurm-controller-0",
    ]


def test_destroy_waits_for_the_volume_as_long_as_the_termination_grace_period():
    assert _pod()["terminationGracePeriodSeconds"] == guard.WAIT_SECONDS == 600


def test_the_guard_selects_its_own_pods():
    spec = guard.deployment_spec("slurm", "c", "code-abc")
    assert spec["selector"]["matchLabels"] == spec["template"]["metadata"]["labels"] == guard.labels()


def test_the_guard_runs_as_nobody_on_the_core_nodes_under_its_service_account_with_its_code():
    pod = _pod()
    assert pod["serviceAccountName"] == guard.GUARD and pod["nodeSelector"] == CORE_LABELS
    assert pod["securityContext"]["runAsUser"] == NOBODY
    assert pod["volumes"] == [code_volume("code-abc")]
