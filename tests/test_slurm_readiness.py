"""After the first install and every image change, `pulumi up` resumes stuck nodes and waits
until every Slurm node takes jobs."""
from harness import IMAGE_DIGEST, run_program


def test_readiness_job_is_named_after_the_image_digest(dev):
    job = dev.named("slurm-ready-job").inputs
    assert job["metadata"]["name"] == f"slurm-ready-{IMAGE_DIGEST.removeprefix('sha256:')[:12]}"


def test_readiness_job_runs_the_resume_script_in_the_login_pod(dev):
    (container,) = dev.named("slurm-ready-job").inputs["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    assert command[:7] == ["kubectl", "exec", "-n", "slurm", "svc/slurm-login-nlb", "-c", "login"]
    assert "scontrol update nodename=" in command[command.index("-c", 7) + 1]
    assert command[-2] == "2"  # every GPU node must take jobs


def test_readiness_waits_for_the_release_and_the_login_endpoint(dev):
    job = dev.named("slurm-ready-job")
    assert dev.depends_on(job, dev.named("slurm-release")) and dev.depends_on(job, dev.named("slurm-login"))


def test_readiness_failure_fails_the_update(dev):
    job = dev.named("slurm-ready-job").inputs
    assert "pulumi.com/skipAwait" not in job["metadata"]["annotations"]
    assert int(job["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]) >= job["spec"]["activeDeadlineSeconds"]


def test_readiness_may_only_exec_in_its_namespace(dev):
    rules = dev.named("slurm-ready-role").inputs["rules"]
    assert {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"]} in rules
    assert dev.named("slurm-ready-role").inputs["metadata"]["namespace"] == "slurm"


def test_expected_nodes_follow_the_node_count():
    graph = run_program("dev", {"gpuNodeCount": 4})
    assert graph.named("slurm-ready-job").inputs["spec"]["template"]["spec"]["containers"][0]["command"][-2] == "4"


def test_verify_outputs_are_exported(dev):
    assert dev.output("gpuInstanceType") == "g6.12xlarge" and dev.output("gpuNodeCount") == 2
