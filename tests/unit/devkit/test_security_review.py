"""The security review covers what users deploy (devkit/security_review.py CONFIGURATIONS): the dev
stack, an autoscaling pool and named users, metrics on in each; a finding found in several is
reported once, naming them. Where a triage reason (devkit/security_triage.py) states a property of
the program's own pods, the property is checked here against the plan of every configuration, and
the entry is checked not to explain the program's own pods: a pod that loses the property is then
an unexplained finding of the review, not an accepted one. The scanners themselves are not run
here (minutes; `make security-review`)."""

import fnmatch

import pytest

from devkit import chart_render, security_review
from devkit.offline_account import DEV
from devkit.offline_run import run_program
from devkit.security_review import ACCOUNTS, CONFIGURATIONS, Finding
from devkit.security_triage import TRIAGE
from model.builders import pod_hardening
from tests.support import pod_hardening as ph
from tests.support.rendered_checks import POD_SPEC_PATHS


@pytest.fixture(scope="module")
def graphs():
    return {
        name: run_program("dev", overrides or None, account=ACCOUNTS.get(name, DEV))
        for name, overrides in CONFIGURATIONS.items()
    }


def releases(graph) -> set[str]:
    return {r.inputs["name"] for r in graph.of_type(chart_render.RELEASE_TYPE)}


def test_the_review_covers_the_dev_stack_as_it_is():
    assert CONFIGURATIONS["dev"] == {}


def test_the_review_covers_an_autoscaling_pool(graphs):
    assert [name for name, g in graphs.items() if {"keda", "cluster-autoscaler"} <= releases(g)] == [
        "autoscaling"
    ]


def test_the_review_covers_named_users(graphs):
    with_homes = [name for name, g in graphs.items() if "Job/user-homes" in ph.graph_pods(g)]
    assert with_homes == ["users"] and len(CONFIGURATIONS["users"]["users"]) >= 2


def test_metrics_are_on_in_every_configuration_the_review_covers(graphs):
    assert all({"grafana", "dcgm-exporter"} <= releases(g) for g in graphs.values())


def test_a_finding_of_several_configurations_is_reported_once_naming_them():
    f = Finding("checkov", "kubernetes", "CKV_K8S_16", "DaemonSet.slurm.someone-elses")
    found = security_review.merged({"dev": [f], "autoscaling": [], "users": [f, f]})
    assert found == {f: ["dev", "users"]}
    assert "DaemonSet.slurm.someone-elses (in: dev, users)" in security_review.report(
        list(found), where=found
    )


# Reasons that state a property of the program's own pods.


def program_workloads(graph) -> dict[str, dict]:
    """checkov's name of each workload the program writes (`Kind.namespace.name`) -> its pod spec."""
    pods = ph.graph_pods(graph)
    out = {}
    for resource in graph.resources:
        kind = resource.type.rsplit(":", 1)[-1]
        if resource.type.startswith("kubernetes:") and kind in POD_SPEC_PATHS:
            meta = resource.inputs["metadata"]
            out[f"{kind}.{meta['namespace']}.{meta['name']}"] = pods[
                pod_hardening.workload_name(kind, meta["name"])
            ]
    return out


def entries(check: str, reason_says: str):
    found = [e for e in TRIAGE if e.check == check and reason_says in e.reason]
    assert found, f"no {check} entry says {reason_says!r}"
    return found


def explains_any(found, names) -> list[str]:
    return [n for n in names for e in found if any(fnmatch.fnmatchcase(n, r) for r in e.resources)]


@pytest.mark.parametrize("check", ["CKV_K8S_10", "CKV_K8S_11", "CKV_K8S_12", "CKV_K8S_13"])
def test_requests_and_limits_are_set_where_the_program_writes_the_pod(graphs, check):
    found = entries(check, "requests and limits")
    for name, graph in graphs.items():
        workloads = program_workloads(graph)
        assert {
            w: pod_hardening.unbounded(p) for w, p in workloads.items() if pod_hardening.unbounded(p)
        } == {}
        assert explains_any(found, workloads) == [], name


def test_the_images_of_the_pods_the_program_writes_are_pinned_by_digest(graphs):
    found = entries("CKV_K8S_43", "pinned by digest")
    for name, graph in graphs.items():
        workloads = program_workloads(graph)
        images = {
            c["image"] for p in workloads.values() for c in [*p.get("initContainers", []), *p["containers"]]
        }
        assert [i for i in images if "@sha256:" not in i] == [], name
        assert explains_any(found, workloads) == [], name


@pytest.mark.parametrize(
    "job, added", [("stage-jobs", ["CHOWN"]), ("user-homes", ["CHOWN"])], ids=["staging", "homes"]
)
def test_the_root_jobs_keep_only_the_capabilities_their_reasons_name(graphs, job, added):
    (entry,) = [e for e in TRIAGE if e.check == "CKV_K8S_23" and any(f".{job}-" in r for r in e.resources)]
    assert ("CHOWN" in entry.reason) == bool(added)
    pods = ph.graph_pods(graphs["users"])
    (container,) = pods[f"Job/{job}"]["containers"]
    capabilities = container["securityContext"]["capabilities"]
    assert capabilities["drop"] == ["ALL"] and capabilities.get("add", []) == added
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
