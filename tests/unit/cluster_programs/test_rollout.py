"""cluster_programs/rollout.py, the Kubernetes half: the operator's NodeSet rollout read from its status,
waited for, and only what it left stuck resumed (fake API serving CRD-valid NodeSet objects)."""

import os
import subprocess
import sys

import jsonschema
import pytest

from cluster_programs import rollout
from components._parts.program_code import shipped_code
from components.slurm_readiness import shipped_modules
from model.builders.program_job import PACKAGE
from tests.support.rollout_fakes import (
    NEW_REVISION,
    OLD_REVISION,
    STAMP,
    Clock,
    FakeCluster,
    nodeset,
    nodeset_schema,
    pod,
    scontrol_line,
)

IDLE = [scontrol_line("slinky-0", "IDLE+DYNAMIC_NORM"), scontrol_line("slinky-1", "IDLE+DYNAMIC_NORM")]
PRESTOP = "slurm-operator: Pod is terminating"


def _settle(cluster, clock, timeout=600, stall_after=300):
    logs = []
    result = rollout.settle(
        cluster,
        "slinky-",
        timeout,
        poll=10,
        stall_after=stall_after,
        clock=clock,
        sleep=clock.sleep,
        log=logs.append,
    )
    return result, logs


def test_fake_nodesets_are_checked_against_the_crd():
    broken = nodeset()
    broken["status"]["updatedReplicas"] = "two"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, nodeset_schema())


def test_scontrol_records_parse_with_state_flags_and_reason():
    (node,) = rollout.parse_scontrol(
        scontrol_line("slinky-1", "DOWN+DRAIN+NOT_RESPONDING+DYNAMIC_NORM", PRESTOP)
    )
    assert (node.name, node.base, node.reason) == ("slinky-1", "DOWN", PRESTOP)
    assert node.flags == {"DRAIN", "NOT_RESPONDING", "DYNAMIC_NORM"} and node.stuck and not node.usable


@pytest.mark.parametrize(
    "state,usable",
    [
        ("IDLE+DYNAMIC_NORM", True),
        ("MIXED+DYNAMIC_NORM", True),
        ("ALLOCATED", True),
        ("IDLE+DRAIN+DYNAMIC_NORM", False),
        ("DOWN+DYNAMIC_NORM", False),
        ("IDLE+NOT_RESPONDING", False),
        ("UNKNOWN+DYNAMIC_NORM", False),
    ],
)
def test_a_node_takes_jobs_only_idle_mixed_or_allocated_without_blocking_flags(state, usable):
    assert rollout.SlurmNode("slinky-0", state).usable is usable


def test_a_finished_rollout_with_idle_nodes_proceeds_at_once():
    cluster, clock = FakeCluster([(nodeset(), [pod(0), pod(1)], IDLE)]), Clock()
    result, _ = _settle(cluster, clock)
    assert "2 Slurm nodes take jobs" in result
    assert clock.sleeps == [] and cluster.updates == []


@pytest.mark.parametrize(
    "view",
    [
        (nodeset(generation=4, observed=3), [pod(0, OLD_REVISION), pod(1, OLD_REVISION)], IDLE),
        (nodeset(updated=1, ready=1), [pod(0), pod(1, OLD_REVISION)], IDLE),
        (nodeset(), [pod(0), pod(1, OLD_REVISION, terminating=True)], IDLE),
        (nodeset(ready=1), [pod(0), pod(1, ready=False)], IDLE),
    ],
    ids=["generation-not-observed", "one-pod-updated", "old-pod-terminating", "new-pod-not-ready"],
)
def test_a_rollout_in_progress_is_waited_for_without_touching_slurm(view):
    done = (nodeset(), [pod(0), pod(1)], IDLE)
    cluster, clock = FakeCluster([view, view, done]), Clock()
    result, logs = _settle(cluster, clock)
    assert clock.sleeps == [10, 10] and cluster.updates == []
    assert "in progress" in logs[0] and "take jobs" in result


def test_the_operators_own_drain_during_the_rollout_is_left_to_it():
    draining = [
        scontrol_line("slinky-0", "IDLE+DYNAMIC_NORM"),
        scontrol_line(
            "slinky-1",
            "IDLE+DRAIN+DYNAMIC_NORM",
            "slurm-operator: Pod (slurm/slurm-worker-slinky-1) is pending termination for scale-in",
        ),
    ]
    view = (nodeset(updated=1, ready=2), [pod(0), pod(1, OLD_REVISION)], draining)
    cluster, clock = FakeCluster([view] * 100 + [(nodeset(), [pod(0), pod(1)], IDLE)]), Clock()
    _settle(cluster, clock, timeout=3600, stall_after=60)
    assert cluster.updates == []


def test_a_rollout_stalled_as_in_issue_249_is_undrained_and_says_so():
    stalled = (
        nodeset(replicas=1, updated=1, ready=1),
        [pod(0)],
        [
            scontrol_line("slinky-0", "IDLE+DYNAMIC_NORM"),
            scontrol_line("slinky-1", "DOWN+DRAIN+NOT_RESPONDING+DYNAMIC_NORM", PRESTOP),
        ],
    )

    def operator_recovers(argv):  # the replacement pod comes within one reconcile (#249)
        return [(nodeset(), [pod(0), pod(1)], IDLE)]

    cluster, clock = FakeCluster([stalled], on_update=operator_recovers), Clock()
    result, logs = _settle(cluster, clock, stall_after=300)
    assert cluster.updates == [["scontrol", "update", "nodename=slinky-1", "state=undrain"]]
    assert clock.sleeps == [10] * 31  # 300 s without a pod, then the undrain
    said = "\n".join(logs)
    assert "SlinkyProject/slurm-operator#249" in said and "undraining slinky-1" in said
    assert "take jobs" in result


def test_a_drained_node_whose_pod_exists_is_not_a_stall():
    view = (
        nodeset(updated=1, ready=1),
        [pod(0), pod(1, OLD_REVISION, terminating=True)],
        [
            scontrol_line("slinky-0", "IDLE+DYNAMIC_NORM"),
            scontrol_line("slinky-1", "DOWN+DRAIN+DYNAMIC_NORM", PRESTOP),
        ],
    )
    cluster = FakeCluster([view])
    with pytest.raises(rollout.RolloutFailed):
        _settle(cluster, Clock(), timeout=900, stall_after=300)
    assert cluster.updates == []


def test_a_node_left_down_by_the_old_pods_prestop_is_resumed_once_its_new_pod_runs():
    left_down = (
        nodeset(),
        [pod(0), pod(1)],
        [
            scontrol_line("slinky-0", "IDLE+DYNAMIC_NORM"),
            scontrol_line("slinky-1", "DOWN+DYNAMIC_NORM", PRESTOP),
        ],
    )
    cluster, clock = (
        FakeCluster([left_down], on_update=lambda argv: [(nodeset(), [pod(0), pod(1)], IDLE)]),
        Clock(),
    )
    result, logs = _settle(cluster, clock)
    assert cluster.updates == [["scontrol", "update", "nodename=slinky-1", "state=resume"]]
    assert "1 of 2 nodes take jobs" in logs[0] and "preStop; resuming" in logs[0] and "take jobs" in result


@pytest.mark.parametrize(
    "state,reason",
    [
        ("IDLE+DRAIN+DYNAMIC_NORM", "maintenance: bad DIMM"),
        ("DOWN+DRAIN+DYNAMIC_NORM", "gres/gpu count reported lower than configured (3 < 4)"),
        (
            "IDLE+DRAIN+DYNAMIC_NORM",
            "slurm-operator: Node (ip-10-0-1-17) was cordoned, Pod (slurm/slurm-worker-slinky-1) "
            "must be cordoned",
        ),
    ],
    ids=["admin-drain", "bad-registration", "kubernetes-node-cordoned"],
)
def test_any_other_drain_is_left_alone_and_fails_naming_node_state_and_reason(state, reason):
    view = (
        nodeset(),
        [pod(0), pod(1)],
        [scontrol_line("slinky-0", "IDLE+DYNAMIC_NORM"), scontrol_line("slinky-1", state, reason)],
    )
    cluster = FakeCluster([view])
    with pytest.raises(rollout.RolloutFailed) as failed:
        _settle(cluster, Clock())
    assert cluster.updates == []
    message = str(failed.value)
    assert f"slinky-1 {state} reason {reason!r}" in message and "left alone" in message
    assert STAMP not in message


def test_a_rollout_that_never_finishes_fails_with_node_state_reason_and_time_waited():
    view = (
        nodeset(updated=1, ready=1),
        [pod(0), pod(1, OLD_REVISION, terminating=True)],
        [
            scontrol_line("slinky-0", "IDLE+DYNAMIC_NORM"),
            scontrol_line("slinky-1", "DOWN+DRAIN+DYNAMIC_NORM", PRESTOP),
        ],
    )
    with pytest.raises(rollout.RolloutFailed) as failed:
        _settle(FakeCluster([view]), Clock(), timeout=600)
    message = str(failed.value)
    assert "not finished after 600s" in message and "updated 1/2, ready 1/2" in message
    assert f"slinky-1 DOWN+DRAIN+DYNAMIC_NORM reason {PRESTOP!r}" in message


def test_a_node_that_never_registers_fails_after_the_timeout():
    view = (nodeset(), [pod(0), pod(1)], IDLE[:1])
    with pytest.raises(
        rollout.RolloutFailed, match="slinky-1 .pod slurm-worker-slinky-1. not registered in Slurm"
    ):
        _settle(FakeCluster([view]), Clock(), timeout=120)


def test_nodes_of_other_nodesets_are_not_ours():
    view = (
        nodeset(),
        [pod(0), pod(1)],
        [*IDLE, scontrol_line("cpu-0", "IDLE+DRAIN+DYNAMIC_NORM", "maintenance")],
    )
    result, _ = _settle(FakeCluster([view]), Clock())
    assert "take jobs" in result


def test_the_new_revision_comes_from_the_nodeset_status():
    status = rollout.NodeSetStatus.from_object(nodeset())
    assert status.revision == NEW_REVISION
    assert rollout.rollout_pending(status, [rollout.WorkerPod.from_object(p) for p in (pod(0), pod(1))]) == ""
    assert "slurm-worker-slinky-1" in rollout.rollout_pending(
        status, [rollout.WorkerPod.from_object(p) for p in (pod(0), pod(1, OLD_REVISION))]
    )


def test_a_node_slurm_marked_not_responding_is_waited_for_not_resumed():
    view = (
        nodeset(),
        [pod(0), pod(1)],
        [
            scontrol_line("slinky-0", "IDLE+DYNAMIC_NORM"),
            scontrol_line("slinky-1", "DOWN+NOT_RESPONDING+DYNAMIC_NORM", "Not responding"),
        ],
    )
    cluster, clock = FakeCluster([view, view, (nodeset(), [pod(0), pod(1)], IDLE)]), Clock()
    result, logs = _settle(cluster, clock)
    assert cluster.updates == [] and clock.sleeps == [10, 10]
    assert "Slurm returns it when its slurmd registers" in logs[0] and "take jobs" in result


def test_outside_a_cluster_the_job_entry_point_prints_one_line_and_fails(tmp_path):
    # As the Job runs it: the shipped files as the package `cluster_programs`, `python -m
    # cluster_programs.rollout`.
    package = tmp_path / PACKAGE
    package.mkdir()
    for name, text in shipped_code(shipped_modules()).items():
        (package / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            f"{PACKAGE}.rollout",
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
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    err = result.stderr
    assert result.returncode == 1 and err.startswith("FAILED: not inside a pod with a service account")
    assert err.count("\n") == 1


HEALTH_REASON = "health: 3 of 4 GPUs in /dev; 3 of 4 GPUs in /proc/driver/nvidia"
HEALTH_COMMENT = "health 2026-12-03T11:25:30Z: 3 of 4 GPUs in /dev; 3 of 4 GPUs in /proc/driver/nvidia"


def test_a_health_drain_is_named_as_such_and_never_resumed():
    view = (
        nodeset(),
        [pod(0), pod(1)],
        [
            scontrol_line("slinky-0", "IDLE+DYNAMIC_NORM"),
            scontrol_line("slinky-1", "IDLE+DRAIN+DYNAMIC_NORM", HEALTH_REASON, comment=HEALTH_COMMENT),
        ],
    )
    cluster = FakeCluster([view])
    with pytest.raises(rollout.RolloutFailed) as failed:
        _settle(cluster, Clock())
    assert cluster.updates == []
    assert "drained by the node health check" in str(failed.value) and HEALTH_REASON in str(failed.value)


def test_a_health_drain_during_the_rollout_is_never_undrained_as_a_stall():
    """The #249 undrain is for the operator's own drain only, however long the node has no pod."""
    view = (
        nodeset(updated=1, ready=1),
        [pod(0)],
        [
            scontrol_line("slinky-0", "IDLE+DYNAMIC_NORM"),
            scontrol_line("slinky-1", "IDLE+DRAIN+DYNAMIC_NORM", HEALTH_REASON),
        ],
    )
    cluster = FakeCluster([view])
    with pytest.raises(rollout.RolloutFailed):
        _settle(cluster, Clock(), timeout=900, stall_after=300)
    assert cluster.updates == []


def test_the_comment_is_read_up_to_the_next_field_and_absent_when_unset():
    (node,) = rollout.parse_scontrol(
        scontrol_line("slinky-1", "IDLE+DRAIN", HEALTH_REASON, comment=HEALTH_COMMENT) + " Extra=rack=4"
    )
    assert node.comment == HEALTH_COMMENT and node.reason == HEALTH_REASON
    (bare,) = rollout.parse_scontrol(scontrol_line("slinky-1", "IDLE"))
    assert bare.comment == ""
