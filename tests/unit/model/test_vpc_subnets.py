"""The rules of a given VPC, as pure functions: the subnet id lists, the three keys together, the
way out of a route table, the addresses a node takes, where the pools and the login go."""

import pytest

from model.checks import vpc_subnets
from model.checks.vpc_subnets import ExistingVpc, RouteTable, Subnet, Vpc

VPC = Vpc(
    "vpc-0a1b2c3d4e5f60718",
    "arn:aws:ec2:us-west-2:123456789012:vpc/vpc-0a1b2c3d4e5f60718",
    "123456789012",
    "10.64.0.0/16",
)


def subnet(sid: str, zone: str) -> Subnet:
    return Subnet(sid, VPC.vpc_id, zone, "usw2-az1", 1000)


def ids(problems) -> list[str]:
    return [p.rule.id for p in problems]


def test_subnet_ids_take_eight_or_seventeen_hex_digits():
    assert vpc_subnets.subnet_ids("privateSubnetIds", ["subnet-0a1b2c3d", "subnet-0a1b2c3d4e5f60718"]) == []


@pytest.mark.parametrize(
    "value", [["subnet-xyz"], ["subnet-0a1b2c"], ["sg-0a1b2c3d"], ["subnet-0A1B2C3D"], [7], "subnet-0a1b2c3d"]
)
def test_anything_else_is_refused_as_a_subnet_id(value):
    assert ids(vpc_subnets.subnet_ids("privateSubnetIds", value)) == ["subnet-ids"]


def test_a_subnet_given_twice_is_refused_once():
    found = vpc_subnets.subnet_ids("privateSubnetIds", ["subnet-0a1b2c3d", "subnet-0a1b2c3d"])
    assert [(p.rule.id, p.value) for p in found] == [("subnet-ids", "subnet-0a1b2c3d")]


def test_subnets_without_a_vpc_are_refused_per_key():
    found = vpc_subnets.keys_fit(
        {"vpcId": "", "privateSubnetIds": ["subnet-0a1b2c3d"], "publicSubnetIds": []}
    )
    assert [(p.rule.id, p.key) for p in found] == [("subnets-need-vpc", "privateSubnetIds")]


def test_no_vpc_and_no_subnets_is_the_stacks_own_network():
    assert vpc_subnets.keys_fit({"vpcId": "", "privateSubnetIds": [], "publicSubnetIds": []}) == []


def test_a_vpc_needs_private_subnets():
    found = vpc_subnets.keys_fit({"vpcId": VPC.vpc_id, "privateSubnetIds": [], "publicSubnetIds": []})
    assert ids(found) == ["vpc-needs-private-subnets"]


def test_a_subnet_both_private_and_public_is_refused():
    both = ["subnet-0a1b2c3d"]
    found = vpc_subnets.keys_fit({"vpcId": VPC.vpc_id, "privateSubnetIds": both, "publicSubnetIds": both})
    assert [(p.rule.id, p.key) for p in found] == [("subnet-private-and-public", "publicSubnetIds")]


DEFAULTS = {"vpcCidr": "10.0.0.0/16", "flowLogsDestination": "cloud-watch-logs", "flowLogsRetentionDays": 90}


@pytest.mark.parametrize(
    "key, value", [("vpcCidr", "10.1.0.0/16"), ("flowLogsDestination", "s3"), ("flowLogsRetentionDays", 30)]
)
def test_a_key_of_the_stacks_own_vpc_other_than_its_default_beside_a_vpc_is_a_warning(key, value):
    found = vpc_subnets.own_network_keys_ignored({"vpcId": VPC.vpc_id, **DEFAULTS, key: value}, DEFAULTS)
    assert [(p.rule.id, p.key) for p in found] == [("own-network-key-ignored", key)] and not found[0].is_error


def test_the_own_vpc_keys_at_their_defaults_beside_a_vpc_say_nothing():
    assert vpc_subnets.own_network_keys_ignored({"vpcId": VPC.vpc_id, **DEFAULTS}, DEFAULTS) == []


def test_the_own_vpc_keys_without_a_vpc_say_nothing():
    assert (
        vpc_subnets.own_network_keys_ignored({"vpcId": "", **DEFAULTS, "vpcCidr": "10.1.0.0/16"}, DEFAULTS)
        == []
    )


@pytest.mark.parametrize(
    "target",
    [
        {"nat_gateway_id": "nat-0a1b"},
        {"transit_gateway_id": "tgw-0a1b"},
        {"network_interface_id": "eni-0a1b"},
        {"instance_id": "i-0a1b"},
        {"vpc_peering_connection_id": "pcx-0a1b"},
        {"core_network_arn": "arn:aws:networkmanager::123456789012:core-network/core-network-0a1b"},
        {"gateway_id": "vgw-0a1b"},
        {"vpc_endpoint_id": "vpce-0a1b"},
    ],
)
def test_a_default_route_to_any_way_out_is_a_route_out(target):
    table = RouteTable("rtb-0a1b", ({"cidr_block": "0.0.0.0/0", **target},), main=False)
    assert table.route_out() == next(iter(target.values()))


@pytest.mark.parametrize(
    "routes",
    [
        (),
        ({"cidr_block": "0.0.0.0/0", "gateway_id": "igw-0a1b"},),
        ({"cidr_block": "10.0.0.0/8", "transit_gateway_id": "tgw-0a1b"},),
    ],
    ids=["none", "internet-gateway", "not-default"],
)
def test_no_default_route_out_is_none(routes):
    assert RouteTable("rtb-0a1b", routes, main=True).route_out() is None


def test_a_node_takes_two_interfaces_worth_of_addresses():
    assert vpc_subnets.node_addresses(30) == 60


def test_the_first_given_subnet_of_each_az_takes_its_pool():
    first, second, other = (
        subnet("subnet-0000000a", "us-west-2a"),
        subnet("subnet-0000000b", "us-west-2a"),
        subnet("subnet-0000000c", "us-west-2b"),
    )
    given = ExistingVpc(VPC, (first, second, other))
    assert given.private_by_zone == {"us-west-2a": first, "us-west-2b": other}


def test_the_login_goes_to_one_public_subnet_per_az():
    a, a2, b = (
        subnet("subnet-0000000a", "us-west-2a"),
        subnet("subnet-0000000b", "us-west-2a"),
        subnet("subnet-0000000c", "us-west-2b"),
    )
    given = ExistingVpc(VPC, (subnet("subnet-0000000d", "us-west-2c"),), (a, a2, b))
    assert given.login_subnet_ids == ("subnet-0000000a", "subnet-0000000c") and not given.login_internal


def test_without_public_subnets_the_login_is_internal_in_the_private_ones():
    a, b = subnet("subnet-0000000a", "us-west-2a"), subnet("subnet-0000000c", "us-west-2b")
    given = ExistingVpc(VPC, (a, b))
    assert given.login_internal and given.login_subnet_ids == ("subnet-0000000a", "subnet-0000000c")


def test_a_default_route_to_an_internet_gateway_is_a_way_in():
    table = RouteTable("rtb-0a1b", ({"cidr_block": "0.0.0.0/0", "gateway_id": "igw-0a1b"},), main=False)
    assert table.internet_gateway() == "igw-0a1b" and table.route_out() is None


@pytest.mark.parametrize(
    "route",
    [
        {"cidr_block": "0.0.0.0/0", "nat_gateway_id": "nat-0a1b"},
        {"cidr_block": "0.0.0.0/0", "gateway_id": "vgw-0a1b"},
        {"cidr_block": "10.0.0.0/8", "gateway_id": "igw-0a1b"},
    ],
    ids=["nat", "vpn-gateway", "not-default"],
)
def test_anything_else_is_no_internet_gateway(route):
    assert RouteTable("rtb-0a1b", (route,), main=False).internet_gateway() is None
