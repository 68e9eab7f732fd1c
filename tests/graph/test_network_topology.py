"""The network-topology writer (components/network_topology.py) and the partitions it places: a
stack with a pool of a type EC2's topology covers gets the writer and its pool's partition on the
tree; a pool on a Capacity Block gets the block; a stack of uncovered pools (the dev stack's g6)
is as it was. The writer's rules are specified in tests/unit/cluster_programs/test_network_topology.py."""

import json

import pytest

from devkit.offline_run import run_program
from model.builders import topology
from tests.support.capacity_blocks import BLOCK, with_block

MIXED = [
    {"name": "infer", "instanceType": "g6.12xlarge", "nodeCount": 1},
    {"name": "train", "instanceType": "p5.48xlarge", "nodeCount": 2},
]


@pytest.fixture(scope="module")
def mixed():
    return run_program("dev", {"gpuPools": MIXED})


@pytest.fixture(scope="module")
def block():
    return run_program(
        "dev",
        {"gpuInstanceType": "p5.48xlarge", "gpuCapacityReservationId": BLOCK},
        account=with_block(),
    )


def _partitions(graph) -> dict:
    return graph.named("slurm-release").inputs["values"]["partitions"]


def _writer_config(graph) -> dict:
    (container,) = graph.named("network-topology-deployment").inputs["spec"]["template"]["spec"]["containers"]
    args = container["command"]
    return json.loads(args[args.index("--config") + 1])


def test_the_dev_stacks_g6_pool_gets_no_writer_and_no_topology(dev):
    assert not [r for r in dev.resources if r.name.startswith("network-topology")]
    assert all("Topology" not in p["configMap"] for p in _partitions(dev).values())


def test_a_covered_pools_partition_is_on_the_tree_an_uncovered_ones_on_the_default(mixed):
    partitions = _partitions(mixed)
    assert partitions["train"]["configMap"]["Topology"] == "tree"
    assert "Topology" not in partitions["infer"]["configMap"]
    assert "Topology" not in partitions["all"]["configMap"]


def test_the_writer_places_the_covered_pool_on_the_tree_and_leaves_the_other_flat(mixed):
    placements = {p["pool"]: p["kind"] for p in _writer_config(mixed)["placements"]}
    assert placements == {"infer": "flat", "train": "tree"}


def test_the_writer_writes_the_charts_extra_config_map_the_controller_mounts(mixed):
    config = _writer_config(mixed)
    assert (config["namespace"], config["configMap"], config["key"]) == (
        "slurm",
        "slurm-config-extra",
        "topology.yaml",
    )


def test_the_chart_values_never_set_topology_yaml_so_helm_leaves_the_writers_key(mixed):
    assert "topology.yaml" not in mixed.named("slurm-release").inputs["values"].get("configFiles", {})


def test_a_capacity_block_pool_is_on_its_block_sized_by_the_reservation(block):
    (place,) = _writer_config(block)["placements"]
    assert place == {"pool": "slinky", "kind": "block", "block": BLOCK, "block_size": 2}
    (partition,) = _partitions(block).values()
    assert partition["configMap"]["Topology"] == "block"


def test_the_writer_may_get_and_patch_only_its_one_config_map_and_create_config_maps_in_its_namespace(mixed):
    role = mixed.named("network-topology-role").inputs
    assert role["metadata"]["namespace"] == "slurm"
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": ["slurm-config-extra"],
            "verbs": ["get", "patch"],
        },
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
    ]


def test_the_writers_pod_is_ready_only_after_a_first_pass_with_the_same_configuration(mixed):
    # What the Slurm release waits for is the Deployment's pod ready: after its init container's
    # one pass has put topology.yaml in the Controller's ConfigMap.
    spec = mixed.named("network-topology-deployment").inputs["spec"]["template"]["spec"]
    (first,) = spec["initContainers"]
    assert first["command"][-1] == "--once"
    assert json.loads(first["command"][first["command"].index("--config") + 1]) == _writer_config(mixed)


def test_the_config_map_the_writer_creates_is_owned_by_the_slurm_release_so_helm_adopts_it(mixed):
    from devkit.chart_render import release_request

    request = release_request(mixed.named("slurm-release"))
    config = _writer_config(mixed)
    assert (config["release"], config["namespace"]) == (request["release_name"], request["namespace"])


def test_the_writer_may_list_and_annotate_nodes_and_nothing_else_cluster_wide(mixed):
    role = mixed.named("network-topology-cluster-role").inputs
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "patch"]}]


def test_the_writer_has_no_aws_identity(mixed):
    associations = mixed.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert topology.WRITER not in {a.inputs["serviceAccount"] for a in associations}


def test_the_slurm_release_waits_for_the_writer(mixed):
    assert mixed.named("network-topology-deployment").urn in mixed.named("slurm-release").dependencies


def test_the_writers_pod_is_hardened_and_bounded_like_every_program_pod(mixed):
    from model.builders import pod_hardening
    from tests.support import pod_hardening as ph

    workload = f"Deployment/{topology.WRITER}"
    pods = ph.graph_pods(mixed)
    problems = pod_hardening.problems(ph.findings(pods), ph.accepted(charts=False))
    assert [p for p in problems if p.startswith(workload)] == []
    assert pod_hardening.unbounded(pods[workload]) == []


def test_the_writers_objects_validate_against_the_kubernetes_schema(mixed):
    import kubernetes_validate

    objects = [
        r
        for r in mixed.resources
        if r.name.startswith("network-topology-") and r.type.startswith("kubernetes:")
    ]
    assert len(objects) == 7  # code, account, role, cluster role, their two bindings, the Deployment
    for r in objects:
        kubernetes_validate.validate(dict(r.inputs), "1.36", strict=True)


def test_the_config_map_the_writer_patches_is_one_the_rendered_controller_mounts(mixed):
    from devkit.chart_render import render_graph_releases

    objects = render_graph_releases(mixed)["slurm"]
    (controller,) = [o for o in objects if o["kind"] == "Controller"]
    assert {"name": topology.CONFIG_MAP} in controller["spec"]["configFileRefs"]
    assert any(o["kind"] == "ConfigMap" and o["metadata"]["name"] == topology.CONFIG_MAP for o in objects)
