"""`pulumi destroy` leaves nothing behind: the engine deletes in reverse dependency order, so
these edges are the teardown order."""

import copy

import pytest

from devkit.offline_run import run_program
from tests.support.paths import REPO


def _lb_services(graph):
    return [
        r
        for r in graph.of_type("kubernetes:core/v1:Service")
        if r.inputs["spec"].get("type") == "LoadBalancer"
    ]


def test_there_is_a_load_balancer_service_to_order(dev):
    assert [s.name for s in _lb_services(dev)] == ["slurm-login"]


def test_load_balancer_services_go_before_the_controller_that_deletes_their_nlb(dev):
    for svc in _lb_services(dev):
        assert dev.depends_on(svc, dev.named("lbc-release")), svc.name


def test_gp3_claims_go_before_the_ebs_driver(dev):
    claims = [
        r
        for r in dev.of_type("kubernetes:core/v1:PersistentVolumeClaim")
        if r.inputs["spec"].get("storageClassName") == "gp3"
    ]
    assert claims
    for claim in claims:
        assert dev.depends_on(claim, dev.named("storage-ebs-csi")), claim.name


def test_efs_volumes_go_before_the_efs_driver_and_the_mount_targets(dev):
    volumes = [
        r
        for r in dev.of_type("kubernetes:core/v1:PersistentVolume")
        if r.inputs["spec"].get("csi", {}).get("driver") == "efs.csi.aws.com"
    ]
    assert volumes
    for pv in volumes:
        assert dev.depends_on(pv, dev.named("storage-efs-csi"))
        for mt in dev.of_type("aws:efs/mountTarget:MountTarget"):
            assert dev.depends_on(pv, mt)


@pytest.mark.parametrize(
    "controller,nodes",
    [
        ("lbc-release", "nodes-core"),
        ("slinky-cert-manager", "nodes-core"),
        ("slinky-operator", "nodes-core"),
        ("storage-ebs-csi", "nodes-core"),
        ("storage-efs-csi", "nodes-core"),
        ("devices-nvidia", "nodes-gpu"),
        ("devices-efa", "nodes-gpu"),
    ],
)
def test_controllers_go_before_the_nodes_they_run_on(dev, controller, nodes):
    assert dev.depends_on(dev.named(controller), dev.named(nodes))


def test_slurm_release_goes_before_the_operator_and_its_crds(dev):
    # The operator must still run to remove its custom resources' finalizers
    # (https://kubernetes.io/docs/concepts/overview/working-with-objects/finalizers/).
    release = dev.named("slurm-release")
    assert dev.depends_on(release, dev.named("slinky-operator"))
    assert dev.depends_on(dev.named("slinky-operator"), dev.named("slinky-crds"))


@pytest.mark.parametrize("group", ["nodes-core", "nodes-gpu"])
def test_node_groups_go_before_the_cluster_and_the_network(dev, group):
    assert dev.depends_on(dev.named(group), dev.named("cluster-eks"))
    assert dev.depends_on(dev.named(group), dev.named("network-vpc"))


def test_nothing_is_skipped_on_delete_by_default(dev):
    assert [r.name for r in dev.resources if r.retain_on_delete or r.deleted_with] == []


def test_shared_data_can_be_kept_on_purpose():
    graph = run_program("dev", {"retainSharedData": True})
    # The file system, and its policy, without which EFS would let any client that reaches a
    # mount target in.
    assert sorted(r.name for r in graph.resources if r.retain_on_delete) == [
        "storage-efs",
        "storage-efs-policy",
    ]


def test_image_repository_is_deleted_with_its_images(dev):
    assert dev.named("slurmd-repo").inputs["forceDelete"] is True


# The controller's state volume: Pulumi waits only for the claim object; the guard Deployment
# (components/state_volume_guard.py) holds destroy until the EBS volume behind it is deleted.
def _volume_order_problems(graph) -> list[str]:
    claim, guard = graph.named("slurm-state"), graph.named("slurm-state-guard-deployment")
    problems = [] if graph.depends_on(claim, guard) else ["the state claim is not deleted before the guard"]
    for outlives in (
        "storage-ebs-csi",
        "storage-gp3",
        "nodes-core",
        "storage-slurm-ns",
        "slurm-state-guard-volume-reader-binding",
        "slurm-state-guard-claim-reader-binding",
    ):
        if not graph.depends_on(guard, graph.named(outlives)):
            problems.append(f"{outlives} may be deleted before the guard")
    return problems


def test_the_state_volume_is_gone_before_the_ebs_driver_and_the_nodes(dev):
    assert _volume_order_problems(dev) == []


def test_a_claim_deleted_after_the_guard_is_found(dev):
    broken = copy.deepcopy(dev)
    guard = broken.named("slurm-state-guard-deployment").urn
    claim = broken.named("slurm-state")
    claim.dependencies = [d for d in claim.dependencies if d != guard]
    assert _volume_order_problems(broken) == ["the state claim is not deleted before the guard"]


def test_a_driver_deleted_before_the_guard_is_found(dev):
    broken = copy.deepcopy(dev)
    component = broken.named("slurm-state-guard").urn
    gone = {broken.named(n).urn for n in ("storage-gp3", "storage-ebs-csi")}
    for r in broken.resources:
        if r.parent == component:
            r.dependencies = [d for d in r.dependencies if d not in gone]
    assert _volume_order_problems(broken) == [
        "storage-ebs-csi may be deleted before the guard",
        "storage-gp3 may be deleted before the guard",
        "nodes-core may be deleted before the guard",
    ]


def test_the_guard_watches_the_state_claim(dev):
    claim = dev.named("slurm-state").inputs["metadata"]
    (container,) = dev.named("slurm-state-guard-deployment").inputs["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    assert command[command.index("--namespace") + 1] == claim["namespace"]
    assert command[command.index("--claim") + 1] == claim["name"]


def test_the_guard_runs_the_checked_in_program_from_its_code_configmap(dev):
    script = REPO / "cluster_programs" / "state_volume_guard.py"
    pod = dev.named("slurm-state-guard-deployment").inputs["spec"]["template"]["spec"]
    code = dev.named("slurm-state-guard-code").inputs
    (container,) = pod["containers"]
    assert container["command"][:3] == ["python3", "-m", "cluster_programs.state_volume_guard"]
    assert code["data"]["state_volume_guard.py"] == script.read_text() and code["immutable"] is True
    assert pod["volumes"] == [{"name": "code", "configMap": {"name": code["metadata"]["name"]}}]


def test_destroy_waits_for_the_guard_as_long_as_it_may_wait(dev):
    guard = dev.named("slurm-state-guard-deployment").inputs
    grace = guard["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace >= 300
    assert int(guard["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]) > grace
    # Foreground (pulumi-kubernetes' default) waits for the pod; background would not.
    assert "pulumi.com/deletionPropagationPolicy" not in guard["metadata"]["annotations"]


def test_prepull_goes_before_the_gpu_nodes_and_the_namespace(dev):
    prepull = dev.named("prepull-ds")
    assert dev.depends_on(prepull, dev.named("nodes-gpu"))
    assert dev.depends_on(prepull, dev.named("storage-slurm-ns"))


def test_login_service_goes_before_its_namespace(dev):
    assert dev.depends_on(dev.named("slurm-login"), dev.named("storage-slurm-ns"))


@pytest.mark.parametrize("user", ["lbc-release", "storage-ebs-csi", "storage-efs-csi"])
def test_pod_identity_agent_outlives_the_controllers_that_use_it(dev, user):
    # They still call AWS on delete (the NLB, EBS volumes), with credentials from the agent.
    assert dev.depends_on(dev.named(user), dev.named("cluster-pod-identity-agent"))


def test_deleting_the_coredns_add_on_leaves_dns_running_until_the_cluster_goes(dev):
    # Nothing orders itself before the add-on any more; `preserve` keeps CoreDNS serving.
    assert dev.named("nodes-coredns").inputs["preserve"] is True
