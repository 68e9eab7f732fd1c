"""cluster_programs/rollout.py, the Slurm half, on the Slurm 26.05 test cluster shaped as the operator runs
it (tests/support/local_slurm.py, from the release the chart renders for the dev stack, ReturnToService=2
included): pods replaced the operator's way (the worker preStop, slurm-operator v1.2.1
internal/builder/workerbuilder/worker_app.go; the drain before deletion, nodeset_sync.go
processCondemned), the NodeSet side served by the fake API. Every state and reason the decisions
read is what this Slurm prints; nothing is canned."""

from __future__ import annotations

import time

import pytest

from cluster_programs import rollout
from tests.support.local_slurm import LocalSlurm
from tests.support.rollout_fakes import OLD_REVISION, nodeset, pod
from tests.support.slurm_cluster import running_cluster
from tools import verify

pytestmark = pytest.mark.slurm
PRESTOP = "slurm-operator: Pod is terminating"
OPERATOR_DRAIN = (
    "reason=slurm-operator: Pod (slurm/slurm-worker-slinky-1) is pending termination for scale-in"
)
NODES = ("slinky-0", "slinky-1")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory, rendered):
    with running_cluster(tmp_path_factory, rendered, "the Slurm-half tests") as cluster:
        assert tuple(cluster.nodes) == NODES
        yield cluster


class RealSlurm:
    """cluster_programs.rollout.Cluster: the NodeSet side from a list of views (the last repeats; an update
    may run what the operator does next and switch to other views), Slurm from the real cluster."""

    def __init__(self, slurm: LocalSlurm, views, after_update=None):
        self.cluster, self.views, self.after_update = slurm, list(views), after_update
        self.polls, self.updates = 0, []

    def nodeset(self):
        self.view = self.views[min(self.polls, len(self.views) - 1)]
        self.polls += 1
        return self.view[0]

    def pods(self, selector):
        return self.view[1]

    def slurm(self, argv):
        result = self.cluster.run(argv)
        assert result.returncode == 0, result.stderr
        if argv[:2] == ["scontrol", "update"]:
            self.updates.append(argv)
            if self.after_update:
                self.views, self.polls = self.after_update(), 0
        return result.stdout


def _pods(*names, **kw):
    return [pod(int(n.rsplit("-", 1)[1]), hostname=n, **kw) for n in names]


def _scontrol(slurm, *args):
    result = slurm.run(["scontrol", "update", *args])
    assert result.returncode == 0, result.stderr


def _until(slurm, name, predicate, timeout=60):
    deadline = time.time() + timeout
    while not predicate(node := slurm.slurm_node(name)) and time.time() < deadline:
        time.sleep(0.5)
    return node


def _settle(cluster, timeout=60, stall_after=300):
    logs = []
    result = rollout.settle(cluster, "slinky-", timeout, poll=0.5, stall_after=stall_after, log=logs.append)
    return result, "\n".join(logs)


ROLLED_OUT = (nodeset(), _pods(*NODES), None)


@pytest.fixture(autouse=True)
def all_idle(slurm):
    """Each test starts and ends with a slurmd per node and both nodes taking jobs."""

    def wait():
        for n in NODES:
            assert _until(slurm, n, lambda node: node.usable).usable, slurm.slurm_node(n).describe()

    wait()
    yield
    for n in NODES:
        if n not in slurm.workers:
            slurm.start_slurmd(n)
        if not slurm.slurm_node(n).usable:
            _scontrol(slurm, f"nodename={n}", "state=resume")
    wait()


def test_an_operator_style_pod_replacement_left_drained_is_resumed(slurm):
    # processCondemned drains, the preStop sets DOWN, the pod is replaced; the new slurmd
    # registers (ReturnToService=2 clears DOWN) but the drain stays until someone lifts it.
    _scontrol(slurm, "nodename=slinky-1", "state=drain", OPERATOR_DRAIN)
    slurm.replace_pod("slinky-1")
    left = _until(slurm, "slinky-1", lambda n: n.base != "DOWN")
    assert "DRAIN" in left.flags and left.reason == PRESTOP, left.describe()
    cluster = RealSlurm(slurm, [ROLLED_OUT])
    result, said = _settle(cluster)
    assert cluster.updates == [["scontrol", "update", "nodename=slinky-1", "state=resume"]]
    assert f"slinky-1 {left.state} reason {PRESTOP!r}: left by the old pod's preStop; resuming" in said
    assert "2 Slurm nodes take jobs" in result and slurm.slurm_node("slinky-1").usable


def test_a_plain_pod_replacement_needs_nothing_resumed(slurm):
    slurm.replace_pod("slinky-1")
    cluster = RealSlurm(
        slurm,
        [(nodeset(ready=1), [*_pods("slinky-0"), pod(1, hostname="slinky-1", ready=False)], None)] * 2
        + [ROLLED_OUT],
    )
    result, _ = _settle(cluster)
    assert cluster.updates == [] and "take jobs" in result


def test_an_admin_drain_is_left_alone_and_reported(slurm):
    _scontrol(slurm, "nodename=slinky-1", "state=drain", "reason=maintenance: bad DIMM")
    cluster = RealSlurm(slurm, [ROLLED_OUT])
    with pytest.raises(rollout.RolloutFailed) as failed:
        _settle(cluster)
    drained = slurm.slurm_node("slinky-1")
    assert cluster.updates == [] and drained.state == "IDLE+DRAIN+DYNAMIC_NORM", drained.describe()
    assert (
        "slinky-1 IDLE+DRAIN+DYNAMIC_NORM reason 'maintenance: bad DIMM': not the rollout's doing; left alone"
    ) in str(failed.value)


def test_the_249_stall_is_undrained_on_real_slurm(slurm):
    # The operator drained slinky-1, its preStop ran, the pod is gone and none replaces it.
    _scontrol(slurm, "nodename=slinky-1", "state=drain", OPERATOR_DRAIN)
    slurm.prestop("slinky-1")
    slurm.stop_slurmd("slinky-1")
    stalled = (nodeset(replicas=1, updated=1, ready=1), _pods("slinky-0"), None)

    def operator_creates_the_pod():  # within one reconcile of the undrain (#249)
        slurm.start_slurmd("slinky-1")
        return [ROLLED_OUT]

    cluster = RealSlurm(slurm, [stalled], after_update=operator_creates_the_pod)
    result, said = _settle(cluster, stall_after=2)
    assert cluster.updates == [["scontrol", "update", "nodename=slinky-1", "state=undrain"]]
    assert "SlinkyProject/slurm-operator#249" in said and "undraining slinky-1" in said
    assert "DRAIN" in said and PRESTOP in said
    assert "take jobs" in result and slurm.slurm_node("slinky-1").usable


def test_a_node_that_never_comes_back_fails_with_node_state_reason_and_time(slurm):
    slurm.prestop("slinky-1")
    slurm.stop_slurmd("slinky-1")
    # Under load, a registration of the slurmd an earlier test started can land after the preStop's
    # DOWN and return the node (ReturnToService=2); that slurmd gone, the controller is told again.
    if slurm.slurm_node("slinky-1").base != "DOWN":
        _scontrol(slurm, "nodename=slinky-1", "state=down", f"reason={PRESTOP}")
    # Its replacement pod never becomes Ready: the rollout does not finish, nothing is resumed.
    never = (nodeset(ready=1), [*_pods("slinky-0"), pod(1, hostname="slinky-1", ready=False)], None)
    cluster = RealSlurm(slurm, [never])
    with pytest.raises(rollout.RolloutFailed) as failed:
        _settle(cluster, timeout=3)
    message = str(failed.value)
    down = slurm.slurm_node("slinky-1")
    assert cluster.updates == [] and down.base == "DOWN", down.describe()
    assert message.startswith("not finished after 3s (limit 3s)") and "ready 1/2" in message
    assert f"slinky-1 {down.state} reason {PRESTOP!r}" in message


def test_an_old_pod_still_running_keeps_the_wait_going(slurm):
    views = [(nodeset(updated=1), [*_pods("slinky-0"), pod(1, OLD_REVISION, hostname="slinky-1")], None)] * 3
    cluster = RealSlurm(slurm, [*views, ROLLED_OUT])
    result, said = _settle(cluster)
    assert cluster.polls == 4 and "in progress: updated 1/2" in said and "take jobs" in result


# ReturnToService=2 (the chart's base values) with the old slurmd still answering.


def test_return_to_service_2_keeps_the_rollouts_drain_while_the_old_slurmd_answers(slurm):
    _scontrol(slurm, "nodename=slinky-1", "state=drain", OPERATOR_DRAIN)
    slurm.prestop("slinky-1")
    # Ten times as long as a DOWN-only node takes to return (the next test: about a second).
    node = _until(slurm, "slinky-1", lambda n: n.usable, timeout=10)
    assert "DRAIN" in node.flags and not node.usable, node.describe()


def test_return_to_service_2_returns_a_down_only_node_while_its_old_slurmd_answers(slurm):
    # A pod deleted outside a rollout gets only the preStop's DOWN: the node takes jobs again
    # while the old slurmd answers, so the rollout wait trusts no node while a pod terminates.
    slurm.prestop("slinky-1")
    assert _until(slurm, "slinky-1", lambda n: n.usable, timeout=30).usable


# verify's Slurm node check reads the nodes with this model (tools/verify.py check_slurm_nodes):
# on real Slurm it takes a busy node as taking jobs and names a drained one stuck, as the rollout does.


def _verify_nodes(slurm):
    (pool,) = verify.pools_of({"gpuInstanceType": "g6.12xlarge", "gpuNodeCount": len(NODES)})
    return verify.check_slurm_nodes(slurm.run(["scontrol", "-o", "show", "node"]).stdout, pool)


def test_verify_takes_a_node_running_a_job_as_taking_jobs(slurm):
    job = slurm.run(["sbatch", "--parsable", "-w", "slinky-0", "-o", "/dev/null", "--wrap", "sleep 120"])
    assert job.returncode == 0, job.stderr
    try:
        busy = _until(slurm, "slinky-0", lambda n: n.base in ("ALLOCATED", "MIXED"))
        assert busy.base in ("ALLOCATED", "MIXED") and busy.usable, busy.describe()
        check = _verify_nodes(slurm)
        # sinfo shows this node `allocated` or `mixed`, which the rule verify had took as wrong.
        assert check.ok, check.detail
    finally:
        slurm.run(["scancel", job.stdout.strip()])
        # The job gone from the node before the next test: a slurmd still ending a step holds off
        # SIGTERM, and the module's cluster stops only after _stop's 15 s.
        _until(slurm, "slinky-0", lambda n: n.base == "IDLE" and "COMPLETING" not in n.flags)


def test_verify_names_a_drained_node_stuck_as_the_rollout_does(slurm):
    _scontrol(slurm, "nodename=slinky-1", "state=drain", "reason=maintenance: bad DIMM")
    drained = _until(slurm, "slinky-1", lambda n: "DRAIN" in n.flags)
    check = _verify_nodes(slurm)
    assert drained.stuck and not check.ok and "DOWN/DRAIN: slinky-1;" in check.detail, check.detail
