"""The autoscaling triggers' PromQL (model/builders/autoscaling.py), evaluated by Debian's real promtool
(Prometheus 3.5.3, the sid test root) over series named and labelled as slurmctld exports them:
each query answers the node count the pool should have. promtool's rule unit tests evaluate a
recording rule per query at given instants (prometheus/prometheus docs/configuration/unit_testing_rules.md)."""

import json
import re
import subprocess

import pytest

from model.builders import autoscaling
from model.checks.gpu_pools import GpuPool
from model.facts import catalog
from tests.support.local_slurm import RootMissing, slurm_root

POOL = GpuPool("train", catalog.lookup("g6.12xlarge"), 2, "us-west-2a", 400, 0, 0, 4)
OTHER = 'partition="infer"'
# A stack of two pools, `train` first: the default partition `all` spans both.
INFER = GpuPool("infer", catalog.lookup("g6.12xlarge"), 2, "us-west-2a", 400, 0, 0, 4)
TWO = (POOL, INFER)


@pytest.fixture(scope="module")
def promtool():
    try:
        return slurm_root("sid") / "usr" / "bin" / "promtool"
    except RootMissing as e:
        pytest.fail(str(e))


def _answers(
    promtool, tmp_path, series: dict[str, str], expected: dict[str, float], pool=POOL, pools=()
) -> subprocess.CompletedProcess:
    """Run promtool's unit test: `series` maps a series (name{labels}) to its values over 1m
    steps; `expected` each trigger's answer at 5m for `pool` among the stack's `pools`."""
    queries = autoscaling.trigger_queries(pool, pools)
    rules = {
        "groups": [
            {
                "name": "triggers",
                "rules": [
                    {"record": f"trigger:{name.replace('-', '_')}", "expr": q} for name, q in queries.items()
                ],
            }
        ]
    }
    (tmp_path / "rules.yaml").write_text(json.dumps(rules))
    test = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in series.items()],
                "promql_expr_test": [
                    {
                        "expr": f"trigger:{name.replace('-', '_')}",
                        "eval_time": "5m",
                        "exp_samples": [{"labels": f"trigger:{name.replace('-', '_')}", "value": value}],
                    }
                    for name, value in expected.items()
                ],
            }
        ],
    }
    (tmp_path / "test.yaml").write_text(json.dumps(test))
    return subprocess.run(
        [str(promtool), "test", "rules", "test.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _series(name, partition="train"):
    return f'{name}{{partition="{partition}",instance="slurm-controller-0"}}'


@pytest.mark.slurm_root
def test_the_trigger_queries_are_valid_promql(promtool, tmp_path):
    rules = {
        "groups": [
            {
                "name": "t",
                "rules": [{"record": "t", "expr": q} for q in autoscaling.trigger_queries(POOL).values()],
            }
        ]
    }
    (tmp_path / "rules.yaml").write_text(json.dumps(rules))
    done = subprocess.run(
        [str(promtool), "check", "rules", "rules.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slurm_root
def test_pending_jobs_ask_for_a_node_each_beside_the_busy_ones_and_held_jobs_ask_for_none(promtool, tmp_path):
    done = _answers(
        promtool,
        tmp_path,
        {
            _series(autoscaling.PENDING_JOBS): "5x6",
            _series(autoscaling.HELD_JOBS): "2x6",
            _series(autoscaling.ALLOCATED_NODES): "1x6",
            _series(autoscaling.MIXED_NODES): "1x6",
            _series(autoscaling.LARGEST_PENDING_JOB_NODES): "1x6",
            f"{autoscaling.PENDING_JOBS}{{{OTHER}}}": "40x6",
        },
        {"pending-jobs": 5, "largest-pending-job": 3},
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slurm_root
def test_the_largest_pending_job_asks_for_all_its_nodes(promtool, tmp_path):
    done = _answers(
        promtool,
        tmp_path,
        {
            _series(autoscaling.PENDING_JOBS): "1x6",
            _series(autoscaling.HELD_JOBS): "0x6",
            _series(autoscaling.ALLOCATED_NODES): "0x6",
            _series(autoscaling.MIXED_NODES): "0x6",
            _series(autoscaling.LARGEST_PENDING_JOB_NODES): "4x6",
        },
        {"pending-jobs": 1, "largest-pending-job": 4},
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slurm_root
def test_an_idle_partition_asks_for_no_node(promtool, tmp_path):
    done = _answers(
        promtool,
        tmp_path,
        {
            _series(autoscaling.PENDING_JOBS): "0x6",
            _series(autoscaling.HELD_JOBS): "0x6",
            _series(autoscaling.ALLOCATED_NODES): "0x6",
            _series(autoscaling.MIXED_NODES): "0x6",
            _series(autoscaling.LARGEST_PENDING_JOB_NODES): "0x6",
        },
        {"pending-jobs": 0, "largest-pending-job": 0},
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slurm_root
def test_absent_series_answer_zero_rather_than_nothing(promtool, tmp_path):
    done = _answers(
        promtool,
        tmp_path,
        {f"{autoscaling.PENDING_JOBS}{{{OTHER}}}": "3x6"},
        {"pending-jobs": 0, "largest-pending-job": 0},
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slurm_root
def test_a_series_scraped_twice_is_counted_once(promtool, tmp_path):
    done = _answers(
        promtool,
        tmp_path,
        {
            _series(autoscaling.PENDING_JOBS): "2x6",
            f'{autoscaling.PENDING_JOBS}{{partition="train",instance="slurm-controller-1"}}': "2x6",
            _series(autoscaling.LARGEST_PENDING_JOB_NODES): "1x6",
        },
        {"pending-jobs": 2, "largest-pending-job": 1},
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slurm_root
def test_the_trigger_queries_of_the_first_of_several_pools_are_valid_promql(promtool, tmp_path):
    rules = {
        "groups": [
            {
                "name": "t",
                "rules": [
                    {"record": "t", "expr": q} for q in autoscaling.trigger_queries(POOL, TWO).values()
                ],
            }
        ]
    }
    (tmp_path / "rules.yaml").write_text(json.dumps(rules))
    done = subprocess.run(
        [str(promtool), "check", "rules", "rules.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# Jobs submitted without -p with several pools: pending in `all`, the default partition.
DEFAULT_QUEUE = {
    _series(autoscaling.PENDING_JOBS, "all"): "3x6",
    _series(autoscaling.HELD_JOBS, "all"): "1x6",
    _series(autoscaling.LARGEST_PENDING_JOB_NODES, "all"): "2x6",
    _series(autoscaling.ALLOCATED_NODES, "all"): "5x6",
}


@pytest.mark.slurm_root
def test_the_first_of_several_pools_wakes_for_the_default_partitions_pending_jobs(promtool, tmp_path):
    done = _answers(
        promtool,
        tmp_path,
        {
            **DEFAULT_QUEUE,
            _series(autoscaling.PENDING_JOBS): "1x6",
            _series(autoscaling.LARGEST_PENDING_JOB_NODES): "1x6",
            _series(autoscaling.ALLOCATED_NODES): "1x6",
        },
        # Its busy node, its own pending job and the two of `all` not held; the largest of both
        # queues beside the busy node. The nodes of `all` (other pools' too) are not its own.
        {"pending-jobs": 4, "largest-pending-job": 3},
        pools=TWO,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slurm_root
def test_the_other_pools_do_not_wake_for_the_default_partition(promtool, tmp_path):
    done = _answers(
        promtool,
        tmp_path,
        DEFAULT_QUEUE,
        {"pending-jobs": 0, "largest-pending-job": 0},
        pool=INFER,
        pools=TWO,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_single_pool_reads_its_own_partition_which_is_the_default():
    assert autoscaling.queue_partitions(POOL, (POOL,)) == ("train",)
    assert autoscaling.trigger_queries(POOL, (POOL,)) == autoscaling.trigger_queries(POOL)
    assert (
        re.findall(r"partition=~?\"([^\"]*)\"", " ".join(autoscaling.trigger_queries(POOL).values()))
        == ["train"] * 7
    )


def test_of_several_pools_only_the_first_reads_the_default_partition():
    assert autoscaling.queue_partitions(POOL, TWO) == ("train", "all")
    assert autoscaling.queue_partitions(INFER, TWO) == ("infer",)
    assert autoscaling.queue_partitions(INFER, (INFER, POOL)) == ("infer", "all")


def test_the_server_address_drops_the_endpoints_trailing_slash():
    assert (
        autoscaling.server_address("https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-1/")
        == "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-1"
    )


def test_a_pool_that_goes_to_zero_idles_at_zero_and_wakes_at_one():
    assert autoscaling.replica_bounds(POOL) == {
        "idleReplicaCount": 0,
        "minReplicaCount": 1,
        "maxReplicaCount": 4,
    }


def test_a_pool_with_a_floor_keeps_it_and_has_no_idle_count():
    pool = GpuPool("train", catalog.lookup("g6.12xlarge"), 2, "us-west-2a", 400, 0, 2, 6)
    assert autoscaling.replica_bounds(pool) == {"minReplicaCount": 2, "maxReplicaCount": 6}


def test_every_scale_down_waits_for_the_idle_period():
    spec = autoscaling.scaled_object_spec(POOL, "https://x", "us-west-2", "auth", 20)
    assert (
        spec["cooldownPeriod"],
        spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"][
            "stabilizationWindowSeconds"
        ],
    ) == (1200, 1200)


def test_the_scaled_object_targets_the_pools_nodeset_through_its_scale_subresource():
    ref = autoscaling.scaled_object_spec(POOL, "https://x", "us-west-2", "auth", 20)["scaleTargetRef"]
    assert ref == {"apiVersion": "slinky.slurm.net/v1beta1", "kind": "NodeSet", "name": "slurm-worker-train"}
