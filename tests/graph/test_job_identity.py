"""The identity of a program Job that calls the Kubernetes API (components/_parts/job_identity.py):
a service account and a Role of one name with exactly the Job's rules, bound together in the Job's
namespace, the binding made after both. Seen on the Slurm readiness Job of the dev stack."""

import pytest

from components._parts.job_identity import exec_rule


@pytest.fixture(scope="module")
def identity(dev):
    return {part: dev.named(f"slurm-ready-{part}") for part in ("account", "role", "binding")}


def test_exec_names_one_pod_and_grants_get_and_create_as_a_websocket_exec_needs():
    assert exec_rule("slurm-controller-0") == {
        "apiGroups": [""],
        "resources": ["pods/exec"],
        "verbs": ["get", "create"],
        "resourceNames": ["slurm-controller-0"],
    }


def test_the_account_and_the_role_share_one_name_in_the_jobs_namespace(identity):
    account, role = identity["account"].inputs["metadata"], identity["role"].inputs["metadata"]
    assert account == role == {"name": "slurm-rollout-wait", "namespace": "slurm"}


def test_the_binding_binds_that_role_to_that_account_only(identity):
    binding = identity["binding"].inputs
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "slurm-rollout-wait",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "slurm-rollout-wait", "namespace": "slurm"}
    ]


def test_the_role_holds_the_rules_the_job_asks_for(identity):
    assert exec_rule("slurm-controller-0") in identity["role"].inputs["rules"]


def test_the_binding_is_made_after_the_account_and_the_role(dev, identity):
    binding = identity["binding"]
    assert dev.depends_on(binding, identity["account"]) and dev.depends_on(binding, identity["role"])


def test_the_job_runs_as_the_account_once_it_is_bound(dev, identity):
    job = dev.named("slurm-ready-job")
    assert job.inputs["spec"]["template"]["spec"]["serviceAccountName"] == "slurm-rollout-wait"
    assert dev.depends_on(job, identity["binding"])
