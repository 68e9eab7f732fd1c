"""A failed Job never wedges later `up`s: every Kubernetes Job in the graph is replaced when it
did not complete, has a deadline of its own, and is awaited a little longer than that deadline.
Annotation names: pulumi-kubernetes provider/pkg/metadata/annotations.go (v4.x)."""

import copy

import pytest

JOB = "kubernetes:batch/v1:Job"


def job_problems(job_inputs) -> list[str]:
    """What would let this Job wedge or hang an `up`; empty when nothing."""
    annotations = job_inputs.get("metadata", {}).get("annotations") or {}
    deadline = job_inputs.get("spec", {}).get("activeDeadlineSeconds")
    # Numbers cross the engine's wire as floats.
    deadline = int(deadline) if isinstance(deadline, (int, float)) and deadline == int(deadline) else None
    problems = []
    if annotations.get("pulumi.com/replaceUnready") != "true":
        problems.append('no pulumi.com/replaceUnready: "true"')
    if deadline is None or deadline <= 0:
        problems.append("no activeDeadlineSeconds")
    timeout = annotations.get("pulumi.com/timeoutSeconds")
    if timeout is None or not str(timeout).isdigit():
        problems.append("no pulumi.com/timeoutSeconds")
    elif deadline is not None and int(timeout) <= deadline:
        problems.append(f"pulumi.com/timeoutSeconds {timeout} ends before the deadline {deadline}")
    return problems


def test_the_graph_has_the_jobs_this_file_is_about(dev):
    assert sorted(j.name for j in dev.of_type(JOB)) == [
        "accounting-user-job",
        "accounts-job",
        "jobs-copy",
        "slurm-ready-job",
    ]


@pytest.mark.parametrize("job", ["jobs-copy", "slurm-ready-job", "accounts-job", "accounting-user-job"])
def test_every_job_is_replaced_when_unready_and_has_deadlines(dev, job):
    assert job_problems(dev.named(job).inputs) == []


def test_the_staging_job_has_a_deadline_of_its_own(dev):
    assert dev.named("jobs-copy").inputs["spec"]["activeDeadlineSeconds"] == 600


@pytest.mark.parametrize(
    "breakage,problem",
    [
        (
            lambda j: j["metadata"]["annotations"].pop("pulumi.com/replaceUnready"),
            "no pulumi.com/replaceUnready",
        ),
        (
            lambda j: j["metadata"]["annotations"].update({"pulumi.com/replaceUnready": "false"}),
            "no pulumi.com/replaceUnready",
        ),
        (lambda j: j["spec"].pop("activeDeadlineSeconds"), "no activeDeadlineSeconds"),
        (
            lambda j: j["metadata"]["annotations"].pop("pulumi.com/timeoutSeconds"),
            "no pulumi.com/timeoutSeconds",
        ),
        (
            lambda j: j["metadata"]["annotations"].update({"pulumi.com/timeoutSeconds": "600"}),
            "pulumi.com/timeoutSeconds 600 ends before the deadline 600",
        ),
    ],
)
def test_a_job_that_could_wedge_an_up_is_found(dev, breakage, problem):
    job = copy.deepcopy(dev.named("jobs-copy").inputs)
    breakage(job)
    assert [p for p in job_problems(job) if p.startswith(problem)] != []


@pytest.mark.parametrize("rbac", ["slurm-ready-account", "slurm-ready-role", "slurm-ready-binding"])
def test_readiness_rbac_is_created_in_its_namespace_and_deleted_before_it(dev, rbac):
    assert dev.depends_on(dev.named(rbac), dev.named("storage-slurm-ns"))


def test_an_object_created_without_its_namespace_is_found(dev):
    broken = copy.deepcopy(dev)
    ns = broken.named("storage-slurm-ns").urn
    account = broken.named("slurm-ready-account")
    account.dependencies = [d for d in account.dependencies if d != ns]
    assert not broken.depends_on(account, broken.named("storage-slurm-ns"))
