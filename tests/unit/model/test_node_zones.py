"""Where the nodes' subnets go (model/facts/node_zones.py): no existing subnet moves when a pool
zone is added, removed or the pools reordered."""

import pytest

from model.facts.node_zones import NodeZone, order, private_cidr, public_cidr, subnet_key

VPC = "10.0.0.0/16"
A, B = NodeZone("us-west-2a", "usw2-az2"), NodeZone("us-west-2b", "usw2-az1")
C, D = NodeZone("us-west-2c", "usw2-az3"), NodeZone("us-west-2d", "usw2-az4")


def test_the_cluster_zones_keep_positions_0_and_1_whatever_the_pools():
    zones = order((A, B), [D, A, C])
    assert [(z.name, z.cluster_position) for z in zones[:2]] == [("us-west-2a", 0), ("us-west-2b", 1)]


def test_pool_zones_follow_once_each_by_zone_id_whatever_the_pools_order():
    assert order((A, B), [D, C, D]) == order((A, B), [C, D]) == (*order((A, B), [])[:2], C, D)


def test_a_cluster_zone_takes_an_eighth_of_the_vpc_for_its_private_and_its_public_subnet():
    first, second = order((A, B), [])
    assert (private_cidr(VPC, first), private_cidr(VPC, second)) == ("10.0.0.0/19", "10.0.32.0/19")
    assert (public_cidr(VPC, first), public_cidr(VPC, second)) == ("10.0.128.0/19", "10.0.160.0/19")


def test_a_pool_zones_private_subnet_is_the_half_eighth_of_its_zone_id_number():
    # usw2-az4: slot 3, the second half of the eighth at index 3 (10.0.96.0/19).
    assert private_cidr(VPC, D) == "10.0.112.0/20"
    assert private_cidr(VPC, NodeZone("x", "usw2-az1")) == "10.0.64.0/20"


def test_a_pool_zone_has_no_public_subnet():
    with pytest.raises(ValueError, match="us-west-2d is a pool zone"):
        public_cidr(VPC, D)


def test_a_zone_id_without_a_slot_is_refused():
    assert NodeZone("x", "usw2-az9").pool_slot is None
    with pytest.raises(ValueError, match="no pool zone slot"):
        private_cidr(VPC, NodeZone("x", "usw2-az9"))


def test_a_subnet_is_keyed_by_position_for_a_cluster_zone_and_by_name_for_a_pool_zone():
    first, _, pool = order((A, B), [C])
    assert (subnet_key(first), subnet_key(pool)) == ("0", "us-west-2c")
