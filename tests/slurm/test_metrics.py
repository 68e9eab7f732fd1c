"""The real Prometheus 3.5.3 (Debian's, tests/support/local_prometheus.py) scraping the real
slurmctld 26.05 of the test cluster with the stack's scrape jobs (model/builders/metrics.py; discovery
replaced by one static target carrying the labels Kubernetes discovery gives, the interval
shortened to a second), with the stack's rules loaded (observability/alerts). The cluster is the
dev stack's release with the Controller's metrics on, so slurm.conf carries the operator's
MetricsType=metrics/openmetrics (tests/support/slinky_conf.py).

The state the queries see: one job running on a GPU of slinky-0, slinky-1 drained by an admin, a
two-node job pending that no node can run while the drain lasts; jobs submitted after the first
scrape, so the start rate over the test's window is not zero."""

from __future__ import annotations

import time

import pytest
import yaml

from cluster_programs import rollout
from model.builders.metrics import CONTROLLER_SERVICE, SLURMCTLD_JOBS
from model.facts.contract import SLURM_NAMESPACE
from tests.support.local_prometheus import LocalPrometheus
from tests.support.local_slurm import LocalSlurm
from tests.support.observability_queries import dashboard_queries, is_gpu_query, rule_files, rules
from tests.support.slinky_conf import SLURMCTLD_PORT, Release
from tests.support.slurm_cluster import WALKTHROUGH, rendered_with_metrics

pytestmark = pytest.mark.slurm

ADMIN_REASON = "admin: GPU 2 fell off the bus"
# What the operator sets while a condemned pod's node still runs jobs (slurm-operator v1.2.1
# internal/controller/nodeset/nodeset_sync.go processCondemned; slurmcontrol.go prefixes it).
OPERATOR_DRAIN = "slurm-operator: Pod (slurm/slurm-worker-slinky-0) is pending termination for scale-in"


@pytest.fixture(scope="module")
def metrics(tmp_path_factory, dev):
    import os

    if os.geteuid() != 0:
        pytest.fail("the metrics tests start a real Slurm cluster in namespaces: they need root")
    release = Release.from_documents(rendered_with_metrics(dev))
    assert "MetricsType=metrics/openmetrics" in release.slurm_conf().splitlines()
    cluster = LocalSlurm(
        tmp_path_factory.mktemp("metrics-slurm"), release, WALKTHROUGH.gpu_model, WALKTHROUGH.gpus
    ).start()
    prometheus = LocalPrometheus(
        tmp_path_factory.mktemp("prometheus"),
        f"127.0.0.1:{SLURMCTLD_PORT}",
        pod=release.primary_host,
        node="ip-10-0-2-5",
        rule_files=rule_files(),
    )
    try:
        prometheus.start()
        prometheus.wait_for_scrapes()
        cluster.run_ok(["sbatch", "-N1", "--gres=gpu:1", "--wrap", "sleep 600"])
        cluster.run_ok(["scontrol", "update", "nodename=slinky-1", "state=drain", f"reason={ADMIN_REASON}"])
        cluster.run_ok(["sbatch", "-N2", "--wrap", "sleep 600"])
        cluster.wait_for_states({"slinky-0": "mixed", "slinky-1": "drained"})
        time.sleep(1)  # one scheduling pass over the pending job
        prometheus.wait_for_scrapes()
        prometheus.wait_for_rules()
        yield cluster, prometheus
    finally:
        prometheus.stop()
        cluster.stop()


def test_each_slurmctld_job_keeps_its_target_through_its_relabelling_and_scrapes_it(metrics):
    _, prometheus = metrics
    targets = {t["labels"]["job"]: t for t in prometheus.targets()}
    assert sorted(targets) == sorted(job.name for job in SLURMCTLD_JOBS)
    for job in SLURMCTLD_JOBS:
        target = targets[job.name]
        assert target["health"] == "up", target
        assert target["scrapeUrl"] == f"http://127.0.0.1:{SLURMCTLD_PORT}{job.path}"
        assert {
            k: target["labels"][k] for k in ("kubernetes_namespace", "kubernetes_service", "kubernetes_pod")
        } == {
            "kubernetes_namespace": SLURM_NAMESPACE,
            "kubernetes_service": CONTROLLER_SERVICE,
            "kubernetes_pod": "slurm-controller-0",
        }


def test_slurms_own_node_label_survives_the_target_labels(metrics):
    _, prometheus = metrics
    nodes = {s.labels.get("node") for s in prometheus.query("slurm_node_cpus")}
    assert nodes == {"slinky-0", "slinky-1"}


def test_every_dashboard_query_over_slurm_series_returns_data(metrics):
    _, prometheus = metrics
    queries = [q for q in dashboard_queries() if not is_gpu_query(q)]
    assert queries
    empty = []
    for query in queries:
        samples = prometheus.query(query.runnable())
        if query.listed_label:
            samples = [s for s in samples if s.labels.get(query.listed_label)]
        if not samples:
            empty.append(f"{query.where}: {query.runnable()}")
    assert not empty, "queries without data on the real slurmctld:\n" + "\n".join(empty)


def test_every_rule_over_slurm_series_evaluates_on_the_real_series(metrics):
    """Each Slurm rule's expression (its `for` aside) holds on this state: the admin's drain is
    drained, no node is down, the two-node job cannot be placed on the one schedulable node."""
    _, prometheus = metrics
    by_name = {r.get("alert") or r["record"]: r["expr"] for r in rules()}
    assert [
        (s.labels["partition"], s.value)
        for s in prometheus.query(by_name["slurm:partition_nodes_schedulable:upper_bound"])
    ] == [("slinky", 1)]
    assert [s.labels["partition"] for s in prometheus.query(by_name["SlurmNodesDrained"])] == ["slinky"]
    assert prometheus.query(by_name["SlurmNodesDown"]) == []
    assert [s.labels["partition"] for s in prometheus.query(by_name["SlurmJobsPendingWithoutNodes"])] == [
        "slinky"
    ]
    firing = {a["labels"]["alertname"] for a in prometheus.alerts()}
    assert "SlurmctldTargetMissing" not in firing and "ScrapeTargetDown" not in firing


def test_a_rollout_drains_a_busy_node_as_draining_and_drained_only_between_pods(metrics):
    """What the drained-node alert rests on, on the real slurmctld. The operator's drain of a node
    that still runs a job counts as `draining`, not `drained`. Once the pod goes (its preStop sets
    the node DOWN, then slurmd stops) the node counts as `drained` (DOWN+DRAIN or IDLE+DRAIN, the
    preStop's reason) until its new pod registers and the operator lifts its own drain (slurm-operator
    v1.2.1 nodeset_sync.go makePodUncordonAndUndrain; `undrain` here, as no operator runs):
    drained for the minutes between two pods, where the admin's drain stays."""
    cluster, prometheus = metrics
    assert _partition(prometheus, "draining", "drained", "down") == (0, 1, 0)
    cluster.run_ok(["scontrol", "update", "nodename=slinky-0", "state=drain", f"reason={OPERATOR_DRAIN}"])
    prometheus.wait_for_scrapes()
    assert _partition(prometheus, "draining", "drained", "down") == (1, 1, 0)
    cluster.prestop("slinky-0")
    cluster.stop_slurmd("slinky-0")
    between = _between_pods(cluster, "slinky-0")
    prometheus.wait_for_scrapes()
    # Drained either way (IS_NODE_DRAINED: the drain flag, no job; SchedMD/slurm
    # src/slurmctld/statistics.c at slurm-26-05-3-1); down only while the base state is DOWN.
    assert _partition(prometheus, "draining", "drained", "down") == (0, 2, int(between.base == "DOWN")), (
        between.describe()
    )
    cluster.start_slurmd("slinky-0")
    cluster.run_ok(["scontrol", "update", "nodename=slinky-0", "state=undrain"])
    # Back in service: idle, or mixed once the job the DOWN requeued starts there again.
    deadline = time.monotonic() + 90
    while cluster.states().get("slinky-0") not in ("idle", "mixed") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert cluster.states().get("slinky-0") in ("idle", "mixed"), cluster.logs()
    prometheus.wait_for_scrapes()
    assert _partition(prometheus, "draining", "drained", "down") == (0, 1, 0)


def _between_pods(cluster: LocalSlurm, name: str, timeout: float = 60) -> rollout.SlurmNode:
    """The node once its pod is gone: DOWN+DRAIN as the preStop left it, or IDLE+DRAIN where the
    old slurmd registered after the preStop's DOWN and before it stopped (ReturnToService=2 clears
    DOWN on registration). Which one is a race the real pod has too; sinfo prints `drained` for
    both, with `*` once slurmctld has found the node not responding."""
    deadline = time.monotonic() + timeout
    while True:
        node = cluster.slurm_node(name)
        if node.base in ("DOWN", "IDLE") and "DRAIN" in node.flags and not node.flags & {"COMPLETING"}:
            return node
        assert time.monotonic() < deadline, f"{node.describe()} is not drained between pods\n{cluster.logs()}"
        time.sleep(0.3)


def _partition(prometheus: LocalPrometheus, *states: str) -> tuple[float, ...]:
    return tuple(
        prometheus.query(f'slurm_partition_nodes_{state}{{partition="slinky"}}')[0].value for state in states
    )


def test_the_stack_rules_load_into_the_real_prometheus(metrics):
    _, prometheus = metrics
    loaded = {r["name"] for g in prometheus.rule_groups() for r in g["rules"]}
    assert loaded == {r.get("alert") or r["record"] for r in rules()}
    assert all(yaml.safe_load(p.read_text())["groups"] for p in rule_files())
