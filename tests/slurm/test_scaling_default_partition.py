"""A job submitted without a partition on a stack of two pools that both sit at zero, on the real
Slurm 26.05 of the test cluster: the two-pool stack's `slurm` release with slurmctld's metrics on
(tests/support/slurm_cluster.py rendered_with_metrics), started with no worker, so the default
partition `all` spans two NodeSets that match no registered node. The series are scraped by the
real Prometheus 3.5.3 with the stack's scrape jobs (tests/support/local_prometheus.py) and each
pool's triggers (model/builders/autoscaling.py trigger_queries, among the stack's pools) are asked of it.
The first pool's pods come through tests/support/nodeset_pods.py, the operator's scale path.

The tests share one cluster and run in file order."""

from __future__ import annotations

import json
import math
import os
import re
import time

import pytest

from devkit.offline_run import run_program
from model.builders.autoscaling import trigger_queries
from model.checks.gpu_pools import ALL_POOLS_PARTITION, GpuPool
from model.facts import catalog
from tests.support.local_prometheus import LocalPrometheus
from tests.support.local_slurm import LocalSlurm, RootMissing
from tests.support.nodeset_pods import NodeSetPods
from tests.support.slinky_conf import SLURMCTLD_PORT, Release, nodeset_name
from tests.support.slurm_cluster import WALKTHROUGH, rendered_with_metrics

pytestmark = pytest.mark.slurm

# The stack's pools, in its order: `batch` first (the test cluster's workers are the NodeSet that
# sorts first, which is batch's too).
POOLS = (
    GpuPool("batch", catalog.lookup(WALKTHROUGH.name), 2, "us-west-2a", 400, None, 0, 4),
    GpuPool("serve", catalog.lookup(WALKTHROUGH.name), 1, "us-west-2a", 400, None, 0, 2),
)
CONFIG = [
    {
        "name": p.name,
        "instanceType": p.gpu.name,
        "nodeCount": p.node_count,
        "minNodes": 0,
        "maxNodes": p.max_nodes,
    }
    for p in POOLS
]


@pytest.fixture(scope="module")
def two_at_zero(tmp_path_factory):
    """(cluster, the first pool's pods, Prometheus): both NodeSets at 0 replicas."""
    if os.geteuid() != 0:
        pytest.fail(
            "the default partition's scaling tests start a real Slurm cluster in namespaces: they need root"
        )
    graph = run_program("dev", {"gpuPools": json.dumps(CONFIG)})
    assert graph.error is None, graph.error
    release = Release.from_documents(rendered_with_metrics(graph))
    try:
        cluster = LocalSlurm(
            tmp_path_factory.mktemp("default-partition-slurm"),
            release,
            WALKTHROUGH.gpu_model,
            WALKTHROUGH.gpus,
            workers=0,
        )
    except RootMissing as e:
        pytest.fail(str(e))
    assert nodeset_name(cluster.nodeset) == POOLS[0].name
    prometheus = LocalPrometheus(
        tmp_path_factory.mktemp("default-partition-prometheus"),
        f"127.0.0.1:{SLURMCTLD_PORT}",
        pod=release.primary_host,
        node="ip-10-0-2-5",
    )
    try:
        cluster.start()
        prometheus.start()
        prometheus.wait_for_scrapes()
        yield cluster, NodeSetPods(cluster), prometheus
    finally:
        prometheus.stop()
        cluster.stop()


def _submit_without_partition(cluster: LocalSlurm, *args: str) -> str:
    return cluster.run_ok(["sbatch", "--parsable", "-o", "/dev/null", *args]).strip().split(";")[0]


def _wanted_replicas(prometheus: LocalPrometheus) -> dict[str, tuple[dict[str, float], int]]:
    """Per pool, each trigger's answer on a fresh scrape and the replicas the HPA would ask for
    (ceil of each answer, the larger: model/builders/autoscaling.py)."""
    prometheus.wait_for_scrapes()
    wanted = {}
    for pool in POOLS:
        answers = {name: prometheus.query(q)[0].value for name, q in trigger_queries(pool, POOLS).items()}
        wanted[pool.name] = (answers, max(math.ceil(v) for v in answers.values()))
    return wanted


def test_a_job_without_a_partition_goes_to_the_default_partition_over_both_pools(two_at_zero):
    cluster, _, _ = two_at_zero
    shown = dict(
        re.findall(r"(\w+)=(\S*)", cluster.run_ok(["scontrol", "show", "partition", ALL_POOLS_PARTITION]))
    )
    assert (shown["Default"], shown["NodeSets"], shown["TotalNodes"]) == ("YES", "batch,serve", "0")


def test_a_job_without_a_partition_wakes_the_first_pool_and_only_it(two_at_zero):
    cluster, _, prometheus = two_at_zero
    job = _submit_without_partition(cluster, "-N2", "--gres=gpu:1", "--time=2", "--wrap", "true")
    try:
        assert cluster.job_fields(job)["Partition"] == ALL_POOLS_PARTITION
        assert _wanted_replicas(prometheus) == {
            "batch": ({"pending-jobs": 1, "largest-pending-job": 2}, 2),
            "serve": ({"pending-jobs": 0, "largest-pending-job": 0}, 0),
        }
    finally:
        cluster.run_ok(["scancel", job])


def test_the_first_pools_new_nodes_run_the_job_without_a_partition(two_at_zero):
    cluster, pods, prometheus = two_at_zero
    job = _submit_without_partition(cluster, "-N1", "--gres=gpu:1", "--time=2", "--wrap", "srun true")
    try:
        (_, replicas) = _wanted_replicas(prometheus)["batch"]
        new = pods.scale_up(replicas)
        deadline = time.monotonic() + 90
        while (info := cluster.job_fields(job))["JobState"] != "COMPLETED":
            assert time.monotonic() < deadline, f"job {job} {info['JobState']}:\n{cluster.logs()}"
            time.sleep(0.3)
        assert (info["ExitCode"], info["NodeList"]) == ("0:0", new[0])
    finally:
        cluster.run(["scancel", job])
        pods.scale_down(0)
