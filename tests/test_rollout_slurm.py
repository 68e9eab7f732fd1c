"""tools/rollout.py, the Slurm half, on a real Slurm cluster (tests/local_slurm.py): the node
states the operator's rollout leaves, made with the same scontrol commands (the worker preStop,
slurm-operator v1.2.1 internal/builder/workerbuilder/worker_app.go), and the NodeSet side served
by the fake API. Decisions are read from what this Slurm prints; nothing is canned."""
from __future__ import annotations

import os
import subprocess
import time

import pytest

from local_slurm import NODES, LocalSlurm, missing_binaries
from rollout_fakes import OLD_REVISION, nodeset, pod
from tools import rollout

pytestmark = pytest.mark.slurm
PRESTOP = "slurm-operator: Pod is terminating"


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    if os.geteuid() != 0 or missing_binaries():
        pytest.fail("the Slurm-half tests start a real Slurm cluster: they need root and Debian's Slurm "
                    f"packages (missing: {missing_binaries()}); `make test` installs them")
    cluster = LocalSlurm(tmp_path_factory.mktemp("slurm")).start()
    yield cluster
    cluster.stop()


class RealSlurm:
    """tools.rollout.Cluster: the NodeSet side from a list of views (the last repeats; an update
    may switch to another list), Slurm from the real cluster's scontrol."""

    def __init__(self, slurm: LocalSlurm, views, after_update=None):
        self.slurm_env, self.views, self.after_update = slurm.env, list(views), after_update
        self.polls, self.updates = 0, []

    def nodeset(self):
        self.view = self.views[min(self.polls, len(self.views) - 1)]
        self.polls += 1
        return self.view[0]

    def pods(self, selector):
        return self.view[1]

    def slurm(self, argv):
        if argv[:2] == ["scontrol", "update"]:
            self.updates.append(argv)
            if self.after_update:
                self.views, self.polls = self.after_update, 0
        return subprocess.run(argv, env=self.slurm_env, capture_output=True, text=True, check=True).stdout


def _pods(*names, **kw):
    return [pod(i, hostname=n, **kw) for i, n in enumerate(names)]


def _scontrol(slurm, *args):
    subprocess.run(["scontrol", "update", *args], env=slurm.env, check=True)


def _node(slurm, name) -> rollout.SlurmNode:
    out = subprocess.run(["scontrol", "-o", "show", "node", name], env=slurm.env, capture_output=True, text=True).stdout
    (node,) = rollout.parse_scontrol(out)
    return node


def _settle(cluster, timeout=30, stall_after=300):
    logs = []
    result = rollout.settle(cluster, "n", timeout, poll=0.5, stall_after=stall_after, log=logs.append)
    return result, "\n".join(logs)


@pytest.fixture(autouse=True)
def all_idle(slurm):
    """Each test starts and ends with both nodes taking jobs."""
    def wait():
        deadline = time.time() + 60
        while not all(_node(slurm, n).usable for n in NODES):
            assert time.time() < deadline, [_node(slurm, n).describe() for n in NODES]
            time.sleep(0.5)
    wait()
    yield
    for n in NODES:
        if not _node(slurm, n).usable:
            _scontrol(slurm, f"nodename={n}", "state=resume")
    wait()


def test_a_node_left_down_by_an_operator_style_pod_replacement_is_resumed(slurm):
    _scontrol(slurm, "nodename=n2", "state=down", f"reason={PRESTOP}")
    left = _node(slurm, "n2")
    assert left.base == "DOWN" and left.reason == PRESTOP, left
    cluster = RealSlurm(slurm, [(nodeset(desired=2), _pods(*NODES), None)])
    result, said = _settle(cluster)
    assert cluster.updates == [["scontrol", "update", "nodename=n2", "state=resume"]]
    assert f"n2 {left.state} reason {PRESTOP!r}: left by the old pod's preStop; resuming" in said
    assert "2 Slurm nodes take jobs" in result and _node(slurm, "n2").usable


def test_an_admin_drain_is_left_alone_and_reported(slurm):
    _scontrol(slurm, "nodename=n2", "state=drain", "reason=maintenance: bad DIMM")
    cluster = RealSlurm(slurm, [(nodeset(desired=2), _pods(*NODES), None)])
    with pytest.raises(rollout.RolloutFailed) as failed:
        _settle(cluster)
    drained = _node(slurm, "n2")
    assert cluster.updates == [] and "DRAIN" in drained.flags, drained
    assert f"n2 {drained.state} reason 'maintenance: bad DIMM': not the rollout's doing; left alone" in str(failed.value)


def test_the_249_stall_is_undrained_on_real_slurm(slurm):
    # The operator drained n2 for the update, its preStop ran, the pod is gone, none replaces it.
    _scontrol(slurm, "nodename=n2", "state=drain", f"reason={PRESTOP}")
    stalled = (nodeset(replicas=1, updated=1, ready=1), _pods("n1"), None)
    recovered = [(nodeset(), _pods(*NODES), None)]
    cluster = RealSlurm(slurm, [stalled], after_update=recovered)
    result, said = _settle(cluster, stall_after=2)
    assert cluster.updates == [["scontrol", "update", "nodename=n2", "state=undrain"]]
    assert "SlinkyProject/slurm-operator#249" in said and "undraining n2" in said
    assert "take jobs" in result and _node(slurm, "n2").usable


def test_a_node_that_never_comes_back_fails_with_node_state_reason_and_time(slurm):
    _scontrol(slurm, "nodename=n2", "state=down", f"reason={PRESTOP}")
    # Its replacement pod never becomes Ready: the rollout does not finish, nothing is resumed.
    never = (nodeset(ready=1), [pod(0, hostname="n1"), pod(1, hostname="n2", ready=False)], None)
    cluster = RealSlurm(slurm, [never])
    with pytest.raises(rollout.RolloutFailed) as failed:
        _settle(cluster, timeout=3)
    message = str(failed.value)
    down = _node(slurm, "n2")
    assert cluster.updates == [] and down.base == "DOWN"
    assert message.startswith("not finished after 3s (limit 3s)") and "ready 1/2" in message
    assert f"n2 {down.state} reason {PRESTOP!r}" in message


def test_an_old_pod_still_running_keeps_the_wait_going(slurm):
    views = [(nodeset(updated=1), [pod(0, hostname="n1"), pod(1, OLD_REVISION, hostname="n2")], None)] * 3
    cluster = RealSlurm(slurm, views + [(nodeset(), _pods(*NODES), None)])
    result, said = _settle(cluster)
    assert cluster.polls == 4 and "in progress: updated 1/2" in said and "take jobs" in result


@pytest.fixture
def return_to_service_2(slurm):
    """The chart's setting (charts-values/slurm.yaml) on the test cluster, for one test."""
    original = slurm.conf.read_text()
    slurm.conf.write_text(original.replace("ReturnToService=1", "ReturnToService=2"))
    subprocess.run(["scontrol", "reconfigure"], env=slurm.env, check=True)
    yield
    slurm.conf.write_text(original)
    subprocess.run(["scontrol", "reconfigure"], env=slurm.env, check=True)


def _until(slurm, name, predicate, timeout=30):
    deadline = time.time() + timeout
    while not predicate(node := _node(slurm, name)) and time.time() < deadline:
        time.sleep(0.5)
    return node


def test_return_to_service_2_keeps_the_rollouts_drain_while_the_old_slurmd_answers(slurm, return_to_service_2):
    # processCondemned drains first, then the preStop sets DOWN; the old slurmd still answers.
    _scontrol(slurm, "nodename=n2", "state=drain", "reason=slurm-operator: Pod (slurm/w-1) is pending termination")
    _scontrol(slurm, "nodename=n2", "state=down", f"reason={PRESTOP}")
    node = _until(slurm, "n2", lambda n: n.base != "DOWN")
    assert node.base == "IDLE" and "DRAIN" in node.flags and not node.usable, node.describe()


def test_return_to_service_2_returns_a_down_only_node_while_its_old_slurmd_answers(slurm, return_to_service_2):
    # A pod deleted outside a rollout gets only the preStop's DOWN: the node takes jobs again
    # while the old slurmd answers, so the rollout wait must not trust a node whose pod terminates.
    _scontrol(slurm, "nodename=n2", "state=down", f"reason={PRESTOP}")
    assert _until(slurm, "n2", lambda n: n.usable).usable
