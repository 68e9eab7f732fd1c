"""What the cluster's nodes cost an hour at the on-demand list price (model/facts/cost.py). The dev
stack's costPerHour output is specified in tests/graph/test_capacity_and_cost.py."""

from model.checks.gpu_pools import GpuPool
from model.facts import catalog
from model.facts.capacity import CAPACITY_BLOCK, ON_DEMAND_RESERVATION, Reservation
from model.facts.cost import (
    PRICE_LIST,
    TABLE,
    Price,
    cost_per_hour,
    fallback_warning,
    image_build_cost_usd,
    price_from_table,
)

RESERVATION = "cr-0123456789abcdef0"
PRICES = {
    "p5.48xlarge": Price("p5.48xlarge", 10.0, PRICE_LIST, "us-west-2"),
    "m7i.2xlarge": Price("m7i.2xlarge", 0.5, PRICE_LIST, "us-west-2"),
}


def _pool(min_nodes, max_nodes, reservation=""):
    gpu = catalog.lookup("p5.48xlarge")
    return GpuPool("train", gpu, min_nodes, "us-west-2a", 400, 0, min_nodes, max_nodes, reservation)


def _reservation(kind, total):
    return {RESERVATION: Reservation(RESERVATION, "p5.48xlarge", "us-west-2a", "active", kind, total, total)}


def _cost(pool, reservations=None, prices=PRICES):
    return cost_per_hour([pool], "m7i.2xlarge", 2, prices, reservations or {})


def test_an_on_demand_pool_costs_its_price_per_node_at_its_smallest_and_largest_size():
    (entry,) = _cost(_pool(1, 4))["gpuPools"]
    assert (entry["atMinNodes"], entry["atMaxNodes"], entry["billing"]) == (10.0, 40.0, "on-demand")


def test_the_cluster_total_adds_the_core_group_to_the_pools():
    cost = _cost(_pool(1, 4))
    assert cost["core"]["perHour"] == 1.0
    assert (cost["clusterAtMinNodes"], cost["clusterAtMaxNodes"]) == (11.0, 41.0)


def test_a_capacity_block_pool_adds_nothing_per_hour_being_paid_upfront():
    (entry,) = _cost(_pool(1, 4, RESERVATION), _reservation(CAPACITY_BLOCK, 4))["gpuPools"]
    assert (entry["atMinNodes"], entry["atMaxNodes"]) == (0.0, 0.0)


def test_an_odcr_pool_costs_at_least_the_reservations_size_used_or_not():
    (entry,) = _cost(_pool(1, 4, RESERVATION), _reservation(ON_DEMAND_RESERVATION, 2))["gpuPools"]
    assert (entry["atMinNodes"], entry["atMaxNodes"]) == (20.0, 40.0)


def test_a_type_with_no_price_is_left_out_of_the_totals_and_named_as_unpriced():
    prices = {**PRICES, "p5.48xlarge": Price("p5.48xlarge", None, TABLE, "us-east-1")}
    cost = _cost(_pool(1, 4), prices=prices)
    assert cost["unpriced"] == ["p5.48xlarge"]
    assert (cost["clusterAtMinNodes"], cost["clusterAtMaxNodes"]) == (1.0, 1.0)


def test_the_table_answers_with_us_east_1s_price_or_none():
    assert price_from_table("m7i.2xlarge") == Price("m7i.2xlarge", 0.4032, TABLE, "us-east-1")
    assert price_from_table("x9.huge").usd_per_hour is None


def test_a_fallback_warning_says_why_and_that_the_price_is_another_regions():
    price = price_from_table("m7i.2xlarge")
    problem = fallback_warning(
        "coreInstanceType", "m7i.2xlarge", "eu-west-1", "m7i.2xlarge", "AccessDenied", price
    )
    assert problem.level == "warning"
    assert "(AccessDenied)" in problem.message and "$0.4032/h (not eu-west-1's" in problem.message


def test_an_image_build_costs_its_estimated_minutes_at_codebuilds_price_per_minute():
    # 30 minutes of Linux general1.large at USD 0.02 a minute.
    assert image_build_cost_usd("BUILD_GENERAL1_LARGE") == 0.6


def test_a_started_minute_of_an_image_build_is_billed_whole():
    assert image_build_cost_usd("BUILD_GENERAL1_LARGE", 20.1) == 0.42


def test_a_compute_type_without_a_price_has_no_estimate():
    assert image_build_cost_usd("BUILD_GENERAL1_2XLARGE") is None


def test_an_in_region_build_costs_codebuilds_minutes_of_the_projects_compute_type():
    from model.facts import cost, image_builder

    build = cost.image_build(image_builder.CODEBUILD)
    assert build["computeType"] == image_builder.COMPUTE_TYPE
    assert build["usdPerBuild"] == cost.image_build_cost_usd(image_builder.COMPUTE_TYPE) == 0.6
    assert build["estimatedMinutes"] == cost.IMAGE_BUILD_MINUTES


def test_a_local_build_costs_aws_nothing():
    from model.facts import cost, image_builder

    assert cost.image_build(image_builder.LOCAL)["usdPerBuild"] == 0.0
