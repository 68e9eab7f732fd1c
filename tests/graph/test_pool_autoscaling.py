"""An autoscaling pool's ScaledObject (components/pool_autoscaling.py) in a stack of several pools:
which partitions' queues its triggers read (model/builders/autoscaling.py queue_partitions)."""

import json
import re

import pytest

from devkit.offline_run import run_program

# Two pools that both go to zero: a job without -p goes to `all` and only `train` (first) wakes.
TWO_AT_ZERO = [
    {"name": "train", "instanceType": "g6.12xlarge", "nodeCount": 2, "minNodes": 0, "maxNodes": 4},
    {"name": "infer", "instanceType": "g6e.12xlarge", "nodeCount": 1, "minNodes": 0, "maxNodes": 2},
]


@pytest.fixture(scope="module")
def two():
    graph = run_program("dev", {"gpuPools": json.dumps(TWO_AT_ZERO)})
    assert graph.error is None, graph.error
    return graph


def _partitions_read(graph, pool: str) -> dict[str, list[str]]:
    """Each trigger's partition matchers, as its PromQL spells them (`a|b`: a regex over both)."""
    triggers = graph.named(f"keda-{pool}").inputs["spec"]["triggers"]
    return {
        t["name"]: sorted(set(re.findall(r'partition=~?"([^"]*)"', t["metadata"]["query"]))) for t in triggers
    }


def test_the_first_pool_of_several_also_reads_the_default_partitions_queue(two):
    assert _partitions_read(two, "train") == {
        "pending-jobs": ["all", "train"],
        # Its busy nodes are its own partition's; the largest pending job is of either queue.
        "largest-pending-job": ["train", "train|all"],
    }


def test_the_other_pools_read_their_own_partition_only(two):
    assert _partitions_read(two, "infer") == {"pending-jobs": ["infer"], "largest-pending-job": ["infer"]}
