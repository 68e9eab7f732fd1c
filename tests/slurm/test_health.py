"""The shipped node health check on a real Slurm 26.05 cluster: slurmd runs it as the release's
HealthCheckProgram, from the ConfigMap the program makes (model/builders/node_health.py), over the fake GPUs
of the GRES tests (local_slurm.write_nvidia_driver_files) and a fake nvidia-smi answering in the
real driver 580 layout. Only the interval is the harness's: seconds instead of minutes.

A worker one GPU short (a /dev/nvidiaN and its procfs entry removed) or whose nvidia-smi reports a
DRAM uncorrectable error is drained with the named reason within the interval, a healthy worker is
not, an administrator's drain is left alone, and a health drain clears once the fault is fixed; a
hardware Xid in the pod's kernel log (its fake dmesg) drains once and holds until resumed, and is
not counted again after the resume."""

from __future__ import annotations

import json
import os
import re
import time

import pytest

from cluster_programs import rollout
from model.builders import node_health
from model.facts.contract import HEALTH_CONFIGMAP
from tests.support.local_slurm import LocalSlurm, RootMissing, nvidia_smi_ecc_query
from tests.support.slinky_conf import Release, nodeset_name

pytestmark = pytest.mark.slurm
INTERVAL = 3
# The check runs at most one interval after a change, and slurmctld waits for its pings to finish
# before it asks (src/slurmctld/controller.c: is_ping_done()): two intervals and the check's own
# time.
WITHIN = 2 * INTERVAL + 15
ADMIN_REASON = "admin: swapping a disk"


def _configmap(dev) -> dict[str, str]:
    (cm,) = [
        r
        for r in dev.of_type("kubernetes:core/v1:ConfigMap")
        if r.inputs["metadata"]["name"] == HEALTH_CONFIGMAP
    ]
    return cm.inputs["data"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, rendered, dev):
    if os.geteuid() != 0:
        pytest.fail("the cluster runs its daemons in namespaces: it needs root")
    data = _configmap(dev)
    release = Release.from_documents(rendered["slurm"])
    # The first NodeSet's pool, as LocalSlurm picks it.
    pool = nodeset_name(sorted(release.nodesets, key=lambda n: n["metadata"]["name"])[0])
    expected = json.loads(data[f"{pool}.json"])
    try:
        c = LocalSlurm(
            tmp_path_factory.mktemp("health"),
            release,
            expected["gpu_model"],
            expected["gpus"],
            extra_conf=f"TaskPlugin=task/cgroup\nHealthCheckInterval={INTERVAL}",
            node_health=data,
        )
    except RootMissing as e:
        pytest.fail(str(e))
    c.start()
    try:
        yield c
    finally:
        c.stop()


def _wait(cluster: LocalSlurm, name: str, done, what: str, timeout: float = WITHIN) -> rollout.SlurmNode:
    deadline = time.monotonic() + timeout
    node = cluster.slurm_node(name)
    while time.monotonic() < deadline:
        node = cluster.slurm_node(name)
        if done(node):
            return node
        time.sleep(0.5)
    raise AssertionError(f"{name} not {what} after {timeout} s: {node}\n{cluster.logs()}")


def _next_result(cluster: LocalSlurm, name: str) -> rollout.SlurmNode:
    """The node once the check has run on it again (its Comment carries the run's time)."""
    before = cluster.slurm_node(name).comment
    return _wait(
        cluster, name, lambda n: n.comment and n.comment != before, "checked again", timeout=WITHIN + 2
    )


def _healthy(node: rollout.SlurmNode) -> bool:
    return "DRAIN" not in node.flags and node.comment.endswith(": ok")


def test_the_release_makes_slurmd_run_the_shipped_check(cluster):
    conf = cluster.run(["scontrol", "show", "config"]).stdout
    assert re.search(rf"^HealthCheckProgram\s+= {re.escape(node_health.PROGRAM_PATH)}$", conf, re.M), conf
    assert re.search(rf"^HealthCheckInterval\s+= {INTERVAL} sec$", conf, re.M), conf
    assert re.search(r"^HealthCheckNodeState\s+= ANY$", conf, re.M), conf


def test_healthy_workers_are_checked_and_stay_in_service(cluster):
    for name in cluster.nodes:
        node = _wait(cluster, name, _healthy, "checked healthy")
        assert node.base == "IDLE", node


def test_a_worker_one_gpu_short_is_drained_with_the_named_reason(cluster):
    sick, well = cluster.nodes
    cluster.hide_gpu(sick, cluster.gpus - 1)
    try:
        node = _wait(cluster, sick, lambda n: n.health_drained, "health-drained")
        want = cluster.gpus
        assert node.reason == (
            f"health: {want - 1} of {want} GPUs in /dev; {want - 1} of {want} GPUs in /proc/driver/nvidia"
        ), node
        assert _healthy(_next_result(cluster, well)), "the healthy worker was drained"
    finally:
        cluster.restore_gpus(sick)
    _wait(cluster, sick, _healthy, "undrained once its GPUs are back")


def test_a_worker_whose_nvidia_smi_reports_a_dram_uncorrectable_error_is_drained(cluster):
    sick, well = cluster.nodes
    cluster.set_nvidia_smi(sick, nvidia_smi_ecc_query(cluster.gpus, dram_uncorrectable={0: 3}))
    try:
        node = _wait(cluster, sick, lambda n: n.health_drained, "health-drained")
        assert node.reason == "health: GPU 00000000:30:00.0 3 DRAM Uncorrectable", node
        assert _healthy(_next_result(cluster, well)), "the healthy worker was drained"
    finally:
        cluster.set_nvidia_smi(sick, nvidia_smi_ecc_query(cluster.gpus))
    _wait(cluster, sick, _healthy, "undrained once nvidia-smi reports no error")


def test_an_xid_drains_once_and_an_administrators_resume_after_the_gpu_reset_sticks(cluster):
    """The reviewer's case: the Xid line stays in the kernel log after the reset that repairs the
    GPU. The run that sees it drains the node; later runs hold the drain (no new line, but nothing
    says the GPU was handled); once an administrator resumes the node, the old line is behind the
    check's cursor (in the node's directory, STATE_DIR) and the node stays in service."""
    sick, well = cluster.nodes
    cluster.add_kernel_log(
        sick, "[ 4242.000001] NVRM: Xid (PCI:0000:30:00): 79, pid=2101, GPU has fallen off the bus."
    )
    try:
        node = _wait(cluster, sick, lambda n: n.health_drained, "health-drained")
        assert node.reason == "health: Xid 79 on 0000:30:00", node
        assert cluster.health_state(sick).exists(), "the run that drained did not keep its cursor"
        held = _next_result(cluster, sick)
        assert held.health_drained and held.reason == node.reason, held
        assert held.comment.endswith(
            ": ok (Xid 79 on 0000:30:00 holds the drain until the node is resumed)"
        ), held
        assert _healthy(_next_result(cluster, well)), "the healthy worker was drained"
    finally:
        resumed = cluster.run(["scontrol", "update", f"nodename={sick}", "state=resume"])
    assert resumed.returncode == 0, resumed.stderr
    for _ in range(2):
        assert _healthy(_next_result(cluster, sick)), "the old Xid drained the resumed node again"
    cluster.add_kernel_log(
        sick, "[ 5000.000002] NVRM: Xid (PCI:0000:31:00): 48, pid=3307, An uncorrectable double bit error."
    )
    try:
        node = _wait(cluster, sick, lambda n: n.health_drained, "health-drained by the new Xid")
        assert node.reason == "health: Xid 48 on 0000:31:00", node
    finally:
        cluster.run(["scontrol", "update", f"nodename={sick}", "state=resume"])
    _wait(cluster, sick, _healthy, "in service after the second resume")


def test_a_new_pod_of_a_resumed_node_does_not_drain_it_again_for_an_old_xid(cluster):
    """The reviewer's case: the cursor is the node's (the NodeSet's hostPath at STATE_DIR), not the
    pod's, so a rolling update's new pod reads on from it and does not re-drain the node for the
    Xids of this boot that were drained and resumed above (a drain that holds: the rollout wait
    would fail on it)."""
    sick, _ = cluster.nodes
    assert "NVRM: Xid" in (cluster.pod_dir(sick).parent / f"{sick}.host" / "kmsg").read_text()
    cluster.replace_pod(sick)
    node = _wait(cluster, sick, lambda n: n.base != "DOWN", "up again in its new pod")
    if "DRAIN" in node.flags and not node.reason.startswith("health: "):  # the old pod's preStop
        cluster.run(["scontrol", "update", f"nodename={sick}", "state=resume"])
    for _ in range(2):
        assert _healthy(_next_result(cluster, sick)), "the new pod drained the node for an old Xid"


def test_an_administrators_drain_is_left_alone(cluster):
    name = cluster.nodes[1]
    drained = cluster.run(["scontrol", "update", f"nodename={name}", "state=drain", f"reason={ADMIN_REASON}"])
    assert drained.returncode == 0, drained.stderr
    try:
        # Healthy: the check records its result and leaves the drain.
        node = _next_result(cluster, name)
        assert "DRAIN" in node.flags and node.reason == ADMIN_REASON and node.comment.endswith(": ok"), node
        # Faulty: the fault is recorded, the administrator's reason stays.
        cluster.hide_gpu(name, 0)
        try:
            node = _wait(cluster, name, lambda n: "GPUs in /dev" in n.comment, "checked faulty")
            assert "DRAIN" in node.flags and node.reason == ADMIN_REASON, node
        finally:
            cluster.restore_gpus(name)
        node = _wait(cluster, name, lambda n: n.comment.endswith(": ok"), "checked healthy again")
        assert "DRAIN" in node.flags and node.reason == ADMIN_REASON, node
    finally:
        cluster.run(["scontrol", "update", f"nodename={name}", "state=resume"])


def _job(cluster: LocalSlurm, job: str) -> str:
    return cluster.run(["scontrol", "show", "job", "-o", job]).stdout


def _submit(cluster: LocalSlurm, node: str) -> str:
    """A plain batch job on `node` (no --requeue: the cluster's default decides), once running."""
    submitted = cluster.run(["sbatch", "--parsable", "-w", node, "-o", "/dev/null", "--wrap", "sleep 300"])
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 60
    while "JobState=RUNNING" not in _job(cluster, job):
        assert time.monotonic() < deadline, _job(cluster, job)
        time.sleep(0.5)
    return job


def test_a_health_drain_keeps_the_running_job_and_takes_no_new_one(cluster):
    """A drain stops new work only: the job on the node runs on (docs/health.md)."""
    name = cluster.nodes[0]
    job = _submit(cluster, name)
    try:
        cluster.hide_gpu(name, 0)
        try:
            node = _wait(cluster, name, lambda n: n.health_drained, "health-drained")
            assert "DRAIN" in node.flags and node.base in ("MIXED", "ALLOCATED"), node
            assert "JobState=RUNNING" in _job(cluster, job)
        finally:
            cluster.restore_gpus(name)
        _wait(cluster, name, lambda n: "DRAIN" not in n.flags, "undrained")
    finally:
        cluster.run(["scancel", job])


def test_a_batch_job_whose_node_fails_is_requeued_by_the_cluster_default(cluster):
    """JobRequeue=1 (charts-values/slurm.yaml): a node set DOWN, as the pod's preStop or a lost
    instance does, puts its batch job back in the queue with the same id."""
    name = cluster.nodes[1]
    job = _submit(cluster, name)
    try:
        assert "Requeue=1" in _job(cluster, job)
        down = cluster.run(["scontrol", "update", f"nodename={name}", "state=down", "reason=test: node lost"])
        assert down.returncode == 0, down.stderr
        deadline = time.monotonic() + 30
        while "Restarts=1" not in _job(cluster, job):
            assert time.monotonic() < deadline, _job(cluster, job)
            time.sleep(0.5)
        assert re.search(r"JobState=(PENDING|CONFIGURING|RUNNING)\b", _job(cluster, job)), _job(cluster, job)
    finally:
        cluster.run(["scancel", job])
        cluster.run(["scontrol", "update", f"nodename={name}", "state=resume"])
        _wait(
            cluster,
            name,
            lambda n: n.base == "IDLE" and not n.flags & {"DOWN", "DRAIN"},
            "back in service",
            timeout=60,
        )
