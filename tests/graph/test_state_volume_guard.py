"""The state-volume guard (components/state_volume_guard.py) in the dev stack: a Deployment the
controller's state claim depends on, so `pulumi destroy` deletes it after the claim and waits for
its pod, which ends once the claim's volume is gone; it may only read that one claim and list
volumes. Destroy's order is specified in tests/graph/scenarios/test_teardown.py; the program in
tests/unit/cluster_programs/test_state_volume_guard.py."""

import pytest

from model.builders.state_volume_guard import GUARD, WAIT_SECONDS
from model.facts.contract import STATE_CLAIM


@pytest.fixture(scope="module")
def deployment(dev):
    return dev.named("slurm-state-guard-deployment")


def test_the_state_claim_depends_on_the_guard_so_destroy_deletes_the_guard_after_it(dev, deployment):
    assert deployment.urn in dev.named("slurm-state").dependencies


def test_the_guard_watches_the_controllers_state_claim(deployment):
    (container,) = deployment.inputs["spec"]["template"]["spec"]["containers"]
    assert container["command"][-4:] == ["--namespace", "slurm", "--claim", STATE_CLAIM]


def test_destroy_waits_for_the_guards_pod_its_wait_and_a_minute_more(deployment):
    assert deployment.inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"] == str(WAIT_SECONDS + 60)


def test_the_guard_may_only_get_its_one_claim_in_its_namespace(dev):
    role = dev.named("slurm-state-guard-claim-reader").inputs
    assert role["metadata"]["namespace"] == "slurm"
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["persistentvolumeclaims"],
            "resourceNames": [STATE_CLAIM],
            "verbs": ["get"],
        }
    ]


def test_the_guard_may_only_list_persistent_volumes_across_the_cluster(dev):
    role = dev.named("slurm-state-guard-volume-reader").inputs
    assert role["rules"] == [{"apiGroups": [""], "resources": ["persistentvolumes"], "verbs": ["list"]}]


def test_both_roles_are_bound_to_the_guards_own_service_account(dev):
    for binding in ("slurm-state-guard-claim-reader-binding", "slurm-state-guard-volume-reader-binding"):
        assert dev.named(binding).inputs["subjects"] == [
            {"kind": "ServiceAccount", "name": GUARD, "namespace": "slurm"}
        ]


def test_the_guard_starts_once_its_code_account_and_bindings_exist(dev, deployment):
    for name in (
        "slurm-state-guard-code",
        "slurm-state-guard-account",
        "slurm-state-guard-claim-reader-binding",
    ):
        assert dev.depends_on(deployment, dev.named(name)), name
