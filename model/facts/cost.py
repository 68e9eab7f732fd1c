"""What the cluster's nodes cost an hour at the on-demand list price: each GPU pool's and the core
group's price per node, and the whole at the pools' smallest and largest size. Pure: prices are
asked through the Account protocol (model/checks/preflight.py; stack/account.py asks the AWS Price List),
and where the Price List cannot answer, the table below answers with a warning saying so.

What it leaves out, on purpose: EBS volumes, the NAT gateway, EFS, the load balancer, data
transfer, the EKS control plane, the accounting database, and any discount (Savings Plans,
Reserved Instances, Spot). A Capacity Block is paid upfront when bought, so its pool adds nothing
per hour here; an On-Demand Capacity Reservation bills every reserved instance at the on-demand
rate whether an instance runs in it or not (Amazon EC2 User Guide, "Capacity Reservation pricing
and billing": https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-reservations-pricing-billing.html),
so its pool costs at least the reservation's size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from model.checks.gpu_pools import GpuPool
from model.checks.problems import WARNING, Problem, identify, warning
from model.facts import image_builder
from model.facts.capacity import Reservation

PRICE_LIST_FALLBACK = identify(
    "price-list-fallback",
    WARNING,
    "a price the AWS Price List gave, else the table's, said so",
    "gpuInstanceType",
    "gpuPools[].instanceType",
    "coreInstanceType",
)


# The Price List Query API answers at these endpoints only, whatever region the prices are for
# (AWS Billing User Guide, "Finding services and products using AWS Price List Query API":
# https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/using-price-list-query-api.html,
# US East (N. Virginia), Europe (Frankfurt) and Asia Pacific (Mumbai)); the program asks the first.
PRICE_LIST_REGIONS = ("us-east-1", "eu-central-1", "ap-south-1")
PRICE_LIST_REGION = PRICE_LIST_REGIONS[0]


# The product attributes that pick one EC2 instance product: its type and region, Linux without
# pre-installed software or licence, shared tenancy, and `capacitystatus` Used (the price of a
# running instance; AllocatedCapacityReservation and UnusedCapacityReservation are the rows of a
# reservation's idle part), and `marketoption` OnDemand, so the answer is the one on-demand product
# and never also a row of another market for the same type, which would make GetProducts match two
# and the provider fail (Karpenter's price lookup narrows the same way: aws/karpenter-provider-aws
# pkg/providers/pricing/pricing.go, its on-demand filters). Attribute names: the AmazonEC2 offer
# file's product attributes (AWS Billing User Guide, "Offer file definitions", and the Price List
# Query API's GetProducts filters,
# https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html).
def product_filters(region: str, instance_type: str) -> list[dict[str, str]]:
    return [
        {"field": "instanceType", "value": instance_type},
        {"field": "regionCode", "value": region},
        {"field": "operatingSystem", "value": "Linux"},
        {"field": "tenancy", "value": "Shared"},
        {"field": "preInstalledSw", "value": "NA"},
        {"field": "licenseModel", "value": "No License required"},
        {"field": "capacitystatus", "value": "Used"},
        {"field": "marketoption", "value": "OnDemand"},
    ]


# us-east-1 on-demand list prices in USD per hour, for when the Price List cannot be asked. From
# Karpenter's generated initial price table (aws/karpenter-provider-aws,
# pkg/providers/pricing/zz_generated.pricing_aws.go at commit
# 031e72b6099630e960dacb88b48a7e9bb780945f, "generated at 2026-01-19T13:23:24Z for us-east-1"),
# which it builds from the same Price List; ../shared/docs/aws-facts.md §7 quotes the same
# g6.12xlarge, m6i.2xlarge, g5.12xlarge, g6e.12xlarge, g6.48xlarge, p5.48xlarge and p4d.24xlarge
# figures. The catalog's g7e, p5e and p6-b300 types are not in it: they have no table price.
LIST_PRICE_REGION = "us-east-1"
LIST_PRICE_SOURCE = (
    "Karpenter's us-east-1 table (aws/karpenter-provider-aws "
    "pkg/providers/pricing/zz_generated.pricing_aws.go, generated 2026-01-19)"
)
LIST_PRICES: Mapping[str, float] = {
    # GPU types of model/facts/catalog.py
    "g5.8xlarge": 2.448,
    "g5.12xlarge": 5.672,
    "g5.16xlarge": 4.096,
    "g5.24xlarge": 8.144,
    "g5.48xlarge": 16.288,
    "g6.8xlarge": 2.0144,
    "g6.12xlarge": 4.6016,
    "g6.16xlarge": 3.3968,
    "g6.24xlarge": 6.6752,
    "g6.48xlarge": 13.3504,
    "g6e.8xlarge": 4.52856,
    "g6e.12xlarge": 10.49264,
    "g6e.16xlarge": 7.57719,
    "g6e.24xlarge": 15.06559,
    "g6e.48xlarge": 30.13118,
    "gr6.8xlarge": 2.4464,
    "p4d.24xlarge": 21.957642,
    "p4de.24xlarge": 27.44705,
    "p5.4xlarge": 6.88,
    "p5.48xlarge": 55.04,
    "p5en.48xlarge": 63.296,
    "p6-b200.48xlarge": 113.9328,
    # core node types (general purpose M families)
    "m5.xlarge": 0.192,
    "m5.2xlarge": 0.384,
    "m5.4xlarge": 0.768,
    "m6i.xlarge": 0.192,
    "m6i.2xlarge": 0.384,
    "m6i.4xlarge": 0.768,
    "m6i.8xlarge": 1.536,
    "m7i.xlarge": 0.2016,
    "m7i.2xlarge": 0.4032,
    "m7i.4xlarge": 0.8064,
    "m7i.8xlarge": 1.6128,
}

# Where a price came from, carried by each Price and shown beside it (the costPerHour output's
# priceSource, the offline plan, docs/capacity-and-cost.md): the Price List's GetProducts answered
# at preview (aws:pricing/getProduct), or the table above, when it could not. An offline run's
# answers come from devkit/offline_account.py, and devkit/plan.py labels them so.
PRICE_LIST = "AWS Price List"
TABLE = "table"


@dataclass(frozen=True)
class Price:
    instance_type: str
    usd_per_hour: float | None  # None: neither the Price List nor the table knows it
    source: str  # PRICE_LIST or TABLE
    region: str  # the region the price is for (the table's is us-east-1)


class PriceListUnanswered(Exception):
    """The Price List could not be asked, or had no single price for the product; `why` says which."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


def price_from_table(instance_type: str) -> Price:
    return Price(instance_type, LIST_PRICES.get(instance_type), TABLE, LIST_PRICE_REGION)


def fallback_warning(
    key: str, value: object, region: str, instance_type: str, why: str, price: Price
) -> Problem:
    """The deployer's line for a price the Price List did not give."""
    if price.usd_per_hour is None:
        said = (
            f"no price: {LIST_PRICE_SOURCE} has no {instance_type} either, so the cost outputs leave it out"
        )
    else:
        said = f"the {price.region} list price from {LIST_PRICE_SOURCE}, ${price.usd_per_hour:g}/h" + (
            "" if region == price.region else f" (not {region}'s: the table has no other region)"
        )
    return warning(
        PRICE_LIST_FALLBACK,
        key,
        value,
        f"cost: could not ask the AWS Price List for the {instance_type} on-demand "
        f"price in {region} ({why}); the cost outputs use {said}",
    )


def _reserved(pool: GpuPool, reservations: Mapping[str, Reservation]) -> Reservation | None:
    return reservations.get(pool.capacity_reservation_id) if pool.capacity_reservation_id else None


def _pool_cost(pool: GpuPool, price: Price, reservation: Reservation | None) -> dict:
    """A pool's price per node and its cost an hour at its smallest and largest size."""
    smallest, largest = pool.min_nodes, pool.max_nodes
    per_node = price.usd_per_hour
    entry = {
        "name": pool.name,
        "instanceType": pool.gpu.name,
        "pricePerNodeHour": per_node,
        "priceSource": price.source,
        "minNodes": smallest,
        "maxNodes": largest,
    }
    if reservation is not None and reservation.is_capacity_block:
        # Paid upfront for the block's whole duration: nothing more per hour while it lasts.
        entry.update(billing="capacity-block (paid upfront)", atMinNodes=0.0, atMaxNodes=0.0)
    elif per_node is None:
        entry.update(billing="on-demand", atMinNodes=None, atMaxNodes=None)
    elif reservation is not None:
        reserved = reservation.total_instances
        entry.update(
            billing=f"on-demand capacity reservation of {reserved} (billed whether used or not)",
            atMinNodes=round(per_node * max(smallest, reserved), 4),
            atMaxNodes=round(per_node * max(largest, reserved), 4),
        )
    else:
        entry.update(
            billing="on-demand",
            atMinNodes=round(per_node * smallest, 4),
            atMaxNodes=round(per_node * largest, 4),
        )
    return entry


def cost_per_hour(
    pools: Sequence[GpuPool],
    core_type: str,
    core_count: int,
    prices: Mapping[str, Price],
    reservations: Mapping[str, Reservation],
) -> dict:
    """The `costPerHour` output: USD per hour at the on-demand list price, per pool and for the
    core group, and the nodes of the whole cluster at the pools' smallest and largest size. A
    total leaves out what has no price and says so (`unpriced`)."""
    gpu = [_pool_cost(p, prices[p.gpu.name], _reserved(p, reservations)) for p in pools]
    core_price = prices[core_type]
    core = {
        "instanceType": core_type,
        "nodes": core_count,
        "pricePerNodeHour": core_price.usd_per_hour,
        "priceSource": core_price.source,
        "perHour": None
        if core_price.usd_per_hour is None
        else round(core_price.usd_per_hour * core_count, 4),
    }
    parts = [*gpu, {"atMinNodes": core["perHour"], "atMaxNodes": core["perHour"]}]
    unpriced = sorted({e["instanceType"] for e in [*gpu, core] if e["pricePerNodeHour"] is None})
    return {
        "currency": "USD",
        "basis": "on-demand list price per hour of the EC2 instances only (no EBS, NAT gateway, EFS, load "
        "balancer, data transfer, EKS control plane, database or discounts)",
        "gpuPools": gpu,
        "core": core,
        "clusterAtMinNodes": round(sum(p["atMinNodes"] for p in parts if p["atMinNodes"] is not None), 4),
        "clusterAtMaxNodes": round(sum(p["atMaxNodes"] for p in parts if p["atMaxNodes"] is not None), 4),
        "unpriced": unpriced,
    }


# One in-region build of the slurmd image (docs/decisions/image-builder.md): not an hourly cost, a
# cost each time the image's inputs change. CodeBuild bills on-demand EC2 builds by the minute of
# the project's compute type, a build's time rounded up to the whole minute: Linux
# BUILD_GENERAL1_LARGE (15 GB memory, 8 vCPUs, 128 GB disk: CodeBuild User Guide, "Build
# environment compute modes and types",
# https://docs.aws.amazon.com/codebuild/latest/userguide/build-env-ref-compute-types.html) at USD
# 0.02 a minute in US East (AWS CodeBuild pricing, https://aws.amazon.com/codebuild/pricing/; the
# page itself was not readable from here, and the figure is the one every reproduction of it
# gives: verify before quoting). Keyed by compute type: the project's is chosen with its other
# settings, and a type without a price here has no estimate.
CODEBUILD_USD_PER_MINUTE: Mapping[str, float] = {"BUILD_GENERAL1_LARGE": 0.02}
CODEBUILD_PRICE_SOURCE = "AWS CodeBuild pricing, on-demand Linux, US East"
# An estimate, not a measurement: about 2 min PROVISIONING, the DLC's 15-21 GB pulled from ECR in
# the region and extracted (~5 min), the Dockerfile's apt-get and pip steps (~10 min, as a local
# build takes), the ~5 GB result exported and pushed within the region (~5 min), rounded up to
# 30 for queueing and layer overhead. A build's real minutes are in its log (its phases' times).
IMAGE_BUILD_MINUTES = 30


def image_build_cost_usd(compute_type: str, minutes: float = IMAGE_BUILD_MINUTES) -> float | None:
    """What one in-region image build of `minutes` on `compute_type` costs, in USD; None for a
    compute type without a price here."""
    price = CODEBUILD_USD_PER_MINUTE.get(compute_type)
    return None if price is None else round(math.ceil(minutes) * price, 4)


def image_build(builder: str) -> dict:
    """The costPerHour output's `imageBuild`: what one build of the slurmd image costs and when one
    runs. In the region it is CodeBuild's minutes (above); with the local builder the deployer's
    machine builds, which AWS does not bill (the push into the region is free: ECR bills no data
    transfer in, https://aws.amazon.com/ecr/pricing/)."""
    when = (
        "once for each new build context (the Dockerfile and the image/ files it copies, the base images, "
        "slurmVersion, the tag); never on an up that changes none, nor for an earlier context whose image "
        "the repository still holds"
    )
    if builder == image_builder.LOCAL:
        return {
            "builder": builder,
            "usdPerBuild": 0.0,
            "when": when,
            "basis": "built on the deployer's machine",
        }
    compute_type = image_builder.COMPUTE_TYPE
    return {
        "builder": builder,
        "computeType": compute_type,
        "usdPerMinute": CODEBUILD_USD_PER_MINUTE.get(compute_type),
        "estimatedMinutes": IMAGE_BUILD_MINUTES,
        "usdPerBuild": image_build_cost_usd(compute_type),
        "priceSource": CODEBUILD_PRICE_SOURCE,
        "when": when,
        "basis": "CodeBuild's on-demand price per minute times an estimated build length (a build's real "
        "length is in its log)",
    }
