"""The names and labels several parts of the program must agree on (model/facts/contract.py), and
what is derived from them."""

from model.facts.contract import (
    GPU_TAINT,
    GPU_TOLERATION,
    Taint,
    label_selector,
    nodeset_object,
    slurm_node_prefix,
    worker_pod_prefix,
)


def test_a_taints_node_group_form_spells_its_effect_as_the_eks_api_does():
    assert Taint("k", "v", "NoSchedule").node_group == {"key": "k", "value": "v", "effect": "NO_SCHEDULE"}
    assert Taint("k", "v", "PreferNoSchedule").node_group["effect"] == "PREFER_NO_SCHEDULE"


def test_a_taints_toleration_admits_a_pod_whatever_the_taints_value():
    assert Taint("k", "v", "NoExecute").toleration == {
        "key": "k",
        "operator": "Exists",
        "effect": "NoExecute",
    }


def test_the_gpu_taint_is_keyed_by_the_gpu_resource_and_the_toleration_is_derived_from_it():
    assert GPU_TAINT == Taint("nvidia.com/gpu", "true", "NoSchedule")
    assert GPU_TOLERATION == GPU_TAINT.toleration


def test_a_nodeset_and_its_pods_are_named_as_the_slurm_chart_names_them():
    assert nodeset_object("slinky") == "slurm-worker-slinky"
    assert worker_pod_prefix("slinky") == "slurm-worker-slinky-"
    assert slurm_node_prefix("slinky") == "slinky-"


def test_a_label_selector_matches_every_label():
    assert label_selector({"role": "gpu", "pool": "train"}) == "role=gpu,pool=train"
