"""A pool that scales to zero and back, on the real Slurm 26.05 of the test cluster: the dev stack's
`slurm` release with slurmctld's metrics on (tests/support/slurm_cluster.py rendered_with_metrics),
started with no worker at all, as the operator v1.2.1 leaves a NodeSet at 0 replicas: slurm.conf
still carries `NodeSet=<nodeset> Feature=<nodeset>` and `PartitionName=<nodeset> Nodes=<nodeset>`
(controller_config.go buildNodeSetConf writes them whatever the replica count), and no registered
dynamic node has the feature. The NodeSet's pods come and go through tests/support/nodeset_pods.py,
the operator's scale path replayed; the series the KEDA triggers read are scraped by the real
Prometheus 3.5.3 (tests/support/local_prometheus.py) with the stack's scrape jobs, and the triggers'
PromQL (model/builders/autoscaling.py) is asked of it.

The tests share one cluster and run in file order: each leaves the NodeSet at zero pods and the
queue empty for the next."""

from __future__ import annotations

import math
import os
import re
import time

import pytest

from model.builders.autoscaling import trigger_queries
from model.builders.slurm_values import pool_partition
from model.checks.gpu_pools import GpuPool
from model.facts import catalog
from tests.support.local_prometheus import LocalPrometheus
from tests.support.local_slurm import LocalSlurm, RootMissing
from tests.support.nodeset_pods import NodeSetPods, scale_in_reason
from tests.support.slinky_conf import SLURMCTLD_PORT, Release, nodeset_name
from tests.support.slurm_cluster import WALKTHROUGH, rendered_with_metrics

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def zero(tmp_path_factory, dev):
    """(cluster, its NodeSet's pods, Prometheus, the partition): the NodeSet at 0 replicas."""
    if os.geteuid() != 0:
        pytest.fail("the scaling tests start a real Slurm cluster in namespaces: they need root")
    release = Release.from_documents(rendered_with_metrics(dev))
    try:
        cluster = LocalSlurm(
            tmp_path_factory.mktemp("scaling-slurm"),
            release,
            WALKTHROUGH.gpu_model,
            WALKTHROUGH.gpus,
            workers=0,
        )
    except RootMissing as e:
        pytest.fail(str(e))
    prometheus = LocalPrometheus(
        tmp_path_factory.mktemp("scaling-prometheus"),
        f"127.0.0.1:{SLURMCTLD_PORT}",
        pod=release.primary_host,
        node="ip-10-0-2-5",
    )
    try:
        cluster.start()
        prometheus.start()
        prometheus.wait_for_scrapes()
        yield cluster, NodeSetPods(cluster), prometheus, nodeset_name(cluster.nodeset)
    finally:
        prometheus.stop()
        cluster.stop()


def _submit(cluster: LocalSlurm, partition: str, *args: str) -> str:
    return (
        cluster.run_ok(["sbatch", "--parsable", "-p", partition, "-o", "/dev/null", *args])
        .strip()
        .split(";")[0]
    )


def _pool(partition: str) -> GpuPool:
    """The dev stack's pool made an autoscaling one, 0 to 4 nodes: its triggers are the ones the
    program gives KEDA for it."""
    pool = GpuPool(partition, catalog.lookup(WALKTHROUGH.name), 2, "us-west-2a", 400, None, 0, 4)
    assert pool_partition(pool) == partition
    return pool


def _wanted_replicas(prometheus: LocalPrometheus, partition: str) -> tuple[dict[str, float], int]:
    """Each trigger's answer on a fresh scrape, and the replicas the HPA would ask for: with
    metricType AverageValue and a target of 1 node, ceil(answer) per trigger, the larger of them
    (model/builders/autoscaling.py; Kubernetes HPA algorithm)."""
    prometheus.wait_for_scrapes()
    answers = {
        name: prometheus.query(query)[0].value for name, query in trigger_queries(_pool(partition)).items()
    }
    return answers, max(math.ceil(v) for v in answers.values())


def _wait_state(cluster: LocalSlurm, job: str, wanted: str, timeout: float = 60) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while (info := cluster.job_fields(job))["JobState"] != wanted:
        assert time.monotonic() < deadline, f"job {job} {info['JobState']}, not {wanted}:\n{cluster.logs()}"
        time.sleep(0.3)
    return info


def test_a_pool_at_zero_is_a_partition_over_its_nodeset_with_no_node(zero):
    cluster, _, _, partition = zero
    conf = cluster.release.slurm_conf().splitlines()
    assert f"NodeSet={partition} Feature={partition}" in conf
    assert any(line.startswith(f"PartitionName={partition} Nodes={partition} ") for line in conf)
    shown = dict(re.findall(r"(\w+)=(\S*)", cluster.run_ok(["scontrol", "show", "partition", partition])))
    assert (shown["NodeSets"], shown["Nodes"], shown["TotalNodes"], shown["TotalCPUs"]) == (
        partition,
        "(null)",
        "0",
        "0",
    )


def test_a_gpu_job_for_a_pool_at_zero_is_accepted_and_stays_pending_for_partition_config(zero):
    """Slurm takes the job (EnforcePartLimits is unset in the operator's slurm.conf, so a partition
    limit does not refuse it at submit: SchedMD/slurm src/slurmctld/job_mgr.c _valid_job_part at
    slurm-26-05-3-1) and keeps it pending: job_limits_check's _part_access_check finds the job's
    1 CPU above the partition's 0 (ESLURM_TOO_MANY_REQUESTED_CPUS), which it reports as
    WAIT_PART_CONFIG, the reason string "PartitionConfig" (src/common/job_state_reason.c)."""
    cluster, _, _, partition = zero
    job = _submit(cluster, partition, "-N1", "--gres=gpu:1", "--time=2", "--wrap", "true")
    try:
        time.sleep(2)  # scheduling passes: submit-time and the main scheduler's
        assert cluster.run_ok(["squeue", "-h", "-j", job, "-o", "%T %r"]).split() == [
            "PENDING",
            "PartitionConfig",
        ]
    finally:
        cluster.run_ok(["scancel", job])


def test_an_empty_queue_asks_a_pool_at_zero_for_no_node(zero):
    _, _, prometheus, partition = zero
    answers, replicas = _wanted_replicas(prometheus, partition)
    assert answers == {"pending-jobs": 0, "largest-pending-job": 0} and replicas == 0


def test_the_triggers_read_a_two_node_job_pending_on_a_pool_at_zero_as_two_nodes(zero):
    """The real slurmctld's /metrics/partitions, scraped by the stack's job into the real
    Prometheus, and the triggers' PromQL on it: one pending job (pending-jobs: 1 node), two nodes
    for the largest (largest-pending-job: 2), so KEDA wakes the pool and the HPA asks for 2."""
    cluster, _, prometheus, partition = zero
    job = _submit(cluster, partition, "-N2", "--gres=gpu:1", "--time=2", "--wrap", "true")
    try:
        answers, replicas = _wanted_replicas(prometheus, partition)
        assert answers == {"pending-jobs": 1, "largest-pending-job": 2} and replicas == 2
    finally:
        cluster.run_ok(["scancel", job])


def test_new_dynamic_nodes_with_the_nodeset_feature_run_the_pending_job(zero):
    """What KEDA's answer brings: the NodeSet at the replicas the triggers asked for, each new pod's
    slurmd registering with -Z and the NodeSet's Features and Gres (slinky_conf.slurmd_conf), and
    the job pending on the empty partition runs there; then the pool goes back to zero."""
    cluster, pods, prometheus, partition = zero
    job = _submit(cluster, partition, "-N2", "--gres=gpu:1", "--time=2", "--wrap", "srun true")
    try:
        _, replicas = _wanted_replicas(prometheus, partition)
        new = pods.scale_up(replicas)
        info = _wait_state(cluster, job, "COMPLETED", 90)
        assert info["ExitCode"] == "0:0"
        assert sorted(cluster.run_ok(["scontrol", "show", "hostnames", info["NodeList"]]).split()) == sorted(
            new
        )
    finally:
        cluster.run(["scancel", job])
        pods.scale_down(0)


def test_scale_in_takes_the_idle_node_and_leaves_the_busy_one_running(zero):
    """2 -> 1 with a job on one node: the node with no deadline goes (ActivePods.Less), and the busy
    one is neither drained nor stopped."""
    cluster, pods, _, partition = zero
    pods.scale_up(2)
    cluster.wait_for_states({n: "idle" for n in pods.pods}, 60)
    job = _submit(cluster, partition, "-N1", "-w", f"{partition}-0", "--time=2", "--wrap", "sleep 30")
    try:
        _wait_state(cluster, job, "RUNNING")
        pods.scale_down(1)
        assert list(pods.pods) == [f"{partition}-0"]
        assert "DRAIN" not in pods.node_state(f"{partition}-0")
        assert cluster.job_fields(job)["JobState"] == "RUNNING"
    finally:
        cluster.run(["scancel", job])
        pods.scale_down(0)


def test_scale_in_drains_a_busy_node_and_stops_its_pod_only_after_the_job_completes(zero, tmp_path):
    """2 -> 0 with a job on one node: the idle node is drained and its pod deleted at the next
    reconcile; the busy node is drained with the operator's reason (no new job starts there), its
    slurmd runs on while the job does, reconcile after reconcile, the job completes, and the first
    reconcile after that deletes its pod.

    The job runs until the test lets it end (it waits for a file), not for a number of seconds:
    a job that ends by the clock can end between two reconciles or inside one (between the state
    a decision reads and the state it is logged with), and for a moment after it ends its node is
    COMPLETING (slurmctld waits for slurmd's epilog message, later under load), which
    IsNodeDrained counts as busy as well. Which of those a run sees depends on the machine's
    load, not on the operator's logic; here every reconcile before the release sees the job
    RUNNING, and the one after sees the node drained and idle."""
    cluster, pods, _, partition = zero
    pods.log.clear()
    pods.scale_up(2)
    cluster.wait_for_states({n: "idle" for n in pods.pods}, 60)
    busy, idle = f"{partition}-0", f"{partition}-1"
    release = tmp_path / "job-may-end"  # under the temporary tree every pod shares (local_slurm.py)
    job = _submit(
        cluster,
        partition,
        "-N1",
        "-w",
        busy,
        "--time=2",
        "--wrap",
        f"until [ -e {release} ]; do sleep 0.2; done",
    )
    try:
        _wait_state(cluster, job, "RUNNING")
        for _ in range(3):  # drain both; delete the idle one; keep the busy one
            pods.reconcile_scale_down(0)
        assert cluster.job_fields(job)["JobState"] == "RUNNING"
        held = len(pods.log)
        release.touch()
        info = _wait_state(cluster, job, "COMPLETED")
        cluster.wait_for_states({busy: "drained"}, 30)  # the epilog message in: no longer COMPLETING
        pods.scale_down(0)
    finally:
        release.touch()
    assert (info["JobState"], info["ExitCode"], info["Restarts"]) == ("COMPLETED", "0:0", "0")
    first, second, third = pods.log[:2], pods.log[2:4], pods.log[4:held]
    assert [(d.node, d.deleted) for d in first] == [(idle, False), (busy, False)]
    assert [(d.node, d.deleted) for d in second] == [(idle, True), (busy, False)]
    assert [(d.node, d.deleted) for d in third] == [(busy, False)]
    assert [(d.node, d.deleted) for d in pods.log[held:]] == [(busy, True)]
    waiting = [d for d in pods.log if d.node == busy and not d.deleted]
    assert all(
        "DRAIN" in d.node_state and {"ALLOCATED", "MIXED"} & set(d.node_state.split("+")) for d in waiting
    ), waiting
    assert [d.node for d in pods.log if d.deleted] == [idle, busy]
    reason = cluster.run_ok(["sinfo", "-h", "-n", busy, "-o", "%E"]).strip()
    assert reason == "slurm-operator: Pod is terminating"  # the preStop's, after the drain's
    assert scale_in_reason(pods.namespace, f"{cluster.nodeset['metadata']['name']}-0") in (
        cluster.dir / "log-controller/slurmctld.log"
    ).read_text(errors="replace")


def test_after_a_scale_in_to_zero_a_job_pends_on_the_drained_records_and_still_wakes_the_pool(zero):
    """The operator keeps a scaled-in pod's Slurm node (StatefulSet mode prunes no record), DOWN and
    drained with the preStop's reason: the partition is no longer empty, and a job pends for
    WAIT_NODE_NOT_AVAIL, whose text slurmctld spells out (SchedMD/slurm src/slurmctld/
    job_scheduler.c, slurm-26-05-3-1, "Nodes required for job are DOWN, DRAINED ..."). The
    triggers count the pending job all the same."""
    cluster, pods, prometheus, partition = zero
    assert not pods.pods
    job = _submit(cluster, partition, "-N1", "--gres=gpu:1", "--time=2", "--wrap", "true")
    try:
        time.sleep(2)
        # WAIT_NODE_NOT_AVAIL either as its name (job_state_reason.c "ReqNodeNotAvail") with the nodes
        # node_scheduler.c appends ("UnavailableNodes:%s"), or as the text job_scheduler.c spells out:
        # which one squeue shows depends on which scheduling pass looked at the job last.
        reason = cluster.run_ok(["squeue", "-h", "-j", job, "-o", "%T %r"])
        assert re.match(
            r"PENDING (ReqNodeNotAvail, UnavailableNodes:|Nodes required for job are DOWN, DRAINED)", reason
        ), reason
        answers, replicas = _wanted_replicas(prometheus, partition)
        assert answers == {"pending-jobs": 1, "largest-pending-job": 1} and replicas == 1
    finally:
        cluster.run_ok(["scancel", job])


def test_deleting_a_busy_pod_without_the_drain_kills_its_job(zero):
    """What the drain protects against: the same scale-in with the drain skipped stops slurmd under
    the running job, and the job does not complete where it ran."""
    cluster, pods, _, partition = zero
    pods.scale_up(1)
    cluster.wait_for_states({f"{partition}-0": "idle"}, 60)
    job = _submit(cluster, partition, "-N1", "--time=2", "--no-requeue", "--wrap", "sleep 20")
    try:
        _wait_state(cluster, job, "RUNNING")
        pods.scale_down(0, drain=False)
        info = _wait_state(cluster, job, "NODE_FAIL", 30)
        assert info["JobState"] != "COMPLETED"
    finally:
        cluster.run(["scancel", job])
