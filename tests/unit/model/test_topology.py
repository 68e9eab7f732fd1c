"""Where a GPU node sits in the network as Slurm is told it: the Controller's topology.yaml
skeleton and a node's topology.slinky.slurm.net/spec annotation (model/builders/topology.py)."""

import pytest
import yaml

from model.builders import topology
from model.facts import instance_topology

CB = "cr-0123456789abcdef0"
TREE_POOL = topology.placement("train", "p5.48xlarge")
FLAT_POOL = topology.placement("infer", "g6.12xlarge")
BLOCK_POOL = topology.placement("burst", "p5.48xlarge", CB, 4)


def labels(l1: str, l2: str, l3: str) -> dict[str, str]:
    return dict(zip(instance_topology.NETWORK_NODE_LABELS, (l1, l2, l3), strict=True))


UNDER_A = labels("nn-top", "nn-mid", "nn-a")
UNDER_B = labels("nn-top", "nn-mid", "nn-b")


def test_a_pool_of_a_covered_type_is_on_the_tree_one_of_an_uncovered_type_is_flat():
    assert TREE_POOL.topology == "tree"
    assert FLAT_POOL.topology == "flat"


def test_a_pool_on_a_capacity_block_is_on_the_block_named_after_its_reservation():
    assert (BLOCK_POOL.topology, BLOCK_POOL.block, BLOCK_POOL.block_size) == ("block", CB, 4)


def test_a_block_placement_without_its_block_is_refused():
    with pytest.raises(ValueError, match="block"):
        topology.PoolPlacement("burst", "block")


def test_a_nodes_switch_path_is_its_three_network_nodes_top_first():
    assert topology.switch_path(UNDER_A) == ("nn-top", "nn-mid", "nn-a")


def test_a_node_missing_a_layer_has_no_switch_path():
    partial = dict(UNDER_A)
    del partial["topology.k8s.aws/network-node-layer-2"]
    assert topology.switch_path(partial) is None


def test_flat_is_the_one_cluster_default():
    doc = topology.controller_topology([TREE_POOL, FLAT_POOL, BLOCK_POOL], [])
    assert [t["topology"] for t in doc if t["cluster_default"]] == ["flat"]
    assert doc[0] == {"topology": "flat", "cluster_default": True, "flat": True}


def test_the_tree_is_a_root_over_the_layers_with_the_leaves_named_by_no_node():
    doc = topology.controller_topology(
        [TREE_POOL], [topology.switch_path(UNDER_A), topology.switch_path(UNDER_B)]
    )
    tree = next(t for t in doc if t["topology"] == "tree")
    assert tree["tree"]["switches"] == [
        {"switch": "network", "children": "nn-top"},
        {"switch": "nn-a"},
        {"switch": "nn-b"},
        {"switch": "nn-mid", "children": "nn-a,nn-b"},
        {"switch": "nn-top", "children": "nn-mid"},
    ]


def test_the_skeleton_names_no_node():
    text = topology.topology_yaml([TREE_POOL, BLOCK_POOL], [topology.switch_path(UNDER_A)])
    assert "nodes" not in text


def test_the_block_holds_the_capacity_block_sized_by_its_instance_count():
    doc = topology.controller_topology([BLOCK_POOL], [])
    block = next(t for t in doc if t["topology"] == "block")
    assert block["block"] == {"block_sizes": [4], "blocks": [{"block": CB}]}


def test_a_stack_of_flat_pools_has_only_the_flat_topology():
    assert [t["topology"] for t in topology.controller_topology([FLAT_POOL], [])] == ["flat"]


def test_the_file_is_the_same_data_as_yaml():
    paths = [topology.switch_path(UNDER_A)]
    text = topology.topology_yaml([TREE_POOL, BLOCK_POOL], paths)
    assert yaml.safe_load(text) == topology.controller_topology([TREE_POOL, BLOCK_POOL], paths)


def test_a_tree_nodes_spec_names_its_layer_3_network_node():
    assert topology.node_spec(TREE_POOL, UNDER_A) == "tree:nn-a"


def test_a_block_nodes_spec_names_its_leaf_and_its_block():
    assert topology.node_spec(BLOCK_POOL, UNDER_B) == f"tree:nn-b,block:{CB}"


def test_a_flat_pools_node_has_no_spec_even_with_labels():
    assert topology.node_spec(FLAT_POOL, UNDER_A) == ""


def test_a_tree_node_without_its_labels_has_no_spec():
    assert topology.node_spec(TREE_POOL, {}) == ""
