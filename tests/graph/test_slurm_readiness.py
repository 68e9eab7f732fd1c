"""After the first install and every change to the NodeSet, `pulumi up` waits for the operator's
rollout and until every Slurm node takes jobs (cluster_programs/rollout.py in a Job)."""

import copy

import pytest

from cluster_programs import rollout
from components._parts.program_code import PROGRAMS
from components.slurm_readiness import MODULES, rollout_trigger
from devkit.offline_run import run_program
from tests.support.rollout_fakes import Clock, FakeCluster, nodeset, pod, revision, scontrol_line


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


@pytest.mark.parametrize(
    "overrides",
    [{"sshPublicKey": OTHER_KEY}, {"coreNodeCount": 3}, {"sshAllowedCidrs": ["198.51.100.7/32"]}],
    ids=["ssh-key", "core-nodes", "ssh-cidrs"],
)
def test_the_trigger_ignores_values_outside_the_nodeset(dev, overrides):
    assert _job(run_program("dev", overrides))["metadata"]["name"] == _job(dev)["metadata"]["name"]


def test_the_job_is_named_after_the_trigger_of_the_release_values(dev, release_values):
    assert _job(dev)["metadata"]["name"] == f"slurm-ready-{rollout_trigger(release_values)}"


@pytest.mark.parametrize(
    "path,value",
    [
        (("slurmd", "image", "digest"), "sha256:" + "cd" * 32),
        (("extraConfMap", "Gres"), ["gpu:nvidia_l4:2"]),
        (("replicas",), 5),
        (("podSpec", "volumes"), []),
    ],
    ids=["image", "gres", "replicas", "volumes"],
)
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
    assert container["command"][:3] == ["python3", "-m", "cluster_programs.rollout"]
    assert _arg(dev, "--nodeset") == "slurm-worker-slinky" and _arg(dev, "--node-prefix") == "slinky-"
    assert (_arg(dev, "--slurm-pod"), _arg(dev, "--slurm-container")) == ("slurm-controller-0", "slurmctld")


def test_the_module_shipped_is_the_repository_code(dev):
    code = dev.named("slurm-ready-code").inputs
    assert code["data"] == {
        **{m: (PROGRAMS / m).read_text() for m in ("__init__.py", *MODULES)},
    }
    assert code["immutable"] is True
    volumes = _job(dev)["spec"]["template"]["spec"]["volumes"]
    assert volumes == [{"name": "code", "configMap": {"name": code["metadata"]["name"]}}]
    assert {"name": "code", "mountPath": "/app/cluster_programs", "readOnly": True} in _container(dev)[
        "volumeMounts"
    ]


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
        {
            "apiGroups": ["slinky.slurm.net"],
            "resources": ["nodesets"],
            "verbs": ["get"],
            "resourceNames": ["slurm-worker-slinky"],
        },
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {
            "apiGroups": [""],
            "resources": ["pods/exec"],
            "verbs": ["get", "create"],
            "resourceNames": ["slurm-controller-0"],
        },
    ]
    assert dev.named("slurm-ready-role").inputs["metadata"]["namespace"] == "slurm"


def test_the_job_runs_unprivileged(dev):
    spec = _job(dev)["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert _container(dev)["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


def test_verify_outputs_are_exported(dev):
    assert dev.output("gpuInstanceType") == "g6.12xlarge" and dev.output("gpuNodeCount") == 2


# Several pools: one Job per pool's NodeSet (the one-NodeSet rollout.py each), one Role naming them.
TWO_POOLS = [
    {"name": "infer", "instanceType": "g6e.12xlarge", "nodeCount": 1},
    {"name": "train", "instanceType": "p5.48xlarge", "nodeCount": 2},
]


@pytest.fixture(scope="module")
def two():
    return run_program("dev", {"gpuPools": TWO_POOLS})


def _flags(graph, job):
    command = graph.named(job).inputs["spec"]["template"]["spec"]["containers"][0]["command"]
    return dict(zip(command[3::2], command[4::2], strict=True))


def test_with_two_pools_each_pools_nodeset_has_its_own_wait_job(two):
    jobs = sorted(
        r.name for r in two.of_type("kubernetes:batch/v1:Job") if r.name.startswith("slurm-ready-job")
    )
    assert jobs == ["slurm-ready-job-infer", "slurm-ready-job-train"]
    assert (
        _flags(two, "slurm-ready-job-infer")["--nodeset"],
        _flags(two, "slurm-ready-job-infer")["--node-prefix"],
    ) == ("slurm-worker-infer", "infer-")
    assert (
        _flags(two, "slurm-ready-job-train")["--nodeset"],
        _flags(two, "slurm-ready-job-train")["--node-prefix"],
    ) == ("slurm-worker-train", "train-")


def test_with_two_pools_the_role_reads_exactly_both_nodesets(two):
    (nodesets, *_) = two.named("slurm-ready-role").inputs["rules"]
    assert nodesets == {
        "apiGroups": ["slinky.slurm.net"],
        "resources": ["nodesets"],
        "verbs": ["get"],
        "resourceNames": ["slurm-worker-infer", "slurm-worker-train"],
    }


def test_with_two_pools_each_job_is_named_after_its_own_nodeset(two):
    values = _ints(two.named("slurm-release").inputs["values"])
    for pool in ("infer", "train"):
        assert _job_name(two, pool) == f"slurm-ready-{pool}-{rollout_trigger(values, pool)}"
    assert rollout_trigger(values, "infer") != rollout_trigger(values, "train")


def _job_name(graph, pool):
    return graph.named(f"slurm-ready-job-{pool}").inputs["metadata"]["name"]


def test_a_change_to_one_pools_nodeset_re_runs_that_pools_wait_only(two):
    bigger = run_program("dev", {"gpuPools": [TWO_POOLS[0], {**TWO_POOLS[1], "nodeCount": 3}]})
    assert _job_name(bigger, "train") != _job_name(two, "train")
    assert _job_name(bigger, "infer") == _job_name(two, "infer")


def test_with_two_pools_every_wait_starts_after_the_release(two):
    for pool in ("infer", "train"):
        job = two.named(f"slurm-ready-job-{pool}")
        assert two.depends_on(job, two.named("slurm-release")) and two.depends_on(
            job, two.named("slurm-ready-binding")
        )


def test_the_pool_named_slinky_keeps_its_job_resource_when_a_pool_is_added(dev):
    # Its Job runs again all the same: its NodeSet now selects nodes by the pool label too.
    graph = run_program(
        "dev", {"gpuPools": [{"name": "slinky", "instanceType": "g6.12xlarge", "nodeCount": 2}, TWO_POOLS[1]]}
    )
    assert graph.named("slurm-ready-job").urn == dev.named("slurm-ready-job").urn
    assert _flags(graph, "slurm-ready-job")["--nodeset"] == "slurm-worker-slinky"


def _pool_view(key, nodes, rolled_out=True):
    """One look at pool `key`'s NodeSet (CRD-valid) and pods; the controller lists both pools' nodes."""
    name, new, old = (
        f"slurm-worker-{key}",
        revision(f"slurm-worker-{key}", "7d9c5b8f6d"),
        revision(f"slurm-worker-{key}", "5c6d7f8b9a"),
    )
    pods = [pod(i, new if rolled_out or i == 0 else old, key=key) for i in range(nodes)]
    status = nodeset(
        name=name,
        replicas=nodes,
        updated=nodes if rolled_out else nodes - 1,
        ready=nodes,
        desired=nodes,
        revision=new,
    )
    slurm = [
        scontrol_line(f"{k}-{i}", "IDLE+DYNAMIC_NORM")
        for k, n in (("infer", 1), ("train", 2))
        for i in range(n)
    ]
    return FakeCluster([(status, pods, slurm)], nodeset_name=name)


def _run_job(graph, job, cluster):
    """What the pool's Job runs: rollout.settle on the NodeSet and prefix its command names."""
    flags = _flags(graph, job)
    assert flags["--nodeset"] == cluster.selector.split(",")[0].split("=")[1]
    clock = Clock()
    return rollout.settle(
        cluster, flags["--node-prefix"], 120, poll=10, clock=clock, sleep=clock.sleep, log=lambda line: None
    )


def test_with_two_pools_a_wait_fails_naming_the_nodeset_that_is_not_rolled_out(two):
    assert "NodeSet slurm-worker-infer rolled out" in _run_job(
        two, "slurm-ready-job-infer", _pool_view("infer", 1)
    )
    with pytest.raises(rollout.RolloutFailed) as e:
        _run_job(two, "slurm-ready-job-train", _pool_view("train", 2, rolled_out=False))
    assert "rollout of NodeSet slurm-worker-train in progress: updated 1/2" in str(e.value)
    assert "infer" not in str(e.value)


def test_the_longest_pool_name_keeps_its_job_name_a_valid_label_value():
    # Kubernetes labels the Job's pods job-name=<name>; a label value has at most 63 characters
    # (https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set).
    longest = "p" * 20
    graph = run_program("dev", {"gpuPools": [{**TWO_POOLS[0], "name": longest}, TWO_POOLS[1]]})
    assert len(_job_name(graph, longest)) <= 63
    assert not run_program(
        "dev", {"gpuPools": [{**TWO_POOLS[0], "name": longest + "p"}]}, expect_error=True
    ).resources
