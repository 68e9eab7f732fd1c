"""The hardening check's rules on single pods (model/builders/pod_hardening.py). The program's pods
and the charts' pods are held to it in tests/graph/test_pod_hardening.py and
tests/charts/test_pod_hardening.py."""

from model.builders.pod_hardening import container_misses, findings, pod_misses, problems, workload_name
from model.builders.pod_security import container_security, pod_security

HARDENED = {"securityContext": container_security()}


def _pod(*containers, **fields):
    return {
        "securityContext": pod_security(1000),
        "automountServiceAccountToken": False,
        **fields,
        "containers": list(containers),
    }


def test_a_container_built_from_the_pod_security_defaults_keeps_every_rule():
    assert container_misses(_pod(), HARDENED) == set()
    assert pod_misses(_pod()) == set()


def test_the_pods_seccomp_profile_and_non_root_count_for_its_containers_unless_overridden():
    container = {"securityContext": {**container_security(), "runAsUser": 0}}
    assert container_misses(_pod(), container) == {"non-root"}
    assert container_misses({"securityContext": {}}, HARDENED) == {"seccomp", "non-root"}


def test_an_added_capability_misses_drop_all_though_all_are_dropped():
    container = {
        "securityContext": {**container_security(), "capabilities": {"drop": ["ALL"], "add": ["NET_ADMIN"]}}
    }
    assert container_misses(_pod(), container) == {"drop-all"}


def test_a_privileged_container_misses_unprivileged_and_no_escalation():
    container = {"securityContext": {**container_security(), "privileged": True}}
    assert container_misses(_pod(), container) == {"unprivileged", "no-escalation"}


def test_a_pod_in_the_hosts_network_misses_unprivileged_and_a_mounted_token_misses_no_token():
    assert pod_misses({"hostNetwork": True, "automountServiceAccountToken": False}) == {"unprivileged"}
    assert pod_misses({}) == {"no-token"}


def test_findings_name_the_pod_as_none_and_each_container_by_name_init_containers_first():
    pod = {"initContainers": [{"name": "init", **HARDENED}], "containers": [{"name": "main"}]}
    found = list(findings("Job/x", pod))
    assert ("Job/x", None, "no-token") in found
    assert {c for _, c, _ in found} == {None, "init", "main"}


def test_a_jobs_content_hash_is_left_out_of_its_name_and_a_charts_workload_is_under_its_release():
    assert workload_name("Job", "stage-jobs-0123456789ab") == "Job/stage-jobs"
    assert workload_name("Deployment", "web-0123456789ab") == "Deployment/web-0123456789ab"
    assert workload_name("DaemonSet", "agent", "efa") == "efa:DaemonSet/agent"


def test_an_unaccepted_finding_and_a_gone_exception_are_each_one_line():
    found = {("Job/x", "main", "non-root")}
    accepted = {("Job/y", None, "no-token")}
    assert problems(found, accepted) == [
        "Job/x main: misses non-root (runAsNonRoot: true (pod or container) and no runAsUser 0), "
        "and no exception accepts it",
        "Job/y (pod): keeps no-token now: remove its exception from model/builders/pod_hardening.py",
    ]
