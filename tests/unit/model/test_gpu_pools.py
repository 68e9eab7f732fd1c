"""Each pool's minNodes and maxNodes (model/checks/gpu_pools.py; gpuMinNodes/gpuMaxNodes for the pool of a
stack without gpuPools): both default to nodeCount, a pool autoscales when min < max and starts at
min, and every refusal names the key, the value and what is allowed, all at once."""

import datetime
import json

import pytest

from model.checks import config_schema

DAY = datetime.date(2026, 12, 1)
OWN_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKxJ0hQ4mYH3q2u1cGlB6y1u0sD1n8n3zQ7y0w5f6h7L me@laptop"


def _check(**overrides):
    raw = {
        "aws:region": "us-west-2",
        "availabilityZone": "us-west-2a",
        "sshPublicKey": OWN_KEY,
        "sshAllowedCidrs": '["203.0.113.10/32"]',
        **overrides,
    }
    return config_schema.check(raw, "dev", DAY)


def _pools(*entries):
    return _check(gpuPools=json.dumps(list(entries)))


def _errors(checked):
    return [(p.key, p.value, p.message) for p in checked.problems if p.is_error]


def pool(**fields):
    return {"name": "train", "instanceType": "g6.12xlarge", "nodeCount": 2, **fields}


def test_the_bounds_default_to_the_node_count_and_the_pool_does_not_autoscale():
    (p,) = _check().pools
    assert (p.min_nodes, p.max_nodes, p.autoscales, p.initial_nodes) == (2, 2, False, 2)


def test_a_gpu_pools_entry_without_bounds_keeps_its_node_count():
    (p,) = _pools(pool(nodeCount=3)).pools
    assert (p.min_nodes, p.max_nodes, p.autoscales) == (3, 3, False)


def test_a_pool_with_min_below_max_autoscales_and_starts_at_min():
    (p,) = _pools(pool(minNodes=0, maxNodes=4)).pools
    assert (p.min_nodes, p.max_nodes, p.autoscales, p.initial_nodes) == (0, 4, True, 0)


def test_one_bound_set_takes_the_other_from_the_node_count():
    (p,) = _pools(pool(maxNodes=6)).pools
    assert (p.min_nodes, p.max_nodes) == (2, 6)


def test_the_default_pool_reads_gpu_min_and_max_nodes():
    (p,) = _check(gpuMinNodes="0", gpuMaxNodes="5").pools
    assert (p.min_nodes, p.max_nodes, p.autoscales, p.initial_nodes) == (0, 5, True, 0)


def test_gpu_min_nodes_alone_scales_the_default_pool_between_it_and_gpu_node_count():
    (p,) = _check(gpuMinNodes="0").pools
    assert (p.min_nodes, p.max_nodes) == (0, 2)


def test_a_minimum_above_the_maximum_is_refused_naming_both_keys():
    assert _errors(_pools(pool(minNodes=3, maxNodes=2))) == [
        (
            "gpuPools[0].minNodes",
            3,
            "at most gpuPools[0].maxNodes (2): the pool scales between minNodes and "
            "maxNodes (each defaults to nodeCount)",
        )
    ]


def test_a_minimum_above_the_defaulted_maximum_says_it_defaults_to_the_node_count():
    assert _errors(_check(gpuMinNodes="3")) == [
        (
            "gpuMinNodes",
            3,
            "at most gpuMaxNodes (2): the pool scales between minNodes and maxNodes (each "
            "defaults to nodeCount)",
        )
    ]


@pytest.mark.parametrize(
    "field, value, allowed",
    [
        ("minNodes", -1, "a whole number from 0 to 64"),
        ("minNodes", 65, "a whole number from 0 to 64"),
        ("minNodes", "1", "a whole number from 0 to 64"),
        ("maxNodes", 0, "a whole number from 1 to 64"),
        ("maxNodes", 65, "a whole number from 1 to 64"),
        ("maxNodes", True, "a whole number from 1 to 64"),
    ],
)
def test_a_pool_bound_out_of_range_is_refused(field, value, allowed):
    assert _errors(_pools(pool(**{field: value}))) == [(f"gpuPools[0].{field}", value, allowed)]


@pytest.mark.parametrize(
    "key, raw, allowed",
    [
        ("gpuMinNodes", "65", "a whole number from 0 to 64, or -1 (the default) for gpuNodeCount"),
        ("gpuMinNodes", "-2", "a whole number from 0 to 64, or -1 (the default) for gpuNodeCount"),
        ("gpuMaxNodes", "0", "a whole number from 1 to 64, or -1 (the default) for gpuNodeCount"),
        ("gpuMaxNodes", "lots", "a whole number from 1 to 64, or -1 (the default) for gpuNodeCount"),
    ],
)
def test_a_default_pool_bound_out_of_range_is_refused_once(key, raw, allowed):
    assert _errors(_check(**{key: raw})) == [(key, raw, allowed)]


def test_every_bound_problem_of_every_pool_comes_back_at_once():
    found = _errors(_pools(pool(minNodes=5, maxNodes=1), pool(name="big", minNodes=-1, maxNodes=99)))
    assert [key for key, _, _ in found] == [
        "gpuPools[0].minNodes",
        "gpuPools[1].minNodes",
        "gpuPools[1].maxNodes",
    ]


def test_a_refused_node_count_is_reported_once_and_only_set_bounds_are_checked():
    found = _errors(_pools(pool(nodeCount=0, maxNodes=99)))
    assert [key for key, _, _ in found] == ["gpuPools[0].nodeCount", "gpuPools[0].maxNodes"]


def test_a_refused_gpu_node_count_leaves_the_defaulted_bounds_unreported():
    assert [key for key, _, _ in _errors(_check(gpuNodeCount="0", gpuMaxNodes="4"))] == ["gpuNodeCount"]


def test_gpu_min_and_max_nodes_beside_gpu_pools_are_ignored_with_a_warning():
    checked = _check(gpuPools=json.dumps([pool()]), gpuMaxNodes="8")
    (p,) = [p for p in checked.problems if not p.is_error]
    assert (
        p.key == "gpuMaxNodes"
        and "ignored: gpuPools overrides it (each pool sets its own maxNodes)" in p.message
    )


def test_an_unknown_pool_field_lists_the_bounds_among_the_fields():
    (found,) = _errors(_pools(pool(minimum=0)))
    assert found[2].endswith("minNodes, maxNodes")


def test_an_autoscaling_pool_on_a_kubernetes_keda_does_not_support_is_warned_of():
    checked = _check(gpuMinNodes="0", gpuMaxNodes="3", kubernetesVersion="1.32")
    assert [p.message for p in checked.problems if "KEDA" in p.message and not p.is_error] == [
        "kubernetesVersion 1.32: KEDA 2.20.2, which scales the autoscaling pools, is supported and tested on "
        "Kubernetes 1.33 or higher (its chart's NOTES.txt); upgrade the cluster"
    ]


def test_a_fixed_pool_on_that_kubernetes_is_not_warned_of_keda():
    checked = _check(kubernetesVersion="1.32")
    assert not [p for p in checked.problems if "KEDA" in p.message]


def test_an_autoscaling_pool_on_a_kubernetes_without_a_cluster_autoscaler_release_is_refused(monkeypatch):
    from model.facts import versions

    monkeypatch.delitem(versions.CLUSTER_AUTOSCALER_FOR_KUBERNETES, "1.36")
    (p,) = [p for p in _check(gpuMinNodes="0", gpuMaxNodes="3").problems if p.is_error]
    assert (p.key, p.value) == (
        "kubernetesVersion",
        "1.36",
    ) and "gpuMaxNodes makes a pool autoscale" in p.message


def test_an_autoscaling_pool_without_metrics_is_refused_naming_the_key():
    # The scaler's trigger reads the metrics store; without it the pool would never leave minNodes.
    (p,) = [p for p in _check(gpuMinNodes="0", gpuMaxNodes="3", metrics="false").problems if p.is_error]
    assert (p.key, p.value) == ("metrics", False) and "gpuMaxNodes makes a pool autoscale" in p.message


def test_metrics_refused_for_an_autoscaling_pool_is_shown_as_yaml_writes_it():
    (p,) = [p for p in _check(gpuMinNodes="0", gpuMaxNodes="3", metrics="false").problems if p.is_error]
    assert p.render("slinky-eks").startswith("slinky-eks:metrics = false: true, since gpuMaxNodes")


def test_a_node_count_of_zero_points_to_the_min_nodes_that_scale_a_pool_to_zero():
    (p,) = [p for p in _check(gpuNodeCount="0").problems if p.is_error]
    assert (p.key, p.rule.id) == ("gpuNodeCount", "node-count-zero")
    assert p.message.startswith(
        "a whole number from 1 to 64; for a pool that scales to zero, set gpuMinNodes = 0"
    )


def test_a_pool_node_count_of_zero_points_to_that_pools_min_nodes():
    entry = {"name": "a", "instanceType": "g6.12xlarge", "nodeCount": 0}
    (p,) = [p for p in _pools(entry).problems if p.is_error]
    assert p.key == "gpuPools[0].nodeCount" and "set gpuPools[0].minNodes = 0 instead" in p.message


def test_a_fixed_pool_without_metrics_is_accepted():
    assert not [p for p in _check(metrics="false").problems if p.is_error]
