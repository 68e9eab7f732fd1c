"""Capacity reservations and cost: a pool's capacityReservationId is checked at preview against
what EC2 says about it (exists, instance type, AZ, platform, tenancy, state; every problem at
once), an ODCR becomes the launch template's capacity reservation target, a Capacity Block also
the node group's CAPACITY_BLOCK capacity type; the on-demand prices come from the AWS Price List
(through a provider in one of its endpoint regions), from the cited table with a warning when it
cannot answer, and land in the costPerHour output and the plan."""

import pytest

from devkit.offline_account import DEV, ReservationRecord, answer, product_document
from devkit.offline_run import run_program
from devkit.plan import to_json
from model.facts import cost
from model.facts.capacity import reservation_id
from stack.account import on_demand_usd
from tests.support.capacity_blocks import BLOCK, BLOCK_FOR_P5

ODCR = "cr-0a1b2c3d4e5f60718"
PRODUCT = "aws:pricing/getProduct:getProduct"
RESERVATION = "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation"

# The dev pool: 2 x g6.12xlarge in us-west-2a, reserved in a cluster placement group as an HPC
# user would make it (EC2 User Guide, "Use Capacity Reservations with cluster placement groups").
RESERVED_GROUP = "team-g6-cpg"
ODCR_FOR_DEV = ReservationRecord(
    "us-west-2", "g6.12xlarge", "us-west-2a", total_instance_count=2, placement_group=RESERVED_GROUP
)


def _with(**records) -> object:
    return DEV.but(reservations={**DEV.reservations, **records})


def refused(account, **overrides) -> str:
    graph = run_program("dev", overrides, expect_error=True, account=account)
    assert graph.resources == [], [r.name for r in graph.resources]
    return str(graph.error)


def odcr_stack():
    return run_program("dev", {"gpuCapacityReservationId": ODCR}, account=_with(**{ODCR: ODCR_FOR_DEV}))


def block_stack():
    return run_program(
        "dev",
        {"gpuInstanceType": "p5.48xlarge", "gpuCapacityReservationId": BLOCK},
        account=_with(**{BLOCK: BLOCK_FOR_P5}),
    )


# The id's own rule


@pytest.mark.parametrize("value", ["", ODCR, BLOCK])
def test_an_empty_or_cr_shaped_id_passes_its_rule(value):
    assert reservation_id("gpuCapacityReservationId", value) == []


@pytest.mark.parametrize(
    "value", ["cr-123", "CR-0a1b2c3d4e5f60718", "cr-0a1b2c3d4e5f6071g", "lt-0a1b2c3d4e5f60718", 7]
)
def test_a_reservation_id_not_shaped_as_ec2_writes_it_is_refused_by_its_rule(value):
    (problem,) = reservation_id("gpuPools[0].capacityReservationId", value)
    assert problem.is_error and "cr- and 17 hexadecimal digits" in problem.message


# Refusals, each with its failing case


def test_a_reservation_ec2_does_not_know_is_refused_naming_the_key():
    msg = refused(DEV, gpuCapacityReservationId=ODCR)
    assert f"slinky-eks:gpuCapacityReservationId = '{ODCR}'" in msg and f"EC2 knows no {ODCR}" in msg


def test_a_reservation_of_another_region_is_unknown_in_this_one():
    msg = refused(
        _with(**{ODCR: ReservationRecord("us-east-1", "g6.12xlarge", "us-east-1a", 2)}),
        gpuCapacityReservationId=ODCR,
    )
    assert f"EC2 knows no {ODCR} there" in msg


def test_a_reservation_for_another_instance_type_is_refused():
    record = ReservationRecord("us-west-2", "g6.48xlarge", "us-west-2a", 2)
    msg = refused(_with(**{ODCR: record}), gpuCapacityReservationId=ODCR)
    assert "reserves g6.48xlarge, but gpuInstanceType is g6.12xlarge" in msg
    assert "gpuInstanceType = g6.48xlarge" in msg  # the way out


def test_a_reservation_in_another_az_is_refused():
    record = ReservationRecord("us-west-2", "g6.12xlarge", "us-west-2b", 2)
    msg = refused(_with(**{ODCR: record}), gpuCapacityReservationId=ODCR)
    assert "is in us-west-2b, but availabilityZone is us-west-2a" in msg


@pytest.mark.parametrize("state", ["expired", "cancelled", "failed", "payment-failed"])
def test_a_reservation_whose_capacity_is_gone_is_refused(state):
    record = ReservationRecord("us-west-2", "g6.12xlarge", "us-west-2a", 2, state=state)
    msg = refused(_with(**{ODCR: record}), gpuCapacityReservationId=ODCR)
    assert f"is {state}: its capacity is gone" in msg


def test_a_capacity_block_before_its_start_is_refused_with_the_start_date():
    msg = refused(
        _with(**{BLOCK: SCHEDULED_BLOCK}), gpuInstanceType="p5.48xlarge", gpuCapacityReservationId=BLOCK
    )
    assert f"{BLOCK} (Capacity Block) is scheduled (it starts 2026-12-08T11:30:00Z)" in msg


def test_a_windows_or_dedicated_reservation_is_refused():
    record = ReservationRecord(
        "us-west-2", "g6.12xlarge", "us-west-2a", 2, tenancy="dedicated", instance_platform="Windows"
    )
    msg = refused(_with(**{ODCR: record}), gpuCapacityReservationId=ODCR)
    assert "is for Windows" in msg and "has dedicated tenancy" in msg


def test_a_denied_describe_is_refused_naming_the_iam_action():
    account = _with(**{ODCR: ODCR_FOR_DEV}).but(denied=frozenset({"ec2:DescribeCapacityReservations"}))
    msg = refused(account, gpuCapacityReservationId=ODCR)
    assert "gpuCapacityReservationId" in msg and "lacks ec2:DescribeCapacityReservations" in msg


def test_every_reservation_problem_of_every_pool_comes_back_at_once():
    pools = [
        {"name": "a", "instanceType": "g6.12xlarge", "nodeCount": 1, "capacityReservationId": ODCR},
        {"name": "b", "instanceType": "g6.12xlarge", "nodeCount": 1, "capacityReservationId": BLOCK},
    ]
    account = _with(
        **{
            ODCR: ReservationRecord("us-west-2", "g5.12xlarge", "us-west-2b", 2),
            BLOCK: ReservationRecord("us-west-2", "g6.12xlarge", "us-west-2a", 2, state="expired"),
        }
    )
    msg = refused(account, gpuPools=pools)
    assert msg.startswith("invalid stack configuration (3 problems)")
    assert "gpuPools[0].capacityReservationId" in msg and "gpuPools[1].capacityReservationId" in msg
    assert "reserves g5.12xlarge" in msg and "is in us-west-2b" in msg and "is expired" in msg


def test_a_reservation_smaller_than_its_pool_is_a_warning_not_an_error():
    small = ReservationRecord(
        "us-west-2", "g6.12xlarge", "us-west-2a", total_instance_count=1, placement_group=RESERVED_GROUP
    )
    graph = run_program("dev", {"gpuCapacityReservationId": ODCR}, account=_with(**{ODCR: small}))
    assert graph.error is None
    (said,) = [w for w in graph.warnings if w.startswith("capacity:")]
    assert f"{ODCR} (On-Demand Capacity Reservation) holds 1 x g6.12xlarge, fewer than the 2 nodes" in said


def test_a_reservation_as_large_as_its_pool_says_nothing():
    assert not [w for w in odcr_stack().warnings if w.startswith("capacity:")]


# What the graph builds


def test_a_pool_without_a_reservation_keeps_its_launch_template_and_on_demand_group(dev):
    lt = dev.named("nodes-gpu-lt").inputs
    assert "capacityReservationSpecification" not in lt and "instanceMarketOptions" not in lt
    assert dev.named("nodes-gpu").inputs["capacityType"] == "ON_DEMAND"
    assert not [t for t, _ in dev.calls if t == RESERVATION]  # nobody asked


def test_an_odcr_is_the_launch_templates_capacity_reservation_target():
    graph = odcr_stack()
    lt = graph.named("nodes-gpu-lt").inputs
    assert lt["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": ODCR}
    }
    assert "instanceMarketOptions" not in lt and "instanceType" not in lt
    group = graph.named("nodes-gpu").inputs
    assert group["capacityType"] == "ON_DEMAND" and group["instanceTypes"] == ["g6.12xlarge"]


def test_a_capacity_block_is_a_capacity_block_node_group_with_its_market_type_and_type_in_the_template():
    graph = block_stack()
    lt = graph.named("nodes-gpu-lt").inputs
    assert lt["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": BLOCK}
    }
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert lt["instanceType"] == "p5.48xlarge"
    group = graph.named("nodes-gpu").inputs
    assert group["capacityType"] == "CAPACITY_BLOCK"
    assert "instanceTypes" not in group  # the template names the type; EKS takes it from one place


def test_a_pool_without_a_reservation_launches_in_its_own_cluster_placement_group(dev):
    assert dev.named("nodes-gpu-pg").inputs["strategy"] == "cluster"
    assert dev.named("nodes-gpu-lt").inputs["placement"] == {
        "groupName": "nodes-gpu-pg"
    }  # the mock names it by URN name


def test_a_reserved_pool_launches_in_the_placement_group_its_reservation_was_created_in():
    graph = odcr_stack()
    assert graph.named("nodes-gpu-lt").inputs["placement"] == {"groupName": RESERVED_GROUP}
    assert not [r for r in graph.resources if r.type == "aws:ec2/placementGroup:PlacementGroup"]


def test_a_pool_whose_reservation_is_in_no_placement_group_launches_in_none_with_a_warning():
    outside = ReservationRecord("us-west-2", "g6.12xlarge", "us-west-2a", total_instance_count=2)
    graph = run_program("dev", {"gpuCapacityReservationId": ODCR}, account=_with(**{ODCR: outside}))
    assert "placement" not in graph.named("nodes-gpu-lt").inputs
    assert not [r for r in graph.resources if r.type == "aws:ec2/placementGroup:PlacementGroup"]
    (said,) = [w for w in graph.warnings if w.startswith("capacity:")]
    assert f"{ODCR} (On-Demand Capacity Reservation) was created in no cluster placement group" in said
    assert "pool slinky launches in none" in said


def test_a_reservation_shared_from_another_accounts_placement_group_is_refused():
    shared = ReservationRecord(
        "us-west-2",
        "g6.12xlarge",
        "us-west-2a",
        total_instance_count=2,
        placement_group=RESERVED_GROUP,
        owner_id="210987654321",
    )
    msg = refused(_with(**{ODCR: shared}), gpuCapacityReservationId=ODCR)
    assert f"slinky-eks:gpuCapacityReservationId = '{ODCR}'" in msg
    assert "shared from account 210987654321" in msg and f"placement-group/{RESERVED_GROUP}" in msg


def test_a_reservation_shared_from_another_account_outside_a_placement_group_is_accepted():
    shared = ReservationRecord(
        "us-west-2", "g6.12xlarge", "us-west-2a", total_instance_count=2, owner_id="210987654321"
    )
    graph = run_program("dev", {"gpuCapacityReservationId": ODCR}, account=_with(**{ODCR: shared}))
    assert graph.error is None and "placement" not in graph.named("nodes-gpu-lt").inputs


def test_a_capacity_block_launches_in_no_placement_group_without_a_warning():
    graph = block_stack()
    assert "placement" not in graph.named("nodes-gpu-lt").inputs
    assert not [w for w in graph.warnings if w.startswith("capacity:")]


def test_only_the_pool_that_names_a_reservation_targets_it():
    pools = [
        {"name": "a", "instanceType": "g6.12xlarge", "nodeCount": 2, "capacityReservationId": ODCR},
        {"name": "b", "instanceType": "g6.12xlarge", "nodeCount": 1},
    ]
    graph = run_program("dev", {"gpuPools": pools}, account=_with(**{ODCR: ODCR_FOR_DEV}))
    assert "capacityReservationSpecification" in graph.named("nodes-gpu-a-lt").inputs
    assert "capacityReservationSpecification" not in graph.named("nodes-gpu-b-lt").inputs


# Prices


def test_prices_are_asked_from_the_price_list_through_a_provider_in_an_endpoint_region(dev):
    provider = dev.named("price-list")
    assert provider.type == "pulumi:providers:aws" and provider.inputs["region"] in cost.PRICE_LIST_REGIONS
    asked = [a for t, a in dev.calls if t == PRODUCT]
    assert sorted(next(f["value"] for f in a["filters"] if f["field"] == "instanceType") for a in asked) == [
        "g6.12xlarge",
        "m6i.2xlarge",
    ]
    assert all({"field": "regionCode", "value": "us-west-2"} in a["filters"] for a in asked)


def test_prices_are_asked_for_the_on_demand_market_only(dev):
    # Without it, a type with a row in another market matches twice and the lookup fails.
    asked = [a for t, a in dev.calls if t == PRODUCT]
    assert asked and all({"field": "marketoption", "value": "OnDemand"} in a["filters"] for a in asked)


def test_the_price_list_has_no_endpoint_in_the_stacks_region():
    # Why the program needs its own provider: through the default one (us-west-2) it fails.
    _, failures = answer(
        DEV,
        PRODUCT,
        {"serviceCode": "AmazonEC2", "filters": cost.product_filters("us-west-2", "g6.12xlarge")},
        provider_region="us-west-2",
    )
    assert "no such host" in failures[0][1]


def test_the_on_demand_rate_is_read_from_the_product_not_the_reserved_one():
    assert on_demand_usd(product_document("us-west-2", "g6.12xlarge", 4.7016)) == 4.7016


def test_the_dev_stacks_cost_uses_the_price_lists_answer(dev):
    out = dev.output("costPerHour")
    (pool,) = out["gpuPools"]
    # The fixture prices g6.12xlarge in us-west-2 apart from the table's us-east-1 4.6016.
    assert pool["priceSource"] == cost.PRICE_LIST and pool["pricePerNodeHour"] == pytest.approx(4.7016)
    assert pool["atMinNodes"] == pytest.approx(2 * 4.7016) and pool["atMaxNodes"] == pytest.approx(2 * 4.7016)
    assert out["core"] == {
        "instanceType": "m6i.2xlarge",
        "nodes": 2,
        "pricePerNodeHour": 0.384,
        "priceSource": cost.PRICE_LIST,
        "perHour": 0.768,
    }
    assert out["clusterAtMinNodes"] == pytest.approx(2 * 4.7016 + 0.768)
    assert out["unpriced"] == [] and not [w for w in dev.warnings if w.startswith("cost:")]


@pytest.mark.parametrize(
    "account, why",
    [
        (DEV.but(denied=frozenset({"pricing:GetProducts"})), "the deployer lacks pricing:GetProducts"),
        (
            DEV.but(
                price_list_failure="https response error StatusCode: 400, api error ThrottlingException: Rate exceeded"
            ),
            "ThrottlingException",
        ),
    ],
)
def test_without_the_price_list_the_table_answers_with_a_warning_and_the_preview_goes_on(account, why):
    graph = run_program("dev", account=account)
    assert graph.error is None
    said = [w for w in graph.warnings if w.startswith("cost:")]
    assert len(said) == 2 and all(why in w for w in said)
    assert any("us-east-1 list price" in w and "$4.6016/h (not us-west-2's" in w for w in said)
    (pool,) = graph.output("costPerHour")["gpuPools"]
    assert pool["priceSource"] == cost.TABLE and pool["pricePerNodeHour"] == 4.6016


def test_a_type_neither_the_price_list_nor_the_table_prices_is_left_out_of_the_totals_and_named():
    graph = run_program("dev", {"gpuInstanceType": "p5e.48xlarge", "gpuNodeCount": 1})
    out = graph.output("costPerHour")
    assert out["unpriced"] == ["p5e.48xlarge"] and out["gpuPools"][0]["atMinNodes"] is None
    assert out["clusterAtMinNodes"] == pytest.approx(0.768)  # the core nodes alone
    (said,) = [w for w in graph.warnings if w.startswith("cost:")]
    assert "no price" in said and "p5e.48xlarge" in said


def test_an_odcr_pool_costs_at_least_its_whole_reservation():
    large = ReservationRecord("us-west-2", "g6.12xlarge", "us-west-2a", total_instance_count=4)
    graph = run_program("dev", {"gpuCapacityReservationId": ODCR}, account=_with(**{ODCR: large}))
    (pool,) = graph.output("costPerHour")["gpuPools"]
    assert pool["atMinNodes"] == pytest.approx(4 * 4.7016) and "reservation of 4" in pool["billing"]


def test_a_capacity_block_pool_adds_nothing_per_hour():
    (pool,) = block_stack().output("costPerHour")["gpuPools"]
    assert pool["atMinNodes"] == 0 and pool["atMaxNodes"] == 0 and "paid upfront" in pool["billing"]


def test_the_plan_shows_the_cost_outputs(dev):
    shown = to_json(dev)["outputs"]["costPerHour"]
    assert shown["clusterAtMaxNodes"] == dev.output("costPerHour")["clusterAtMaxNodes"]
    assert [p["name"] for p in shown["gpuPools"]] == ["slinky"]


def test_two_uncached_runs_of_the_same_config_give_the_same_plan_outputs():
    # offline_run caches a run by config and account; two real runs, so that a price read from a
    # set, a clock or a dict's order would show.
    from devkit.offline_run import _run_program, stack_config

    cfg = stack_config("dev", {"gpuCapacityReservationId": ODCR})
    account = _with(**{ODCR: ODCR_FOR_DEV})
    first, second = (_run_program("dev", cfg, False, False, account) for _ in range(2))
    assert to_json(first)["outputs"] == to_json(second)["outputs"]


# With the pools' bounds (minNodes/maxNodes)

SCHEDULED_BLOCK = ReservationRecord(
    "us-west-2",
    "p5.48xlarge",
    "us-west-2a",
    2,
    state="scheduled",
    reservation_type="capacity-block",
    start_date="2026-12-08T11:30:00Z",
)


def test_a_scheduled_capacity_block_is_a_warning_for_a_pool_that_starts_at_zero():
    graph = run_program(
        "dev",
        {
            "gpuInstanceType": "p5.48xlarge",
            "gpuCapacityReservationId": BLOCK,
            "gpuMinNodes": 0,
            "gpuMaxNodes": 2,
        },
        account=_with(**{BLOCK: SCHEDULED_BLOCK}),
    )
    assert graph.error is None
    (said,) = [w for w in graph.warnings if w.startswith("capacity:")]
    assert "is scheduled (it starts 2026-12-08T11:30:00Z)" in said and "starts at 0 nodes" in said


def test_a_scheduled_capacity_block_is_refused_for_a_pool_that_starts_with_nodes():
    msg = refused(
        _with(**{BLOCK: SCHEDULED_BLOCK}),
        gpuInstanceType="p5.48xlarge",
        gpuCapacityReservationId=BLOCK,
        gpuMinNodes=1,
        gpuMaxNodes=2,
    )
    assert "the pool's 1 nodes are launched at `up`" in msg and "gpuMinNodes = 0" in msg


def test_the_cost_at_min_and_max_follows_the_pools_bounds():
    out = run_program("dev", {"gpuMinNodes": 0, "gpuMaxNodes": 4}).output("costPerHour")
    (pool,) = out["gpuPools"]
    assert (pool["minNodes"], pool["maxNodes"]) == (0, 4)
    assert pool["atMinNodes"] == 0 and pool["atMaxNodes"] == pytest.approx(4 * 4.7016)
    assert out["clusterAtMinNodes"] == pytest.approx(0.768)
    assert out["clusterAtMaxNodes"] == pytest.approx(4 * 4.7016 + 0.768)


def test_a_reservation_is_measured_against_the_pools_maximum():
    graph = run_program(
        "dev",
        {"gpuCapacityReservationId": ODCR, "gpuMinNodes": 1, "gpuMaxNodes": 3},
        account=_with(**{ODCR: ODCR_FOR_DEV}),
    )
    (said,) = [w for w in graph.warnings if w.startswith("capacity:")]
    assert "fewer than the 3 nodes its pools may run (slinky: 3)" in said


def test_the_cost_of_an_image_build_appears_with_the_other_costs():
    in_region = run_program("dev").output("costPerHour")["imageBuild"]
    assert in_region["builder"] == "codebuild" and in_region["usdPerBuild"] == 0.6
    local = run_program("dev", {"imageBuilder": "local"}).output("costPerHour")["imageBuild"]
    assert local["builder"] == "local" and local["usdPerBuild"] == 0.0
