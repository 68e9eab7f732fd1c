"""Where the stack's pods go in a cluster it shares: every block that selects the stack's nodes by
`role` also selects its own label, and one that selects the core nodes tolerates their taint."""

from model.builders.stack_placement import StackPlacement
from model.facts.contract import CORE_LABELS, GPU_LABELS, GPU_TOLERATION, STACK_LABEL

PLACEMENT = StackPlacement("slurm-a")
TOLERATION = {"key": STACK_LABEL, "operator": "Exists", "effect": "NoSchedule"}


def test_the_nodes_label_and_the_core_taint_carry_the_clusters_name():
    assert PLACEMENT.labels == {STACK_LABEL: "slurm-a"}
    assert PLACEMENT.core_taint.node_group == {
        "key": STACK_LABEL,
        "value": "slurm-a",
        "effect": "NO_SCHEDULE",
    }


def test_a_core_block_selects_the_stacks_label_and_tolerates_the_core_taint():
    placed = PLACEMENT.placed({"nodeSelector": dict(CORE_LABELS), "image": "x"})
    assert placed == {
        "nodeSelector": {**CORE_LABELS, STACK_LABEL: "slurm-a"},
        "image": "x",
        "tolerations": [TOLERATION],
    }


def test_a_gpu_block_selects_the_stacks_label_and_keeps_its_tolerations_only():
    placed = PLACEMENT.placed({"nodeSelector": dict(GPU_LABELS), "tolerations": [dict(GPU_TOLERATION)]})
    assert placed == {
        "nodeSelector": {**GPU_LABELS, STACK_LABEL: "slurm-a"},
        "tolerations": [dict(GPU_TOLERATION)],
    }


def test_a_block_placed_twice_is_placed_once():
    once = PLACEMENT.placed({"nodeSelector": dict(CORE_LABELS)})
    assert PLACEMENT.placed(once) == once


def test_a_selector_not_of_the_stacks_nodes_is_left_alone():
    block = {"nodeSelector": {"kubernetes.io/os": "linux"}}
    assert PLACEMENT.placed(block) == block


def test_the_given_block_is_not_changed():
    selector = dict(CORE_LABELS)
    PLACEMENT.placed({"nodeSelector": selector})
    assert selector == CORE_LABELS
