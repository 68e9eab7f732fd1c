"""Jobs placed by the network on the real Slurm 26.05 of the test cluster (tests/support/local_slurm.py),
with the Controller's topology.yaml and each node's place as the stack's network-topology writer
gives them (cluster_programs/network_topology.py, over the placements of model/builders/topology.py).

The cluster: the `slurm` release of a two-pool stack as the program renders it, `batch` of
g6e.12xlarge (a type EC2 places: model/facts/instance_topology.py) with four dynamic nodes under
two bottom-layer network nodes (two per network node), and `serve` of the walkthrough's
g6.12xlarge, which EC2 gives no place, with two. The program puts batch's partition on the tree
and leaves serve's and `all` on the cluster default, flat (the partition's `Topology=`,
https://slurm.schedmd.com/slurm.conf.html#OPT_Topology). batch's four nodes also sit in two
Capacity Blocks of two, so that one NodeSet shows the block too, through a partition of the test's
own over batch's nodes on the block topology; another of the test's own puts serve's nodes on the
tree. topology.yaml is where the writer keeps it, the key it owns in the chart's config ConfigMap
that the Controller mounts (model/builders/topology.py CONFIG_MAP, CONFIG_KEY).

How a node gets its place, as the Slinky operator v1.2.1 gives it (read at that tag):
- at its pod's start: the pod-binding webhook copies the Kubernetes node's
  `topology.slinky.slurm.net/spec` annotation onto the pod (internal/webhook/pod_binding_webhook.go),
  the pod's POD_TOPOLOGY variable reads it (internal/builder/workerbuilder/worker_app.go) and the
  slurmd image's entrypoint appends `Topology=<value>` to slurmd's --conf (SlinkyProject/containers
  schedmd/slurm/26.05/ubuntu24.04/files/usr/local/bin/slurmd-entrypoint.sh): the four first nodes.
- after it registered: the NodeSet controller's syncSlurmTopology
  (internal/controller/nodeset/nodeset_sync.go) reads the annotation of the Kubernetes node under
  each pod and, where the Slurm node's topology differs, UpdateNodeTopology
  (internal/controller/nodeset/slurmcontrol/slurmcontrol.go) sets the node's `topology_str`
  through slurmrestd, the field `scontrol update nodename=<node> topology=<value>` sets: the node
  that joins later, whose pod started before the writer annotated its Kubernetes node.

Busy nodes are held by exclusive jobs, so that the placement a test asks for differs from the one
Slurm would pick on a flat network (the lowest free nodes). The tests share one cluster and run in
file order; each frees what it holds."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import subprocess
import time
from typing import Iterator

import pytest

from cluster_programs import network_topology as writer
from devkit.offline_run import run_program
from model.builders import topology
from model.facts.catalog import CATALOG
from model.facts.instance_topology import NETWORK_NODE_LABELS
from tests.support import capacity_blocks
from tests.support.local_slurm import LocalSlurm, RootMissing
from tests.support.nodeset_pods import NodeSetPods, Pod
from tests.support.paths import REPO
from tests.support.slinky_conf import Release
from tests.support.slurm_cluster import WALKTHROUGH

pytestmark = pytest.mark.slurm

PLACED, UNPLACED = "batch", "serve"
PLACED_TYPE = CATALOG["g6e.12xlarge"]
CONFIG = [
    {"name": PLACED, "instanceType": PLACED_TYPE.name, "nodeCount": 4, "minNodes": 0, "maxNodes": 8},
    {"name": UNPLACED, "instanceType": WALKTHROUGH.name, "nodeCount": 2, "minNodes": 0, "maxNodes": 2},
]
# The test's own partitions over the same NodeSets: batch's nodes on the block topology, and
# serve's on the tree (what the flat topology spares the pools EC2 gives no place).
BLOCK_PARTITION, UNPLACED_ON_TREE = "batch-blocks", "serve-tree"
OWN_PARTITIONS = {
    BLOCK_PARTITION: (PLACED, topology.BLOCK),
    UNPLACED_ON_TREE: (UNPLACED, topology.TREE),
}

# Network node ids as EC2 writes them (`nn-` and hex digits: EC2 API Reference, InstanceTopology),
# top layer first: one top and one middle node over two bottom-layer nodes.
TOP, MIDDLE = "nn-1a0000000000000a1", "nn-2b0000000000000b1"
LEAF_A, LEAF_B = "nn-3c0000000000000c1", "nn-3c0000000000000c2"
# Each Capacity Block as the writer's placement of a pool on it: two instances each.
BLOCK_A = topology.PoolPlacement(PLACED, topology.BLOCK, "cr-0a1b2c3d4e5f60001", 2)
BLOCK_B = topology.PoolPlacement(PLACED, topology.BLOCK, "cr-0a1b2c3d4e5f60002", 2)
# batch's nodes: the bottom-layer network node each sits under (its EKS labels) and its block.
# batch-4 joins later, under the first network node, in the first block.
PLACES = {
    "batch-0": (LEAF_A, BLOCK_A),
    "batch-1": (LEAF_A, BLOCK_A),
    "batch-2": (LEAF_B, BLOCK_B),
    "batch-3": (LEAF_B, BLOCK_B),
}
JOINING = "batch-4"
JOINING_PLACE = (LEAF_A, BLOCK_A)
# batch-5 joins last, under a network node no node had before: the writer's next pass adds it to
# topology.yaml, and annotates the node only on the pass after (writer.plan).
LEAF_C = "nn-3c0000000000000c3"
UNDER_NEW_SWITCH = "batch-5"

# A bound on anything the cluster does on its own (a job starting and ending, a node
# registering): far above what it takes on this machine, so only a broken cluster reaches it.
BOUND_S = 90


def labels(leaf: str) -> dict[str, str]:
    """A node's network-node labels as EKS sets them (model/facts/instance_topology.py)."""
    return dict(zip(NETWORK_NODE_LABELS, (TOP, MIDDLE, leaf), strict=True))


def annotation(place: tuple[str, topology.PoolPlacement]) -> str:
    """The writer's `topology.slinky.slurm.net/spec` value for a node of a placement under `leaf`."""
    leaf, placement = place
    return writer.node_spec(placement.as_config(), labels(leaf), NETWORK_NODE_LABELS)


def topology_file(*new_leaves: str) -> str:
    """The Controller's topology.yaml: the writer's skeleton for the two Capacity Blocks and the
    unplaced pool, over every switch path batch's nodes have (and those of `new_leaves`)."""
    leaves = [*(leaf for leaf, _ in PLACES.values()), *new_leaves]
    paths = [writer.switch_path(labels(leaf), NETWORK_NODE_LABELS) for leaf in leaves]
    placements = [BLOCK_A, BLOCK_B, topology.PoolPlacement(UNPLACED, topology.FLAT)]
    return writer.render(writer.skeleton([p.as_config() for p in placements], paths))


def rendered_release(graph) -> Release:
    """The stack's `slurm` release as the program renders it."""
    from devkit.chart_render import RELEASE_TYPE, kube_version, release_request, render

    (chart,) = [r for r in graph.of_type(RELEASE_TYPE) if release_request(r)["release_name"] == "slurm"]
    request = release_request(chart)
    return Release.from_documents(
        render(
            request["chart"],
            request["version"],
            request["values"],
            "slurm",
            request["namespace"],
            kube_version(graph),
        )
    )


def placed_release(graph) -> Release:
    """The stack's `slurm` release with the writer's topology.yaml in the Controller's config
    ConfigMap (its configFileRefs name it; the operator's webhook knows the file:
    internal/webhook/controller_webhook.go) and the test's own partitions."""
    release = rendered_release(graph)
    controller = copy.deepcopy(release.controller)
    controller["spec"]["extraConf"] += "".join(
        f"\nPartitionName={name} Nodes={nodeset} State=UP Topology={kind}"
        for name, (nodeset, kind) in OWN_PARTITIONS.items()
    )
    config_maps = copy.deepcopy(release.config_maps)
    assert {"name": topology.CONFIG_MAP} in controller["spec"]["configFileRefs"]
    config_maps[topology.CONFIG_MAP].setdefault("data", {})[topology.CONFIG_KEY] = topology_file()
    return Release(controller, release.nodesets, config_maps, release.accountings)


@pytest.fixture(scope="module")
def graph():
    graph = run_program("dev", {"gpuPools": json.dumps(CONFIG)})
    assert graph.error is None, graph.error
    return graph


@pytest.fixture(scope="module")
def placed(tmp_path_factory, graph) -> Iterator[LocalSlurm]:
    if os.geteuid() != 0:
        pytest.fail("the placement tests start a real Slurm cluster in namespaces: they need root")
    try:
        cluster = LocalSlurm(
            tmp_path_factory.mktemp("topology-slurm"),
            placed_release(graph),
            WALKTHROUGH.gpu_model,
            WALKTHROUGH.gpus,
            workers={PLACED: len(PLACES), UNPLACED: 2},
            gpus_of={PLACED: (PLACED_TYPE.gpu_model, PLACED_TYPE.gpus)},
        )
    except RootMissing as e:
        pytest.fail(str(e))
    cluster.pod_topology.update({node: annotation(place) for node, place in PLACES.items()})
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def _hostnames(cluster: LocalSlurm, nodelist: str) -> set[str]:
    return set(cluster.run_ok(["scontrol", "show", "hostnames", nodelist]).split())


def _node_topology(cluster: LocalSlurm, node: str) -> str:
    found = re.search(r"\bTopology=(\S*)", cluster.run_ok(["scontrol", "show", "node", "-o", node]))
    return found.group(1) if found else ""


def _submit(cluster: LocalSlurm, partition: str, *args: str) -> subprocess.CompletedProcess:
    return cluster.run(["sbatch", "--parsable", "-o", "/dev/null", "-p", partition, *args])


def _ran_on(cluster: LocalSlurm, partition: str, *args: str) -> set[str]:
    """The nodes a job of `args` on `partition` ran on, once it completed."""
    submitted = _submit(cluster, partition, *args, "--wrap", "srun true")
    assert submitted.returncode == 0, f"sbatch {args} on {partition}: {submitted.stderr}"
    job = submitted.stdout.strip().split(";")[0]
    info = cluster.wait_for_job(job, BOUND_S)
    state = re.search(r"JobState=(\S+)", info).group(1)
    assert state == "COMPLETED", f"job {job} on {partition} ended {state}:\n{info}"
    return _hostnames(cluster, re.search(r"\bNodeList=(\S+)", info).group(1))


@contextlib.contextmanager
def _held(cluster: LocalSlurm, nodes: list[str]) -> Iterator[None]:
    """`nodes` busy (one exclusive job each, running), freed afterwards."""
    jobs = []
    try:
        for node in nodes:
            partition = PLACED if node.startswith(PLACED) else UNPLACED
            out = cluster.run_ok(
                ["sbatch", "--parsable", "-o", "/dev/null", "-p", partition, "--exclusive", "-w", node]
                + ["--wrap", "sleep 600"],
            )
            jobs.append(out.strip().split(";")[0])
        deadline = time.monotonic() + BOUND_S
        while not all(cluster.job_fields(job)["JobState"] == "RUNNING" for job in jobs):
            assert time.monotonic() < deadline, f"jobs holding {nodes} not running:\n{cluster.logs()}"
            time.sleep(0.3)
        yield
    finally:
        if jobs:
            cluster.run(["scancel", *jobs])
            cluster.wait_for_states({node: "idle" for node in nodes}, BOUND_S)


def test_each_node_has_the_place_its_annotation_names(placed):
    assert {node: _node_topology(placed, node) for node in PLACES} == {
        "batch-0": f"tree:{LEAF_A},block:{BLOCK_A.block}",
        "batch-1": f"tree:{LEAF_A},block:{BLOCK_A.block}",
        "batch-2": f"tree:{LEAF_B},block:{BLOCK_B.block}",
        "batch-3": f"tree:{LEAF_B},block:{BLOCK_B.block}",
    }


def test_a_two_node_job_asking_for_one_switch_lands_under_one_switch(placed):
    # batch-0 busy: on a flat network the job would get the lowest free nodes, batch-[1-2], one
    # under each switch; the only switch with two free nodes is LEAF_B's.
    with _held(placed, ["batch-0"]):
        assert _ran_on(placed, PLACED, "-N2", "--switches=1") == {"batch-2", "batch-3"}


def test_a_block_aligned_job_on_the_block_topology_stays_in_its_block(placed):
    # batch-0 busy: a two-node segment fits only in the second block, batch-[2-3].
    with _held(placed, ["batch-0"]):
        assert _ran_on(placed, BLOCK_PARTITION, "-N2", "--segment=2") == {"batch-2", "batch-3"}


def _batch_pods(cluster: LocalSlurm) -> NodeSetPods:
    """batch's NodeSet as the operator scales it (tests/support/nodeset_pods.py), with its pods so far."""
    pods = NodeSetPods(cluster)
    for node in cluster.workers:
        if node.startswith(f"{PLACED}-"):
            ordinal = int(node.rpartition("-")[2])
            pods.pods[node] = Pod(ordinal, node, f"{pods.nodeset['metadata']['name']}-{ordinal}")
    return pods


def test_a_node_that_joins_later_gets_its_place_and_is_used(placed):
    (new,) = _batch_pods(placed).scale_up(len(PLACES) + 1)
    assert new == JOINING
    placed.wait_for_states({JOINING: "idle"}, BOUND_S)
    # The operator's syncSlurmTopology, once the writer has annotated the Kubernetes node.
    placed.run_ok(["scontrol", "update", f"nodename={JOINING}", f"topology={annotation(JOINING_PLACE)}"])
    assert _node_topology(placed, JOINING) == annotation(JOINING_PLACE)
    # Free: batch-1 and the new node under LEAF_A, batch-3 under LEAF_B: the one switch with two
    # free nodes is the new node's.
    with _held(placed, ["batch-0", "batch-2"]):
        assert _ran_on(placed, PLACED, "-N2", "--switches=1") == {"batch-1", JOINING}


def test_a_node_under_a_new_network_node_gets_its_place_once_the_controller_knows_the_switch(placed):
    (new,) = _batch_pods(placed).scale_up(len(PLACES) + 2)
    assert new == UNDER_NEW_SWITCH
    placed.wait_for_states({UNDER_NEW_SWITCH: "idle"}, BOUND_S)
    place = annotation((LEAF_C, topology.PoolPlacement(PLACED, topology.TREE)))
    # A place naming a switch the Controller does not know is refused: why the writer writes the
    # switch a pass before it annotates the node.
    early = placed.run(["scontrol", "update", f"nodename={UNDER_NEW_SWITCH}", f"topology={place}"])
    assert (early.returncode, _node_topology(placed, UNDER_NEW_SWITCH)) == (1, "")
    placed.replace_controller({topology.CONFIG_KEY: topology_file(LEAF_C)})
    placed.run_ok(["scontrol", "update", f"nodename={UNDER_NEW_SWITCH}", f"topology={place}"])
    assert _node_topology(placed, UNDER_NEW_SWITCH) == place
    # Only the two newest nodes free, under LEAF_A and LEAF_C: the job spans them through MIDDLE.
    with _held(placed, list(PLACES)):
        assert _ran_on(placed, PLACED, "-N2") == {JOINING, UNDER_NEW_SWITCH}


def test_a_partition_of_nodes_without_a_place_runs_multi_node_jobs_on_the_flat_topology(placed):
    assert _ran_on(placed, UNPLACED, "-N2") == {"serve-0", "serve-1"}


def test_the_shipped_jobs_switch_request_on_the_flat_topology_runs_without_waiting(placed):
    # The two-node jobs' `#SBATCH --switches=<count>@<wait>` (jobs/nccl-allreduce.sbatch): on a
    # partition of nodes without a place the request is no constraint, so the job starts at once,
    # well within BOUND_S, which is shorter than the wait it names.
    (request,) = re.findall(
        r"^#SBATCH (--switches=\S+)$", (REPO / "jobs/nccl-allreduce.sbatch").read_text(), re.M
    )
    assert _ran_on(placed, UNPLACED, "-N2", request) == {"serve-0", "serve-1"}


def test_the_same_nodes_on_the_tree_topology_are_refused_multi_node_jobs(placed):
    # What the flat topology spares the pools EC2 gives no place (and the `all` partition).
    refused = _submit(placed, UNPLACED_ON_TREE, "-N2", "--wrap", "true")
    assert (refused.returncode, refused.stderr.strip()) == (
        1,
        "sbatch: error: Batch job submission failed: Requested node configuration is not available",
    )


# The last three tests replace the Controller with a first install's (a new, empty state volume):
# they run after the others.


class BeforeTheRelease:
    """The Kubernetes API as the writer's first pass finds it on a first install: no GPU node yet,
    and no `slurm-config-extra` (the release, which creates it, waits for this pass)."""

    def __init__(self) -> None:
        self.created: list[dict] = []

    def find(self, path: str) -> None:
        return None

    def get(self, path: str) -> dict:
        assert path.startswith("/api/v1/nodes?"), path
        return {"items": []}

    def create(self, path: str, body: dict) -> dict:
        self.created.append(body)
        return body


def first_install(cluster: LocalSlurm, graph, with_writer: bool) -> dict[str, str | None]:
    """The Controller's files on a first install: slurm.conf as the stack renders it (without the
    test's own partitions) and the release's config ConfigMap, with topology.yaml as the stack's
    writer creates it in its first pass (its pod's init container, with the configuration the
    stack gives it), which the release adopts; without the writer's pass, the chart's ConfigMap
    alone, as the stack rendered it before (no topology.yaml)."""
    release = rendered_release(graph)
    files: dict[str, str | None] = {"slurm.conf": cluster.slurm_conf(release), topology.CONFIG_KEY: None}
    files.update(release.config_maps[topology.CONFIG_MAP].get("data") or {})
    if with_writer:
        spec = graph.named("network-topology-deployment").inputs["spec"]["template"]["spec"]
        (first,) = spec["initContainers"]
        config = json.loads(first["command"][first["command"].index("--config") + 1])
        api = BeforeTheRelease()
        writer.run_once(api, config)
        ((created),) = api.created
        assert created["metadata"]["name"] == topology.CONFIG_MAP
        files.update(created["data"])
    return files


def test_a_first_install_without_topology_yaml_does_not_start_the_controller(placed, graph):
    # The stack as rendered before the writer's first pass ran ahead of the release: batch's
    # partition names the tree, which no topology.yaml holds.
    refused = placed.install_controller(first_install(placed, graph, with_writer=False))
    assert "Requested topology configuration is not available" in refused, refused


def test_a_first_install_starts_the_controller_on_the_writers_first_pass(placed, graph):
    # The flat default and the tree's root alone: slurmctld starts, batch's partition on the tree.
    assert placed.install_controller(first_install(placed, graph, with_writer=True)) == ""
    partition = placed.run_ok(["scontrol", "show", "partition", "-o", PLACED])
    assert re.search(r"\bTopology=(\S+)", partition).group(1) == topology.TREE


def test_a_capacity_block_stacks_first_install_starts_the_controller_on_its_block_with_no_node(placed):
    # One pool of p5.48xlarge on a Capacity Block of two: its partition on the block topology,
    # whose one block holds no node until the first node registers with its place.
    graph = run_program(
        "dev",
        {"gpuInstanceType": "p5.48xlarge", "gpuCapacityReservationId": capacity_blocks.BLOCK},
        account=capacity_blocks.with_block(),
    )
    assert graph.error is None, graph.error
    assert placed.install_controller(first_install(placed, graph, with_writer=True)) == ""
    partitions = placed.run_ok(["scontrol", "show", "partition", "-o"]).splitlines()
    assert [re.search(r"\bTopology=(\S+)", p).group(1) for p in partitions if "Topology=" in p] == [
        topology.BLOCK
    ]
