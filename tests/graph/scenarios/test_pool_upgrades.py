"""Upgrading the dev stack by adding, reordering or removing GPU pools: no dev resource is deleted,
no existing subnet moves, the core node group and the EKS cluster keep their subnets (a managed
node group's subnets cannot be changed in place, aws/containers-roadmap issue #1338), and exactly
the resources listed in CHANGED_BY_A_NEW_POOL update (docs/extending.md, "How to add a pool")."""

import ipaddress

import pytest

from devkit.offline_account import DEV, US_WEST_2, ZoneRecord
from devkit.offline_run import run_program
from model.checks import rules
from model.facts import node_zones
from model.facts.node_zones import NodeZone
from tests.support.dev_graph_snapshot import snapshot

DEV_POOL = {"name": "slinky", "instanceType": "g6.12xlarge", "nodeCount": 2}
INFER = {"name": "infer", "instanceType": "g6e.12xlarge", "nodeCount": 1}
TRAIN = {"name": "train", "instanceType": "g6e.12xlarge", "nodeCount": 2}
# 2a is availabilityZone, 2b the dev stack's second zone; 2c and 2d are new AZs.
ZONES = ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]

# The dev resources whose inputs change when a pool is added, and which inputs:
CHANGED_BY_A_NEW_POOL = {
    # The slinky pool's nodes get their pool label, in place (EKS API reference,
    # UpdateNodegroupConfig: https://docs.aws.amazon.com/eks/latest/APIReference/API_UpdateNodegroupConfig.html).
    "nodes-gpu": {"labels"},
    # The slinky NodeSet selects its pool's label; the new pool's NodeSet and partition, and
    # the default partition `all`, which takes Default=YES from `slinky`.
    "slurm-release": {"values"},
    # The readiness Role may read the new pool's NodeSet; the slinky pool's readiness Job is
    # named by its content.
    "slurm-ready-role": {"rules"},
    "slurm-ready-job": {"metadata"},
    # cluster.env becomes a selector over cluster-<pool>.env; the staged files' ConfigMap and
    # the Job that copies them are named by their content.
    "jobs-files": {"metadata", "data"},
    "jobs-copy": {"metadata", "spec"},
    # The node health check's ConfigMap gains the new pool's expectations file (model/builders/node_health.py),
    # which only the new NodeSet mounts.
    "slurm-node-health": {"data"},
}


def _with_pool(zone: str) -> list[dict]:
    return [DEV_POOL, {**INFER, "availabilityZone": zone}]


def _subnets(graph) -> dict[str, tuple[str, str]]:
    return {
        r.name: (r.inputs["cidrBlock"], r.inputs["availabilityZone"])
        for r in graph.of_type("aws:ec2/subnet:Subnet")
    }


def _changed(before, after) -> dict[str, set[str]]:
    old, new = snapshot(before), snapshot(after)
    names = {r.urn: r.name for r in before.resources}
    return {
        names[urn]: {k for k in {*inputs, *new[urn]} if inputs.get(k) != new[urn].get(k)}
        for urn, inputs in old.items()
        if urn in new and new[urn] != inputs
    }


# The new pool in each zone, and listed before the dev stack's pool in a zone of the cluster's
# and in a new one.
UPGRADES = [*((zone, "after") for zone in ZONES), ("us-west-2a", "before"), ("us-west-2d", "before")]


@pytest.fixture(scope="module", params=UPGRADES, ids=lambda p: f"{p[1]}-{p[0]}")
def upgraded(request):
    zone, where = request.param
    pools = _with_pool(zone)
    return run_program("dev", {"gpuPools": pools if where == "after" else pools[::-1]})


def test_adding_a_pool_deletes_no_dev_resource(dev, upgraded):
    assert {r.urn for r in dev.resources} - {r.urn for r in upgraded.resources} == set()


def test_adding_a_pool_moves_no_existing_subnet(dev, upgraded):
    after = _subnets(upgraded)
    assert {name: after.get(name) for name in _subnets(dev)} == _subnets(dev)


def test_adding_a_pool_leaves_the_core_node_group_and_the_eks_cluster_as_they_are(dev, upgraded):
    for name in ("nodes-core", "cluster-eks"):
        assert upgraded.named(name).inputs == dev.named(name).inputs


def test_adding_a_pool_changes_exactly_the_listed_dev_resources(dev, upgraded):
    assert _changed(dev, upgraded) == CHANGED_BY_A_NEW_POOL


def test_the_comparison_of_inputs_sees_a_change_where_there_is_one(dev):
    # The comparison the previous test relies on sees a change where there is one.
    graph = run_program("dev", {"coreNodeCount": 3})
    assert _changed(dev, graph) == {"nodes-core": {"scalingConfig"}}


@pytest.mark.parametrize("zone", ["us-west-2c", "us-west-2d"])
def test_a_pool_in_a_new_zone_adds_only_its_private_subnet_and_mount_target(dev, zone):
    graph = run_program("dev", {"gpuPools": _with_pool(zone)})
    added = {r.name for r in graph.resources} - {r.name for r in dev.resources}
    # A g6e pool is the first EC2 places on its network: it brings the topology writer
    # (docs/topology.md), which the dev stack's g6 pool did not need.
    writer = {name for name in added if name.startswith("network-topology")}
    assert "network-topology-deployment" in writer
    assert added - writer == {
        f"network-private-{zone}",
        f"network-private-{zone}-rt",
        f"storage-efs-mt-{zone}",
        "nodes-gpu-infer",
        "nodes-gpu-infer-lt",
        "nodes-gpu-infer-pg",
        "slurm-ready-job-infer",
    }


def test_a_pool_zones_subnet_routes_through_the_nat_and_holds_a_mount_target(dev):
    # Its GPU nodes pull images and reach EKS through the NAT gateway, and mount /shared from EFS
    # through a mount target in their own AZ (one per AZ: https://docs.aws.amazon.com/efs/latest/ug/accessing-fs.html).
    # Under the mocks a resource's id is "<name>-id" (devkit/offline_run.py).
    graph = run_program("dev", {"gpuPools": _with_pool("us-west-2d")})
    association = graph.named("network-private-us-west-2d-rt").inputs
    assert (association["subnetId"], association["routeTableId"]) == (
        "network-private-us-west-2d-id",
        "network-private-id",
    )
    assert graph.named("network-private").inputs["routes"][0]["natGatewayId"] == "network-nat-id"
    assert graph.named("storage-efs-mt-us-west-2d").inputs["subnetId"] == "network-private-us-west-2d-id"


def test_a_pool_zones_subnet_is_the_slot_of_its_zone_id():
    # us-west-2c is usw2-az3 and us-west-2d usw2-az4 in the offline account: slots 3 and 4, the
    # two halves of the VPC's fourth eighth (10.0.96.0/19).
    graph = run_program(
        "dev",
        {
            "gpuPools": [
                DEV_POOL,
                {**INFER, "availabilityZone": "us-west-2d"},
                {**TRAIN, "availabilityZone": "us-west-2c"},
            ]
        },
    )
    subnets = _subnets(graph)
    assert subnets["network-private-us-west-2c"] == ("10.0.96.0/20", "us-west-2c")
    assert subnets["network-private-us-west-2d"] == ("10.0.112.0/20", "us-west-2d")


def test_reordering_pools_in_different_zones_changes_no_subnet_or_node_group():
    pools = [
        DEV_POOL,
        {**INFER, "availabilityZone": "us-west-2d"},
        {**TRAIN, "availabilityZone": "us-west-2c"},
    ]
    graph, reordered = (run_program("dev", {"gpuPools": p}) for p in (pools, pools[::-1]))
    assert _subnets(reordered) == _subnets(graph)
    groups = {r.urn: r.inputs for r in graph.of_type("aws:eks/nodeGroup:NodeGroup")}
    assert {r.urn: r.inputs for r in reordered.of_type("aws:eks/nodeGroup:NodeGroup")} == groups


def test_reordering_pools_changes_only_the_order_of_lists_in_slurms_values_and_the_readiness_role():
    pools = [
        DEV_POOL,
        {**INFER, "availabilityZone": "us-west-2d"},
        {**TRAIN, "availabilityZone": "us-west-2c"},
    ]
    graph, reordered = (run_program("dev", {"gpuPools": p}) for p in (pools, pools[::-1]))
    assert _changed(graph, reordered) == {"slurm-release": {"values"}, "slurm-ready-role": {"rules"}}
    assert sorted(
        reordered.named("slurm-release").inputs["values"]["partitions"]["all"]["nodesets"]
    ) == sorted(graph.named("slurm-release").inputs["values"]["partitions"]["all"]["nodesets"])


def test_removing_a_pool_in_another_zone_moves_no_other_subnet():
    both = [
        DEV_POOL,
        {**INFER, "availabilityZone": "us-west-2c"},
        {**TRAIN, "availabilityZone": "us-west-2d"},
    ]
    before = _subnets(run_program("dev", {"gpuPools": both}))
    after = _subnets(run_program("dev", {"gpuPools": [both[0], both[2]]}))
    assert set(before) - set(after) == {"network-private-us-west-2c"}
    assert after == {name: before[name] for name in after}


def test_a_pool_zone_has_no_public_subnet():
    graph = run_program("dev", {"gpuPools": _with_pool("us-west-2d")})
    public = sorted(zone for name, (_, zone) in _subnets(graph).items() if "-public-" in name)
    assert public == ["us-west-2a", "us-west-2b"]


def test_the_core_type_need_not_be_offered_in_a_zone_only_a_pool_uses():
    # m7i.2xlarge in both of the cluster's zones (us-west-2a, 2b), not in us-west-2c (usw2-az3).
    account = DEV.but(offerings={**DEV.offerings, "usw2-az1": DEV.offerings["usw2-az1"] | {"m7i.2xlarge"}})
    graph = run_program(
        "dev", {"coreInstanceType": "m7i.2xlarge", "gpuPools": _with_pool("us-west-2c")}, account=account
    )
    assert graph.named("nodes-core").inputs["instanceTypes"] == ["m7i.2xlarge"]


def test_the_core_type_must_be_offered_in_both_cluster_zones():
    graph = run_program(
        "dev", {"coreInstanceType": "m7i.2xlarge", "gpuPools": _with_pool("us-west-2d")}, expect_error=True
    )
    msg = str(graph.error)
    assert "coreInstanceType = 'm7i.2xlarge'" in msg and "us-west-2b (usw2-az1)" in msg
    assert "us-west-2d" not in msg.split("is not offered in")[1].split(";")[0]


def test_a_pool_zone_whose_zone_id_has_no_slot_is_refused_naming_its_key():
    # No region has an AZ id past az6 today; a later one must be refused, not overlap another
    # subnet: this account's us-west-2d stands in for such a zone.
    zones = [z if z.name != "us-west-2d" else ZoneRecord("us-west-2d", "usw2-az9") for z in US_WEST_2]
    graph = run_program(
        "dev",
        {"gpuPools": _with_pool("us-west-2d")},
        expect_error=True,
        account=DEV.but(zones={**DEV.zones, "us-west-2": zones}),
    )
    msg = str(graph.error)
    assert "gpuPools[1].availabilityZone = 'us-west-2d'" in msg and "usw2-az9" in msg
    assert "-az1 .. -az8" in msg and graph.resources == []


# The carving itself (model/facts/node_zones.py)

# Every VPC block vpcCidr's rule accepts: widening the rule past what the carving fits fails here.
ACCEPTED_VPCS = [
    f"10.0.0.0/{p}" for p in range(8, 29) if not rules.private_vpc_cidr("vpcCidr", f"10.0.0.0/{p}")
]


def test_the_accepted_vpc_blocks_are_slash_16_to_20():
    assert ACCEPTED_VPCS == [f"10.0.0.0/{p}" for p in range(16, 21)]


@pytest.mark.parametrize("cidr", ACCEPTED_VPCS)
def test_every_slot_fits_in_the_vpc_and_no_two_overlap(cidr):
    vpc = ipaddress.ip_network(cidr)
    cluster = [NodeZone("a", "x-az1", 0), NodeZone("b", "x-az2", 1)]
    pools = [NodeZone(f"p{n}", f"x-az{n}") for n in range(1, node_zones.POOL_ZONE_SLOTS + 1)]
    nets = [ipaddress.ip_network(node_zones.private_cidr(str(vpc), z)) for z in cluster + pools] + [
        ipaddress.ip_network(node_zones.public_cidr(str(vpc), z)) for z in cluster
    ]
    # /28 is the smallest IPv4 subnet (https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html).
    assert all(n.subnet_of(vpc) and n.prefixlen <= 28 for n in nets)
    assert all(not a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1 :])


def test_the_cluster_zones_keep_the_blocks_they_had_before_pools():
    # Before pools: the VPC in eighths, private subnets from the first, public from the fifth.
    eighths = [str(b) for b in ipaddress.ip_network("10.0.0.0/16").subnets(prefixlen_diff=3)]
    first, second = NodeZone("a", "x-az2", 0), NodeZone("b", "x-az1", 1)
    assert [node_zones.private_cidr("10.0.0.0/16", z) for z in (first, second)] == eighths[:2]
    assert [node_zones.public_cidr("10.0.0.0/16", z) for z in (first, second)] == eighths[4:6]


# usw2-lax1-az1, a Local Zone's id, would take slot 0: the zone-type filter of Account.zones keeps
# Local Zones out before any slot is given.
@pytest.mark.parametrize("zone_id", ["usw2-az0", "usw2-az9", "usw2-lax1"])
def test_a_zone_id_without_a_number_in_range_has_no_slot(zone_id):
    zone = NodeZone("z", zone_id)
    assert zone.pool_slot is None
    with pytest.raises(ValueError, match="no pool zone slot"):
        node_zones.private_cidr("10.0.0.0/16", zone)


def test_the_zone_order_does_not_follow_the_pools_order():
    cluster = (NodeZone("us-west-2a", "usw2-az2"), NodeZone("us-west-2b", "usw2-az1"))
    c, d = NodeZone("us-west-2c", "usw2-az3"), NodeZone("us-west-2d", "usw2-az4")
    assert node_zones.order(cluster, [d, c, cluster[1]]) == node_zones.order(cluster, [c, d])
    assert [z.name for z in node_zones.order(cluster, [d, c])] == ZONES
    assert [z.cluster_position for z in node_zones.order(cluster, [d])] == [0, 1, None]
