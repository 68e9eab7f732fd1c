"""After the first install and every change to the NodeSet, `pulumi up` waits for the operator's
rollout and until every Slurm node takes jobs (tools/rollout.py in a Job)."""
import copy

import pytest

from components.slurm_readiness import MODULES, TOOLS, rollout_trigger
from harness import run_program


def _job(graph):
    return graph.named("slurm-ready-job").inputs


def _container(graph):
    (container,) = _job(graph)["spec"]["template"]["spec"]["containers"]
    return container


def _arg(graph, flag):
    command = _container(graph)["command"]
    return command[command.index(flag) + 1]


def _ints(value):
    """Recorded inputs carry numbers as protobuf doubles (google.protobuf.Struct); the program
    hashed the ints it wrote."""
    if isinstance(value, dict):
        return {k: _ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v) for v in value]
    return int(value) if isinstance(value, float) and value.is_integer() else value


@pytest.fixture(scope="module")
def release_values(dev):
    return _ints(dev.named("slurm-release").inputs["values"])


def test_the_trigger_changes_with_the_node_count(dev):
    assert _job(run_program("dev", {"gpuNodeCount": 3}))["metadata"]["name"] != _job(dev)["metadata"]["name"]


def test_the_trigger_changes_with_the_gres(dev):
    graph = run_program("dev", {"gpuInstanceType": "g6e.12xlarge"})
    assert _job(graph)["metadata"]["name"] != _job(dev)["metadata"]["name"]


OTHER_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f other@host"


@pytest.mark.parametrize("overrides", [{"sshPublicKey": OTHER_KEY}, {"coreNodeCount": 3},
                                       {"sshAllowedCidrs": ["198.51.100.7/32"]}],
                         ids=["ssh-key", "core-nodes", "ssh-cidrs"])
def test_the_trigger_ignores_values_outside_the_nodeset(dev, overrides):
    assert _job(run_program("dev", overrides))["metadata"]["name"] == _job(dev)["metadata"]["name"]


def test_the_job_is_named_after_the_trigger_of_the_release_values(dev, release_values):
    assert _job(dev)["metadata"]["name"] == f"slurm-ready-{rollout_trigger(release_values)}"


@pytest.mark.parametrize("path,value", [(("slurmd", "image", "digest"), "sha256:" + "cd" * 32),
                                        (("extraConfMap", "Gres"), ["gpu:nvidia_l4:2"]),
                                        (("replicas",), 5), (("podSpec", "volumes"), [])],
                         ids=["image", "gres", "replicas", "volumes"])
def test_the_trigger_covers_the_pod_template_and_replicas(release_values, path, value):
    changed = copy.deepcopy(release_values)
    block = changed["nodesets"]["slinky"]
    for key in path[:-1]:
        block = block[key]
    block[path[-1]] = value
    assert rollout_trigger(changed) != rollout_trigger(release_values)


def test_the_trigger_ignores_the_login_set(release_values):
    changed = copy.deepcopy(release_values)
    changed["loginsets"]["slinky"]["replicas"] = 2
    assert rollout_trigger(changed) == rollout_trigger(release_values)


def test_the_job_runs_the_rollout_module_against_the_nodeset(dev):
    container = _container(dev)
    assert container["command"][:3] == ["python3", "-m", "tools.rollout"]
    assert _arg(dev, "--nodeset") == "slurm-worker-slinky" and _arg(dev, "--node-prefix") == "slinky-"
    assert (_arg(dev, "--slurm-pod"), _arg(dev, "--slurm-container")) == ("slurm-controller-0", "slurmctld")


def test_the_module_shipped_is_the_repository_code(dev):
    code = dev.named("slurm-ready-code").inputs
    assert code["data"] == {m: (TOOLS / m).read_text() for m in MODULES} and code["immutable"] is True
    volumes = _job(dev)["spec"]["template"]["spec"]["volumes"]
    assert volumes == [{"name": "code", "configMap": {"name": code["metadata"]["name"]}}]
    assert {"name": "code", "mountPath": "/app/tools", "readOnly": True} in _container(dev)["volumeMounts"]


def test_the_wait_starts_after_the_release_and_the_login_endpoint(dev):
    job = dev.named("slurm-ready-job")
    assert dev.depends_on(job, dev.named("slurm-release")) and dev.depends_on(job, dev.named("slurm-login"))


def test_a_failed_wait_fails_the_update_and_runs_again_on_the_next(dev):
    job = _job(dev)
    annotations = job["metadata"]["annotations"]
    assert "pulumi.com/skipAwait" not in annotations and annotations["pulumi.com/replaceUnready"] == "true"
    assert int(annotations["pulumi.com/timeoutSeconds"]) >= job["spec"]["activeDeadlineSeconds"]
    assert float(_arg(dev, "--timeout")) < job["spec"]["activeDeadlineSeconds"]


def test_the_job_reads_the_nodeset_and_pods_and_execs_into_the_controller_only(dev):
    rules = dev.named("slurm-ready-role").inputs["rules"]
    assert rules == [
        {"apiGroups": ["slinky.slurm.net"], "resources": ["nodesets"], "verbs": ["get"],
         "resourceNames": ["slurm-worker-slinky"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["get", "create"],
         "resourceNames": ["slurm-controller-0"]}]
    assert dev.named("slurm-ready-role").inputs["metadata"]["namespace"] == "slurm"


def test_the_job_runs_unprivileged(dev):
    spec = _job(dev)["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert _container(dev)["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                                  "capabilities": {"drop": ["ALL"]}}


def test_verify_outputs_are_exported(dev):
    assert dev.output("gpuInstanceType") == "g6.12xlarge" and dev.output("gpuNodeCount") == 2
