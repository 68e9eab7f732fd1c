"""Each GPU pool's placement and the network-topology writer's configuration, rights and pod
(model/builders/topology.py). The writer's rules are specified in
tests/unit/cluster_programs/test_network_topology.py, its objects in the stack in
tests/graph/test_network_topology.py."""

import json

import pytest

from cluster_programs import network_topology as writer
from model.builders import topology
from model.checks.gpu_pools import GpuPool
from model.facts import catalog
from model.facts.capacity import CAPACITY_BLOCK, ON_DEMAND_RESERVATION, Reservation

CB = "cr-0123456789abcdef0"
ODCR = "cr-0a1b2c3d4e5f60718"


def _reservation(rid: str, kind: str) -> Reservation:
    return Reservation(rid, "p5.48xlarge", "us-west-2a", "active", kind, 4, 4)


def test_a_pool_of_a_covered_type_is_on_the_tree_one_of_an_uncovered_type_is_flat():
    assert topology.placement("train", "p5.48xlarge").topology == "tree"
    assert topology.placement("infer", "g6.12xlarge").topology == "flat"


def test_a_pool_on_a_capacity_block_is_on_the_block_named_and_sized_by_its_reservation():
    pool = GpuPool(
        "burst", catalog.lookup("p5.48xlarge"), 4, "us-west-2a", 400, 0, capacity_reservation_id=CB
    )
    (place,) = topology.pool_placements([pool], {CB: _reservation(CB, CAPACITY_BLOCK)})
    assert (place.topology, place.block, place.block_size) == ("block", CB, 4)


def test_a_pool_on_an_on_demand_reservation_is_placed_by_its_type():
    pool = GpuPool(
        "train", catalog.lookup("p5.48xlarge"), 4, "us-west-2a", 400, 0, capacity_reservation_id=ODCR
    )
    (place,) = topology.pool_placements([pool], {ODCR: _reservation(ODCR, ON_DEMAND_RESERVATION)})
    assert place.topology == "tree"


def test_a_block_placement_without_its_block_is_refused():
    with pytest.raises(ValueError, match="block"):
        topology.PoolPlacement("burst", "block")


def test_only_placed_pools_name_a_partition_topology():
    places = [topology.placement("train", "p5.48xlarge"), topology.placement("infer", "g6.12xlarge")]
    assert topology.partition_topologies(places) == {"train": "tree"}


def test_a_stack_of_flat_pools_places_nothing():
    assert not topology.places_any([topology.placement("infer", "g6.12xlarge")])


def test_the_kinds_are_those_the_writer_reads():
    assert topology.KINDS == writer.KINDS


def test_the_writer_reads_the_three_network_node_labels_and_the_gpu_nodes():
    config = topology.writer_config([topology.placement("train", "p5.48xlarge")], "slurm")
    assert config["labelKeys"] == [f"topology.k8s.aws/network-node-layer-{i}" for i in (1, 2, 3)]
    assert config["nodeSelector"] == "role=gpu"


def test_the_writers_pod_gets_its_configuration_as_one_argument():
    places = [topology.placement("train", "p5.48xlarge")]
    spec = topology.writer_deployment_spec(places, "slurm", "code")
    (container,) = spec["template"]["spec"]["containers"]
    args = container["command"]
    assert json.loads(args[args.index("--config") + 1]) == topology.writer_config(places, "slurm")
