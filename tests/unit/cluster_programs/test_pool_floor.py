"""cluster_programs/pool_floor.py: the readiness wait of an autoscaling pool waits for its minNodes
Slurm nodes only, never for nodes the scaler asked for beyond them (fake API serving CRD-valid
NodeSet objects, tests/support/rollout_fakes.py)."""

import os
import subprocess
import sys

import pytest

from cluster_programs import pool_floor, rollout
from components._parts.program_code import shipped_code
from components.slurm_readiness import shipped_modules
from model.builders.program_job import PACKAGE
from tests.support.rollout_fakes import (
    NEW_REVISION,
    OLD_REVISION,
    Clock,
    FakeCluster,
    nodeset,
    pod,
    scontrol_line,
)


def _settle(cluster, min_nodes, timeout=600):
    clock, logs = Clock(), []
    result = rollout.settle(
        pool_floor.FloorView(cluster, min_nodes),
        "slinky-",
        timeout,
        poll=10,
        clock=clock,
        sleep=clock.sleep,
        log=logs.append,
    )
    return result, logs, clock


def test_a_pool_meant_to_be_at_zero_waits_for_no_node():
    cluster = FakeCluster([(nodeset(replicas=0, updated=0, ready=0, desired=0), [], [])])
    result, _, clock = _settle(cluster, 0)
    assert result.endswith("0 Slurm nodes take jobs") and clock.sleeps == []


def test_nodes_the_scaler_asked_for_beyond_the_floor_are_not_waited_for():
    # KEDA asked for 4; one is up, three wait on EC2 capacity (Pending, not Ready).
    pods = [pod(0), pod(1, ready=False), pod(2, ready=False), pod(3, ready=False)]
    cluster = FakeCluster(
        [
            (
                nodeset(replicas=4, updated=4, ready=1, desired=4),
                pods,
                [scontrol_line("slinky-0", "IDLE+DYNAMIC_NORM")],
            )
        ]
    )
    result, _, clock = _settle(cluster, 1)
    assert result.endswith("1 Slurm nodes take jobs") and clock.sleeps == []


def test_the_floor_itself_is_waited_for_until_it_takes_jobs():
    short = (
        nodeset(replicas=2, updated=2, ready=1, desired=2),
        [pod(0), pod(1, ready=False)],
        [scontrol_line("slinky-0", "IDLE+DYNAMIC_NORM")],
    )
    full = (
        nodeset(replicas=2, updated=2, ready=2, desired=2),
        [pod(0), pod(1)],
        [scontrol_line("slinky-0", "IDLE+DYNAMIC_NORM"), scontrol_line("slinky-1", "IDLE+DYNAMIC_NORM")],
    )
    result, logs, clock = _settle(FakeCluster([short, short, full]), 2)
    assert clock.sleeps == [10, 10] and "ready 1/2" in logs[0] and result.endswith("2 Slurm nodes take jobs")


def test_a_floor_that_never_comes_fails_naming_what_is_missing():
    view = (nodeset(replicas=3, updated=3, ready=0, desired=3), [pod(0, ready=False)], [])
    with pytest.raises(rollout.RolloutFailed, match=r"ready 0/1"):
        _settle(FakeCluster([view]), 1, timeout=60)


def test_a_pod_of_the_old_revision_does_not_count_for_the_floor():
    view = (
        nodeset(replicas=2, updated=1, ready=2, desired=2),
        [pod(0, revision=OLD_REVISION), pod(1, ready=False)],
        [scontrol_line("slinky-0", "IDLE+DYNAMIC_NORM")],
    )
    with pytest.raises(rollout.RolloutFailed, match="not yet on revision"):
        _settle(FakeCluster([view]), 1, timeout=30)


def test_a_floor_node_drained_by_an_admin_still_fails_the_wait():
    view = (
        nodeset(replicas=1, updated=1, ready=1, desired=1, revision=NEW_REVISION),
        [pod(0)],
        [scontrol_line("slinky-0", "IDLE+DRAIN+DYNAMIC_NORM", "bad gpu")],
    )
    with pytest.raises(rollout.RolloutFailed, match="not the rollout's doing"):
        _settle(FakeCluster([view]), 1)


def test_a_pool_held_below_its_floor_by_the_scaler_waits_for_what_the_nodeset_asks():
    # idleReplicaCount 0: KEDA holds a pool of minNodes 1 at zero while its partition is idle.
    cluster = FakeCluster([(nodeset(replicas=0, updated=0, ready=0, desired=0), [], [])])
    result, _, _ = _settle(cluster, 1)
    assert result.endswith("0 Slurm nodes take jobs")


def test_the_floor_entry_point_runs_from_the_shipped_package(tmp_path):
    package = tmp_path / PACKAGE
    package.mkdir()
    for name, text in shipped_code(shipped_modules(autoscaling=True)).items():
        (package / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            f"{PACKAGE}.pool_floor",
            "--namespace",
            "slurm",
            "--nodeset",
            "slurm-worker-slinky",
            "--node-prefix",
            "slinky-",
            "--slurm-pod",
            "slurm-controller-0",
            "--slurm-container",
            "slurmctld",
            "--timeout",
            "60",
            "--min-nodes",
            "1",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1 and result.stderr.startswith(
        "FAILED: not inside a pod with a service account"
    )
    assert result.stdout.startswith("autoscaling pool: waiting for its floor of 1 node(s)")
