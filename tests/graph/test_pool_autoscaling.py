"""KEDA and one ScaledObject per autoscaling GPU pool (components/pool_autoscaling.py): the pool's
NodeSet follows its partition's pending work, asked of the metrics store under the KEDA operator's
own Pod Identity, whose role may only query that workspace. KEDA's rendered chart is specified in
tests/charts/test_scaling_charts.py; the queries in tests/unit/model/test_autoscaling.py."""

import json
import re

import pytest

from components import pool_autoscaling
from devkit.offline_run import run_program
from model.facts import versions

SCALED = {"gpuMinNodes": "0", "gpuMaxNodes": "4"}


@pytest.fixture(scope="module")
def scaled():
    return run_program("dev", SCALED)


def test_a_stack_without_autoscaling_pools_has_no_keda(dev):
    assert not dev.of_type("slinky-eks:scaling:PoolAutoscaling")


def test_keda_is_its_chart_at_its_pin_in_its_own_namespace(scaled):
    inputs = scaled.named("keda-release").inputs
    assert (inputs["chart"], inputs["version"]) == (versions.KEDA.chart, versions.KEDA.version)
    assert (inputs["namespace"], inputs["createNamespace"]) == ("keda", True)


def test_kedas_role_may_only_query_the_stacks_workspace(scaled):
    (statement,) = json.loads(scaled.named("keda-policy").inputs["policy"])["Statement"]
    assert statement["Action"] == ["aps:QueryMetrics"]
    # One workspace of the stack's account and region, by ARN: no wildcard.
    assert statement["Resource"].startswith("arn:aws:aps:us-west-2:123456789012:workspace/ws-")
    assert "*" not in statement["Resource"]


def test_kedas_identity_is_its_operators_service_account(scaled):
    association = scaled.named("keda-identity").inputs
    assert (association["namespace"], association["serviceAccount"]) == ("keda", "keda-operator")


def test_each_autoscaling_pool_gets_one_scaled_object_on_its_nodeset_beside_it(scaled):
    (scaled_object,) = scaled.of_type("kubernetes:keda.sh/v1alpha1:ScaledObject")
    assert scaled_object.name == "keda-slinky"
    assert scaled_object.inputs["metadata"]["namespace"] == "slurm"
    assert scaled_object.inputs["spec"]["scaleTargetRef"]["kind"] == "NodeSet"


def test_the_triggers_sign_with_kedas_own_identity(scaled):
    authentication = scaled.named("keda-authentication").inputs
    assert authentication["spec"] == {"podIdentity": {"provider": "aws"}}
    assert authentication["metadata"]["name"] == pool_autoscaling.AUTHENTICATION


def test_the_scaled_objects_wait_for_keda_and_the_nodesets_they_scale(scaled):
    scaled_object = scaled.named("keda-slinky")
    assert scaled.depends_on(scaled_object, scaled.named("keda-release"))
    assert scaled.depends_on(scaled_object, scaled.named("slurm-release"))


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
