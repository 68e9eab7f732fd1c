"""Every pod the program writes keeps the hardening rules of model/builders/pod_hardening.py (RuntimeDefault
seccomp, no capability, no escalation, non-root, read-only root, no host namespace, no token where
no API is called), but for the exceptions accepted there with their reasons."""

import copy

import pytest

from devkit.offline_run import run_program
from model.builders import pod_hardening
from tests.support import pod_hardening as ph

PROGRAM_PODS = {
    "Job/stage-jobs",
    "Deployment/slurm-state-volume-guard",
    "DaemonSet/slurmd-image-prepull",
    "Job/slurm-ready",
    "Job/accounting-registration",
    "Job/slurm-accounting-database-user",
}
# A stack with named users has one more: the Job that makes their homes; one with a pool that has a
# network place, the network-topology writer (the stack below has both).
PLACED_USERS_PODS = {"Job/user-homes", "Deployment/slurm-network-topology"}
ALICE = {
    "name": "alice",
    "uid": 2001,
    "admin": True,
    "sshPublicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKxJ0hQ4mYH3q2u1cGlB6y1u0sD1n8n3zQ7y0w5f6h7L a@b",
}


@pytest.fixture(scope="module")
def with_users():
    return run_program("dev", {"users": [ALICE], "gpuInstanceType": "p5.48xlarge"})


def test_the_check_sees_every_pod_the_program_writes(dev, with_users):
    assert set(ph.graph_pods(dev)) == PROGRAM_PODS
    assert set(ph.graph_pods(with_users)) == PROGRAM_PODS | PLACED_USERS_PODS


def test_every_program_pod_is_hardened_but_for_the_accepted_exceptions(with_users):
    pods = ph.graph_pods(with_users)
    assert pod_hardening.problems(ph.findings(pods), ph.accepted(charts=False)) == []


def test_a_new_unhardened_container_is_caught(with_users):
    pods = copy.deepcopy(ph.graph_pods(with_users))
    pods["DaemonSet/slurmd-image-prepull"]["containers"][0]["securityContext"].pop("capabilities")
    assert pod_hardening.problems(ph.findings(pods), ph.accepted(charts=False)) == [
        "DaemonSet/slurmd-image-prepull pause: misses drop-all (capabilities: drop ALL, and none added), "
        "and no exception accepts it"
    ]


def test_a_mounted_token_is_caught_where_no_api_is_called(with_users):
    pods = copy.deepcopy(ph.graph_pods(with_users))
    pods["Job/stage-jobs"].pop("automountServiceAccountToken")
    assert pod_hardening.problems(ph.findings(pods), ph.accepted(charts=False)) == [
        "Job/stage-jobs (pod): misses no-token (automountServiceAccountToken: false (the pod calls no "
        "Kubernetes API)), and no exception accepts it"
    ]


def test_an_accepted_exception_that_is_gone_is_caught(with_users):
    pods = copy.deepcopy(ph.graph_pods(with_users))
    pods["Job/stage-jobs"]["securityContext"].update(runAsNonRoot=True, runAsUser=65534)
    assert pod_hardening.problems(ph.findings(pods), ph.accepted(charts=False)) == [
        "Job/stage-jobs copy: keeps non-root now: remove its exception from model/builders/pod_hardening.py"
    ]


def test_the_staging_copy_is_root_without_capabilities_and_the_others_run_as_fixed_users(dev):
    pods = ph.graph_pods(dev)
    users = {
        w: (p["securityContext"].get("runAsUser"), p["securityContext"].get("runAsGroup"))
        for w, p in pods.items()
    }
    assert users == {
        "Job/stage-jobs": (None, None),
        "Deployment/slurm-state-volume-guard": (65534, 65534),
        "DaemonSet/slurmd-image-prepull": (65535, 65535),
        "Job/slurm-ready": (65534, 65534),
        "Job/accounting-registration": (65534, 65534),
        "Job/slurm-accounting-database-user": (65534, 65534),
    }


def test_python_pods_write_no_bytecode_on_their_read_only_root(dev):
    pods = ph.graph_pods(dev)
    for workload in (
        "Deployment/slurm-state-volume-guard",
        "Job/slurm-ready",
        "Job/slurm-accounting-database-user",
    ):
        (container,) = pods[workload]["containers"]
        assert {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"} in container["env"], workload


def test_every_accepted_exception_names_known_rules_a_reason_and_a_source():
    for accepted in pod_hardening.ACCEPTED:
        assert accepted.rules and accepted.rules <= set(pod_hardening.RULES), accepted
        assert accepted.reason and accepted.source, accepted


def test_every_container_of_every_program_pod_requests_and_is_limited_in_cpu_and_memory(with_users):
    assert {w: pod_hardening.unbounded(pod) for w, pod in ph.graph_pods(with_users).items()} == {
        w: [] for w in PROGRAM_PODS | PLACED_USERS_PODS
    }


def test_a_container_without_a_memory_limit_is_caught(with_users):
    pods = copy.deepcopy(ph.graph_pods(with_users))
    pods["Job/stage-jobs"]["containers"][0]["resources"]["limits"].pop("memory")
    assert pod_hardening.unbounded(pods["Job/stage-jobs"]) == ["copy: no limits.memory"]
