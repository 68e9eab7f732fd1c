"""`pulumi up` waits only for what it needs: the modelled timeline of the real graph
(devkit/bench_timeline.py) stays within 5 % of the floor, and each wait the program no longer has
would push it past."""

import copy
import itertools

import pytest

from devkit import bench_timeline as bt
from devkit.offline_run import run_program

P5 = {"gpuInstanceType": "p5.48xlarge"}


def _wait(graph, dependent, dependency):
    """The graph with one more edge: `dependent` created after `dependency`."""
    graph = copy.deepcopy(graph)
    graph.named(dependent).dependencies.append(graph.named(dependency).urn)
    return graph


def _without(graph, name):
    graph = copy.deepcopy(graph)
    graph.resources = [r for r in graph.resources if r.name != name]
    return graph


def _end(graph):
    return max(bt.model(graph).finish.values())


SYSTEM_INSTALLS = [
    "lbc-identity",
    "lbc-release",
    "storage-ebs-csi",
    "storage-efs-csi",
    "slinky-cert-manager",
    "slinky-crds",
    "slinky-operator",
    "jobs-files",
]
# The waits this program had, each as the edges that restore it.
OLD_WAITS = {
    "node groups behind the pod-identity agent": [
        ("nodes-core", "cluster-pod-identity-agent"),
        ("nodes-gpu", "cluster-pod-identity-agent"),
    ],
    "everything behind the CoreDNS adoption": [(n, "nodes-coredns") for n in SYSTEM_INSTALLS],
    "login NLB behind the Slurm release": [("slurm-login", "slurm-release")],
}


def _old(graph, waits=OLD_WAITS):
    for edges in waits.values():
        for dependent, dependency in edges:
            graph = _wait(graph, dependent, dependency)
    return graph


def test_every_duration_names_its_source():
    steps = [*bt.DURATIONS.values(), bt.API_CALL, bt.NLB, bt.IMAGE_PULL, *bt.FROM_CACHE.values()]
    assert all(s.seconds >= 0 and len(s.source) > 10 for s in steps)


@pytest.mark.parametrize("overrides", [{}, P5], ids=["dev", "p5.48xlarge"])
def test_critical_path_is_within_5_percent_of_the_floor(dev, overrides):
    graph = dev if not overrides else run_program("dev", overrides)
    ratio = bt.report(graph, "test")[1]
    assert 1.0 <= ratio <= 1.05


def test_the_old_wiring_is_far_from_the_floor(dev):
    assert bt.report(_without(_old(dev), "prepull-ds"), "old")[1] > 1.2


@pytest.mark.parametrize("wait", sorted(OLD_WAITS))
def test_each_removed_wait_would_lengthen_pulumi_up(dev, wait):
    assert _end(_old(dev, {wait: OLD_WAITS[wait]})) > _end(dev) + 30


def test_without_the_prepull_pulumi_up_is_past_the_floor(dev):
    assert bt.report(_without(dev, "prepull-ds"), "no prepull")[1] > 1.05


def test_critical_path_runs_through_the_gpu_nodes_and_the_pull(dev):
    labels = [s.label for s in bt.critical_path(bt.model(dev))]
    steps = ("cluster-eks (", "nodes-gpu (NodeGroup)", "nodes-core (", "slurmd image pull")
    assert [label for label in labels if label.startswith(steps)] == [
        "cluster-eks (Cluster)",
        "nodes-gpu (NodeGroup)",
        "slurmd image pull (started by prepull-ds)",
    ]
    # The registration Job waits for the same release and ends with the readiness wait.
    assert labels[-1] in ("slurm-ready-job (Job)", "accounts-job (Job)")


def test_the_accounting_registration_adds_nothing_to_the_up(dev):
    # It waits for the release only (not for the nodes' readiness) and runs beside the readiness wait.
    assert _end(dev) == _end(_without(dev, "accounts-job"))


def test_critical_path_segments_are_contiguous(dev):
    path = bt.critical_path(bt.model(dev))
    assert path[0].start == 0
    assert all(a.end == b.start for a, b in itertools.pairwise(path))
    assert path[-1].end == _end(dev)


# The two waits the graph does not show.


def test_the_first_pod_of_the_image_pulls_it_and_slurmd_waits_for_that_pull(dev):
    t = bt.model(dev)
    assert dev.by_urn(t.first_puller).name == "prepull-ds"
    release = dev.named("slurm-release").urn
    assert t.bound[release] == ("pull", t.first_puller)
    assert (
        t.finish[release]
        == t.pull_start + bt.IMAGE_PULL.seconds + bt.FROM_CACHE["kubernetes:helm.sh/v3:Release"].seconds
    )


def test_without_a_prepull_the_release_pulls_when_it_starts(dev):
    graph = _without(dev, "prepull-ds")
    t = bt.model(graph)
    release = graph.named("slurm-release").urn
    assert t.first_puller == release and t.pull_start == t.start[release]


def test_login_service_is_done_no_earlier_than_the_login_pod(dev):
    # Its NLB is ready before the release's pods are: the await ends with the login pod.
    t = bt.model(dev)
    release, login = dev.named("slurm-release").urn, dev.named("slurm-login").urn
    assert t.start[login] + bt.NLB.seconds < t.finish[login]
    assert t.bound[login] == ("pods", release)
    assert t.finish[login] == t.start[release] + bt.DURATIONS["kubernetes:helm.sh/v3:Release"].seconds


# The tool.


def test_bench_timeline_prints_durations_path_floor_and_ratio(capsys):
    assert bt.main(["--set", "gpuInstanceType=p5.48xlarge"]) == 0
    out = capsys.readouterr().out
    assert "durations (s) and their sources:" in out and "critical path" in out
    assert "floor" in out and "ratio 1.0" in out


def test_bench_timeline_rejects_bad_config_in_one_message(capsys):
    assert bt.main(["--set", "gpuNodeCount=0"]) == 1
    err = capsys.readouterr().err
    assert "gpuNodeCount" in err and "Traceback" not in err


# The deployer's link and the builder.

SLOWEST = bt.Deployer("a 1 Mbit/s link", 1, 1, "the slowest link worth modelling")


@pytest.mark.parametrize("deployer", [*bt.DEPLOYERS, SLOWEST], ids=lambda d: d.name)
def test_the_in_region_up_stays_within_5_percent_of_its_infinite_link_floor(dev, deployer):
    assert bt.link_ratio(dev, bt.CODEBUILD, deployer) <= bt.LINK_BOUND


def test_a_local_build_puts_a_20_mbits_link_on_the_critical_path(dev):
    laptop = bt.DEPLOYERS[0]
    assert bt.link_ratio(dev, bt.LOCAL, laptop) > 2
    path = bt.critical_path(bt.model(dev, bt.image_build_step(bt.LOCAL, laptop)))
    assert [s.label for s in path if s.label.startswith("slurmd-build (")]  # the Image or the build run
    assert not [s for s in path if s.label.startswith("cluster-eks")]


def test_with_an_infinitely_fast_link_either_builder_gives_the_same_up(dev):
    assert bt.up_seconds(dev, bt.LOCAL, bt.INFINITE) == bt.up_seconds(dev, bt.CODEBUILD, bt.INFINITE)


def test_the_deployers_table_has_every_builder_at_every_link(dev):
    rows = bt.deploy_time_table(dev).splitlines()[2:]
    assert len(rows) == len(bt.DEPLOYERS) * len(bt.BUILDERS) + len(bt.BUILDERS)
    (ci_local,) = [r for r in rows if r.startswith("| CI runner") and "`local`" in r]
    assert "does not fit" in ci_local
    assert all(r.endswith("| 1.000 |") for r in rows if "`codebuild`" in r)


def test_bench_timeline_says_a_local_build_is_past_its_floor_and_exits_0(capsys):
    assert bt.main(["--builder", "local", "--link-down", "20", "--link-up", "20"]) == 0
    out = capsys.readouterr().out
    assert "local at 20/20 Mbit/s: `up` " in out and "past 1.05: the link is on the critical path" in out


def test_bench_timeline_fails_when_the_link_reaches_the_in_region_critical_path(capsys, monkeypatch):
    # A 10 GB build context would put the uplink on the in-region critical path.
    monkeypatch.setattr(bt, "context_gigabytes", lambda directory=bt.IMAGE_CONTEXT: 10.0)
    assert bt.main(["--link-up", "20"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("FAILED: codebuild at 20/20 Mbit/s") and "PAST 1.05" in err
