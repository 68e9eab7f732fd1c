"""Into an existing VPC (vpcId, privateSubnetIds, publicSubnetIds): the landing zone of the offline
account (devkit/offline_account.py LANDING_ZONE). Nothing of the network is created, every node
group, mount target and the database's subnet group sit in the given subnets, the login NLB is
given its subnets, and each refusal comes before any resource, all at once."""

from dataclasses import replace

import pytest

from devkit import offline_account as lz
from devkit.offline_run import run_program
from model.builders import login_endpoint

PRIVATE = list(lz.LANDING_ZONE_PRIVATE.values())
PUBLIC = list(lz.LANDING_ZONE_PUBLIC.values())
GIVEN = {"vpcId": lz.LANDING_ZONE_VPC, "privateSubnetIds": PRIVATE, "publicSubnetIds": PUBLIC}

# Everything components/network.py creates for a VPC of its own, and what tags or changes a VPC.
NETWORK_TYPES = {
    "aws:ec2/vpc:Vpc",
    "aws:ec2/subnet:Subnet",
    "aws:ec2/routeTable:RouteTable",
    "aws:ec2/routeTableAssociation:RouteTableAssociation",
    "aws:ec2/route:Route",
    "aws:ec2/mainRouteTableAssociation:MainRouteTableAssociation",
    "aws:ec2/natGateway:NatGateway",
    "aws:ec2/eip:Eip",
    "aws:ec2/internetGateway:InternetGateway",
    "aws:ec2/flowLog:FlowLog",
    "aws:ec2/vpcEndpoint:VpcEndpoint",
    "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup",
    "aws:ec2/defaultRouteTable:DefaultRouteTable",
    "aws:ec2/tag:Tag",
}


def given(**changes):
    return run_program("dev", {**GIVEN, **changes}, account=lz.LANDING_ZONE)


def refused(**changes) -> str:
    graph = run_program("dev", {**GIVEN, **changes}, expect_error=True, account=lz.LANDING_ZONE)
    assert graph.resources == [], [r.name for r in graph.resources]
    return str(graph.error)


@pytest.fixture(scope="module")
def landing():
    return given()


def test_the_dev_graph_has_the_network_of_its_own(dev):
    # The other tests' premise: without vpcId the stack creates its VPC (tests/graph/test_network.py).
    assert dev.of_type("aws:ec2/vpc:Vpc") and not dev.of_type("slinky-eks:network:ExistingNetwork")


def test_nothing_of_the_network_is_created(landing):
    assert sorted({r.type for r in landing.resources} & NETWORK_TYPES) == []


def test_the_network_is_only_read_never_adopted(landing):
    # A resource read with `get` or imported would be the stack's to refresh or delete; the VPC is
    # read through invokes only, so destroy has nothing of it to touch.
    assert [r.name for r in landing.resources if r.read] == []
    assert not [r for r in landing.resources if r.inputs.get("vpcId") and r.type in NETWORK_TYPES]


def test_the_existing_network_component_creates_nothing(landing):
    (network,) = landing.of_type("slinky-eks:network:ExistingNetwork")
    assert [r.name for r in landing.resources if r.parent == network.urn] == []


def test_the_vpc_output_is_the_given_vpc(landing):
    assert landing.output("vpcId") == lz.LANDING_ZONE_VPC


def test_the_cluster_sits_in_the_given_vpc_and_subnets(landing):
    (eks,) = landing.of_type("eks:index:Cluster")
    assert eks.inputs["vpcId"] == lz.LANDING_ZONE_VPC
    assert eks.inputs["privateSubnetIds"] == PRIVATE
    assert eks.inputs["publicSubnetIds"] == PUBLIC


def test_the_core_nodes_sit_in_every_given_private_subnet(landing):
    assert landing.named("nodes-core").inputs["subnetIds"] == PRIVATE


def test_a_gpu_pool_sits_in_the_first_given_private_subnet_of_its_az():
    # The tiny subnet is given first in us-west-2a but has too few addresses; a pool in us-west-2c
    # goes to that AZ's subnet.
    graph = given(availabilityZone="us-west-2c")
    assert graph.named("nodes-gpu").inputs["subnetIds"] == [lz.LANDING_ZONE_PRIVATE["us-west-2c"]]


def test_every_node_group_sits_in_a_given_private_subnet(landing):
    groups = landing.of_type("aws:eks/nodeGroup:NodeGroup")
    assert groups and all(set(g.inputs["subnetIds"]) <= set(PRIVATE) for g in groups)


def test_one_mount_target_per_az_in_its_first_given_subnet(landing):
    targets = {t.name: t.inputs["subnetId"] for t in landing.of_type("aws:efs/mountTarget:MountTarget")}
    assert targets == {f"storage-efs-mt-{zone}": sid for zone, sid in lz.LANDING_ZONE_PRIVATE.items()}


def test_the_accounting_database_sits_in_the_given_private_subnets(landing):
    (group,) = landing.of_type("aws:rds/subnetGroup:SubnetGroup")
    assert group.inputs["subnetIds"] == PRIVATE


def test_the_metrics_scraper_sits_in_the_given_private_subnets(landing):
    (scraper,) = landing.of_type("aws:amp/scraper:Scraper")
    assert scraper.inputs["source"]["eks"]["subnetIds"] == PRIVATE


def test_the_login_load_balancer_is_given_the_public_subnets(landing):
    notes = landing.named("slurm-login").inputs["metadata"]["annotations"]
    assert notes[login_endpoint.SUBNETS] == ",".join(PUBLIC)
    assert notes[login_endpoint.SCHEME] == "internet-facing"


def test_without_public_subnets_the_login_load_balancer_is_internal_in_the_private_ones():
    graph = given(publicSubnetIds=[])
    notes = graph.named("slurm-login").inputs["metadata"]["annotations"]
    assert notes[login_endpoint.SCHEME] == "internal"
    assert notes[login_endpoint.SUBNETS] == ",".join(PRIVATE)
    assert graph.of_type("eks:index:Cluster")[0].inputs.get("publicSubnetIds") in (None, [])


def test_an_internal_login_that_no_allowed_block_can_reach_is_a_warning():
    # The dev stack's sshAllowedCidrs is one public address: no client of an internal NLB has it.
    graph = given(publicSubnetIds=[])
    (warned,) = [w for w in graph.warnings if "[internal-login-reach]" in w]
    assert "sshAllowedCidrs admits none of them" in warned and lz.LANDING_ZONE_VPC in warned


@pytest.mark.parametrize("block", ["10.64.8.0/24", "192.168.4.0/22", "100.64.0.0/16", "172.20.1.7/32"])
def test_an_internal_login_with_a_block_in_the_vpc_or_a_private_network_gets_no_warning(block):
    graph = given(publicSubnetIds=[], sshAllowedCidrs=["203.0.113.10/32", block])
    assert not [w for w in graph.warnings if "[internal-login-reach]" in w]


def test_an_internet_facing_login_gets_no_reach_warning(landing):
    assert not [w for w in landing.warnings if "[internal-login-reach]" in w]


def test_the_dev_login_load_balancer_discovers_its_subnets(dev):
    notes = dev.named("slurm-login").inputs["metadata"]["annotations"]
    assert login_endpoint.SUBNETS not in notes and notes[login_endpoint.SCHEME] == "internet-facing"


def test_a_private_subnet_out_through_a_transit_gateway_is_accepted():
    # Internal: the Transit Gateway's AZ (us-west-2d) has no public subnet.
    graph = given(privateSubnetIds=[*PRIVATE, lz.TRANSIT_SUBNET], publicSubnetIds=[])
    assert graph.named("nodes-core").inputs["subnetIds"] == [*PRIVATE, lz.TRANSIT_SUBNET]


# Refusals, before any resource, naming the key


def test_a_private_subnets_az_without_a_public_subnet_is_refused_for_an_internet_facing_login():
    message = refused(privateSubnetIds=[*PRIVATE, lz.TRANSIT_SUBNET])
    assert "us-west-2d has none" in message and "[login-subnet-zones]" in message


def test_an_internal_login_subnet_with_fewer_than_eight_free_addresses_is_refused():
    # Internal: the login NLB takes the first given private subnet of each AZ, here the /28.
    message = refused(privateSubnetIds=[lz.TINY_SUBNET, *PRIVATE], publicSubnetIds=[])
    assert f"{lz.TINY_SUBNET} (us-west-2a) has 5" in message and "[login-subnet-addresses]" in message


def test_a_vpc_that_does_not_exist_is_refused():
    said = refused(vpcId="vpc-0123456789abcdef0")
    assert "slinky-eks:vpcId = 'vpc-0123456789abcdef0'" in said and "[vpc-exists]" in said


def test_a_vpc_without_dns_hostnames_is_refused():
    vpc = lz.LANDING_ZONE.vpcs[lz.LANDING_ZONE_VPC]
    account = lz.LANDING_ZONE.but(vpcs={**lz.LANDING_ZONE.vpcs, vpc.vpc_id: replace(vpc, dns=False)})
    graph = run_program("dev", GIVEN, expect_error=True, account=account)
    assert graph.resources == [] and "[vpc-dns]" in str(graph.error)
    assert f"slinky-eks:vpcId = '{lz.LANDING_ZONE_VPC}'" in str(graph.error)


def test_a_subnet_that_does_not_exist_is_refused():
    said = refused(privateSubnetIds=[*PRIVATE, "subnet-0123456789abcdef0"])
    assert "slinky-eks:privateSubnetIds = 'subnet-0123456789abcdef0'" in said and "[subnet-exists]" in said


def test_a_subnet_of_another_vpc_is_refused():
    said = refused(publicSubnetIds=[*PUBLIC, lz.OTHER_VPC_SUBNET])
    assert f"slinky-eks:publicSubnetIds = '{lz.OTHER_VPC_SUBNET}'" in said
    assert f"is in {lz.OTHER_VPC}" in said and "[subnet-in-vpc]" in said


def test_a_private_subnet_without_a_route_out_is_refused():
    said = refused(privateSubnetIds=[*PRIVATE, lz.ISOLATED_SUBNET])
    assert f"slinky-eks:privateSubnetIds = '{lz.ISOLATED_SUBNET}'" in said
    assert "the VPC's main route table" in said and "[subnet-route-out]" in said


def test_a_private_subnet_routed_to_an_internet_gateway_is_refused():
    said = refused(privateSubnetIds=[*PRIVATE, PUBLIC[0]], publicSubnetIds=PUBLIC[1:])
    assert f"slinky-eks:privateSubnetIds = '{PUBLIC[0]}'" in said and "[subnet-route-out]" in said


def test_a_public_subnet_without_a_route_to_an_internet_gateway_is_refused():
    said = refused(publicSubnetIds=[*PUBLIC, lz.TRANSIT_SUBNET])
    assert f"slinky-eks:publicSubnetIds = '{lz.TRANSIT_SUBNET}'" in said
    assert "[public-subnet-internet-route]" in said


def test_the_login_service_goes_before_the_controller_that_deletes_its_nlb(landing):
    # The NLB sits in the given subnets; on destroy the controller must still run to delete it,
    # or it would be left in the VPC (tests/graph/scenarios/test_teardown.py for the dev stack).
    assert landing.depends_on(landing.named("slurm-login"), landing.named("lbc-release"))


def test_a_subnet_with_too_few_free_addresses_for_its_nodes_is_refused():
    # The tiny subnet first in us-west-2a: the dev pool's 2 x g6.12xlarge (2 x 30 addresses each)
    # would launch there.
    said = refused(privateSubnetIds=[lz.TINY_SUBNET, *PRIVATE])
    assert f"slinky-eks:privateSubnetIds = '{lz.TINY_SUBNET}'" in said and "[subnet-addresses]" in said
    assert "pool slinky 2 x 60" in said and "it has 5" in said


def test_a_gpu_pools_az_without_a_given_private_subnet_is_refused():
    said = refused(privateSubnetIds=PRIVATE[1:])
    assert "slinky-eks:availabilityZone = 'us-west-2a'" in said and "[pool-zone-subnet]" in said


def test_private_subnets_in_one_az_are_refused():
    said = refused(privateSubnetIds=PRIVATE[:1])
    assert "[subnets-two-zones]" in said and "all are in us-west-2a" in said


def test_a_vpc_without_private_subnets_is_refused():
    said = refused(privateSubnetIds=[])
    assert "slinky-eks:privateSubnetIds = []" in said and "[vpc-needs-private-subnets]" in said


def test_subnets_without_a_vpc_are_refused():
    said = refused(vpcId="")
    assert "[subnets-need-vpc]" in said and "slinky-eks:privateSubnetIds" in said


def test_a_vpc_the_deployer_cannot_describe_is_refused_naming_the_action():
    graph = run_program(
        "dev",
        GIVEN,
        expect_error=True,
        account=lz.LANDING_ZONE.but(denied=frozenset({"ec2:DescribeVpcs"})),
    )
    assert graph.resources == [] and "ec2:DescribeVpcs" in str(graph.error)
    assert "[vpc-describable]" in str(graph.error)


def test_every_refusal_is_reported_at_once():
    said = refused(
        privateSubnetIds=[lz.TINY_SUBNET, lz.ISOLATED_SUBNET, "subnet-0123456789abcdef0"],
        publicSubnetIds=[lz.OTHER_VPC_SUBNET],
    )
    for rule in ("subnet-exists", "subnet-in-vpc", "subnet-route-out", "subnet-addresses"):
        assert f"[{rule}]" in said


def test_vpc_cidr_beside_vpc_id_is_a_warning_that_it_is_ignored():
    graph = given(vpcCidr="10.1.0.0/16")
    assert any(
        w.startswith("vpcCidr = '10.1.0.0/16' is ignored") and "[own-network-key-ignored]" in w
        for w in graph.warnings
    )
    assert graph.output("vpcId") == lz.LANDING_ZONE_VPC


# The preflight in a given VPC: the core type where the core nodes run, no subnet slots


def test_the_core_type_is_checked_in_the_azs_of_the_given_subnets():
    # m7i.2xlarge is offered in us-west-2a and us-west-2d only (the offline account), so not in
    # us-west-2b and us-west-2c, where the core nodes of these subnets could run.
    said = refused(coreInstanceType="m7i.2xlarge")
    assert "slinky-eks:coreInstanceType = 'm7i.2xlarge'" in said and "[core-type-offered]" in said
    assert "every AZ of privateSubnetIds (us-west-2a, us-west-2b, us-west-2c)" in said


def test_a_core_type_offered_in_every_given_subnets_az_is_accepted():
    # The cluster's own second AZ would be us-west-2b (usw2-az1), which does not offer m7i.2xlarge;
    # the given subnets are in us-west-2a and us-west-2d, which do.
    graph = given(
        coreInstanceType="m7i.2xlarge",
        privateSubnetIds=[lz.LANDING_ZONE_PRIVATE["us-west-2a"], lz.TRANSIT_SUBNET],
        publicSubnetIds=[],  # us-west-2d has no public subnet: an internal login
    )
    assert graph.named("nodes-core").inputs["instanceTypes"] == ["m7i.2xlarge"]


def test_existing_network_exposes_exactly_what_network_does():
    # __main__.py uses either in the same place: the same attributes, of the same types.
    from components.existing_network import ExistingNetwork
    from components.network import Network

    assert ExistingNetwork.__annotations__ == Network.__annotations__


@pytest.mark.parametrize("action", ["ec2:DescribeSubnets", "ec2:DescribeRouteTables"])
def test_subnets_or_routes_the_deployer_cannot_describe_are_refused_naming_the_action(action):
    graph = run_program(
        "dev", GIVEN, expect_error=True, account=lz.LANDING_ZONE.but(denied=frozenset({action}))
    )
    assert graph.resources == [] and f"it lacks {action}" in str(graph.error)
    assert "[vpc-describable]" in str(graph.error)


def test_a_subnet_whose_route_table_the_deployer_is_not_shown_is_a_skipped_check():
    # Without the main table the isolated subnet (no explicit association) shows no table at all.
    account = lz.LANDING_ZONE.but(route_tables=tuple(t for t in lz.LANDING_ZONE.route_tables if not t.main))
    graph = run_program("dev", {**GIVEN, "privateSubnetIds": [*PRIVATE, lz.ISOLATED_SUBNET]}, account=account)
    (said,) = [w for w in graph.warnings if lz.ISOLATED_SUBNET in w]
    assert "could not check" in said and "[preflight-skipped]" in said
