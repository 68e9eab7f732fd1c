"""Which instance types EC2's topology API covers (model/facts/instance_topology.py)."""

from model.facts import catalog, instance_topology


def test_the_dev_stacks_g6_is_not_covered():
    assert not instance_topology.is_covered("g6.12xlarge")


def test_p5_is_covered():
    assert instance_topology.is_covered("p5.48xlarge")


def test_every_covered_type_is_one_the_catalog_knows():
    assert instance_topology.COVERED_TYPES <= set(catalog.CATALOG)


def test_the_labels_are_the_three_network_node_layers_top_first():
    assert instance_topology.NETWORK_NODE_LABELS == tuple(
        f"topology.k8s.aws/network-node-layer-{i}" for i in (1, 2, 3)
    )


def test_p6_b200_whose_topology_has_four_layers_is_not_read_from_three_labels():
    assert not instance_topology.is_covered("p6-b200.48xlarge")
