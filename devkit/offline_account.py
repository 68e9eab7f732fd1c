"""An AWS account as the program's invokes see it: its zones (with opted-in Local and Wavelength
Zones and a per-account name-to-id mapping), the instance types each zone offers, its vCPU quotas,
the caller and the permissions it lacks. The mocks of devkit/offline_run.py answer from it as
pulumi-aws 7.51.1 does: `DEV` for an offline plan and most tests, variants of it for the tests of
the preflight.

How each invoke answers (the Terraform AWS provider that pulumi-aws 7.51.1 wraps,
github.com/hashicorp/terraform-provider-aws):
- aws:index/getAvailabilityZones: internal/service/ec2/ec2_availability_zones_data_source.go
  sends `state` as the EC2 filter `state` plus the custom filters, sorts by zone name, then drops
  exclude_names/exclude_zone_ids. EC2 DescribeAvailabilityZones
  (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeAvailabilityZones.html)
  returns, without AllAvailabilityZones, every zone the account may use: the standard AZs and the
  Local/Wavelength Zones it opted in to.
- aws:ec2/getInstanceTypeOfferings: ec2_instance_type_offerings_data_source.go returns parallel
  lists instanceTypes/locations/locationTypes, one entry per offering (DescribeInstanceTypeOfferings,
  https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceTypeOfferings.html:
  the location is the zone name for `availability-zone`, the zone id for `availability-zone-id`).
- aws:ec2/getInstanceType: ec2_instance_type_data_source.go asks DescribeInstanceTypes for the one
  type (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceTypes.html) and
  sets its id to the type name and default_vcpus from VCpuInfo.DefaultVCpus, the count the vCPU
  quotas use (https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html).
- aws:servicequotas/getServiceQuota: internal/service/servicequotas/service_quota_data_source.go
  reads the AWS default (GetAWSDefaultServiceQuota), then the applied value (GetServiceQuota) when
  the account has one.
- aws:iam/getSessionContext: internal/service/iam/session_context_data_source.go: for an
  sts assumed-role ARN it looks the role up (iam:GetRole) and returns its ARN, with its path, as
  issuerArn; any other ARN comes back as its own issuer.
- A call that fails for another reason (expired credentials, throttling, an opt-in region not
  enabled) carries the EC2 error code (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/
  errors-overview.html) in the SDK's "operation error ..." text.
- aws:ec2/getCapacityBlockReservation: ec2_capacity_block_reservation_data_source.go (commit
  23b9e58d39e4bb6038d65ad3b165bad97a6ade42) sends DescribeCapacityReservations with the one id and
  no filter, and flattens EC2's CapacityReservation
  (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CapacityReservation.html) into its
  attributes: TotalInstanceCount becomes instance_count, CapacityReservationId the id, the rest
  keep their names (AvailabilityZone, InstanceType, State, ReservationType `default` or
  `capacity-block`, AvailableInstanceCount, Tenancy, InstancePlatform, StartDate, EndDate). An id
  EC2 does not know in the region is its error InvalidCapacityReservationId.NotFound, which the
  provider reports as a resource it couldn't find; expired and cancelled reservations come back
  with their state.
- aws:pricing/getProduct: GetProducts of the Price List Query API, which has endpoints in
  us-east-1, eu-central-1 and ap-south-1 only (AWS Billing User Guide, "Finding services and
  products using AWS Price List Query API"); elsewhere the SDK cannot resolve the endpoint host.
  Its answer `result` is the one matching product as the JSON string GetProducts returns in
  PriceList (https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html):
  product attributes, then terms.OnDemand.<sku>.<offer term code>.priceDimensions.<rate code>
  with unit Hrs and pricePerUnit.USD as a decimal string, beside the Reserved terms (AWS Billing
  User Guide, "Reading the price list":
  https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/reading-an-offer.html).
- aws:ec2/getVpc, aws:ec2/getSubnet, aws:ec2/getRouteTable (the landing zone, `LANDING_ZONE`):
  vpc_data_source.go and vpc_subnet_data_source.go find one VPC or subnet by id (DescribeVpcs,
  https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeVpcs.html; DescribeSubnets,
  https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeSubnets.html) and fail an id
  EC2 does not know (InvalidVpcID.NotFound, InvalidSubnetID.NotFound) as "no matching EC2 VPC found"
  / "no matching EC2 Subnet found" (tfresource.SingularDataSourceFindError). A subnet answers EC2's
  Subnet fields (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_Subnet.html):
  VpcId, AvailabilityZone, AvailabilityZoneId, AvailableIpAddressCount, CidrBlock, Tags.
  vpc_route_table_data_source.go sends DescribeRouteTables
  (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeRouteTables.html) with
  subnet_id as the filter association.subnet-id, vpc_id as vpc-id, plus the custom filters
  (association.main); no table is the error "query returned no results", more than one "multiple
  Route Tables matched". Each route keeps EC2's Route targets
  (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_Route.html: NatGatewayId,
  TransitGatewayId, GatewayId, InstanceId, NetworkInterfaceId, VpcPeeringConnectionId,
  CoreNetworkArn) under their snake-case names, every other one empty; the `local` route is
  left out. A subnet with no explicit association uses the VPC's main table, which no
  association.subnet-id filter finds (Amazon VPC user guide, "Subnet route tables":
  https://docs.aws.amazon.com/vpc/latest/userguide/subnet-route-tables.html).
- aws:ec2/getInstanceType also answers maximum_ipv4_addresses_per_interface
  (NetworkInfo.Ipv4AddressesPerInterface) from the DescribeInstanceTypes records of the reference
  data (../shared/ref/aws/describe-instance-types.json) for GPU types, from _CPU_IPV4 for the CPU ones.
- aws:ecr/getImage: DescribeImages by registry id, repository and tag
  (hashicorp/terraform-provider-aws internal/service/ecr/image_data_source.go; ECR API Reference,
  DescribeImages: https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_DescribeImages.html),
  answering imageDigest, imageTags and imageUri <repository URI>@<digest>. A tag the repository
  does not hold is DescribeImages' ImageNotFoundException, a repository it does not have
  RepositoryNotFoundException, in the provider's "reading ECR Images" error.
- aws:ecr/getImages: ListImages of the repository (internal/service/ecr/images_data_source.go;
  https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_ListImages.html): one
  {imageDigest, imageTag} per tag.
- Any other registry (stack/registry.py) over its HTTP API, as ghcr.io answers it (OCI
  distribution-spec v1.1.0, "Pulling manifests", "Listing tags", "Error Codes"; the token protocol
  of distribution/distribution docs/spec/auth/token.md): a request without a token is 401 with a
  Bearer challenge naming the realm, service and pull scope; the realm hands out an anonymous
  token; with it, HEAD of a held tag's manifest is 200 with Docker-Content-Digest, of another tag
  404 MANIFEST_UNKNOWN, of an unknown repository 404 NAME_UNKNOWN; the tags list is
  {"name", "tags"}.
- aws:eks/getCluster, aws:eks/getAddon, aws:eks/getAccessEntry (the landing zone's cluster,
  `EXISTING_CLUSTER`): internal/service/eks/cluster_data_source.go (dataSourceClusterRead) sends
  DescribeCluster (https://docs.aws.amazon.com/eks/latest/APIReference/API_DescribeCluster.html)
  and flattens EKS's Cluster (https://docs.aws.amazon.com/eks/latest/APIReference/API_Cluster.html)
  under its own names, each nested block a list of one: status, version, endpoint,
  certificate_authority[0].data, identity[0].oidc[0].issuer, vpc_config[0] (cluster_security_group_id,
  vpc_id, subnet_ids, ...), access_config[0].authentication_mode. addon_data_source.go sends
  DescribeAddon (https://docs.aws.amazon.com/eks/latest/APIReference/API_DescribeAddon.html:
  addonVersion, addonArn, serviceAccountRoleArn; its status is not among the data source's
  attributes), access_entry_datasource.go DescribeAccessEntry
  (https://docs.aws.amazon.com/eks/latest/APIReference/API_DescribeAccessEntry.html: type,
  principalArn, kubernetesGroups, username). A name EKS does not know is its
  ResourceNotFoundException, which the provider reports as a resource it couldn't find.
- A refused call: the provider's error carries the AWS message, which names the action
  ("... is not authorized to perform: <action> ...", the IAM "access denied" format,
  https://docs.aws.amazon.com/IAM/latest/UserGuide/troubleshoot_access-denied.html).
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import re
import urllib.parse
from dataclasses import dataclass, field, replace

from model.facts.catalog import efa_gpu_types, lookup
from model.facts.cost import LIST_PRICE_SOURCE, LIST_PRICES, PRICE_LIST_REGIONS
from model.facts.versions import SLINKY_IMAGES
from stack.registry import Response


@dataclass(frozen=True)
class ZoneRecord:
    name: str
    zone_id: str
    zone_type: str = "availability-zone"  # or local-zone, wavelength-zone
    opt_in_status: str = "opt-in-not-required"  # or opted-in, not-opted-in
    state: str = "available"

    @property
    def group_name(self) -> str:
        # A standard AZ's group is its region, a Local Zone's e.g. us-west-2-lax-1, a Wavelength
        # Zone's e.g. us-west-2-wl1.
        if self.zone_type == "wavelength-zone":
            return self.name.split("-wl1-")[0] + "-wl1"
        return self.name[:-1]


@dataclass(frozen=True)
class ReservationRecord:
    """One Capacity Reservation as EC2 holds it (Amazon EC2 API Reference, CapacityReservation:
    https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CapacityReservation.html)."""

    region: str
    instance_type: str
    availability_zone: str
    total_instance_count: int
    state: str = "active"
    reservation_type: str = "default"  # or capacity-block
    available_instance_count: int | None = None  # None: all of them
    tenancy: str = "default"
    instance_platform: str = "Linux/UNIX"
    start_date: str = "2026-11-01T00:00:00Z"
    end_date: str = ""
    placement_group: str = ""  # the name of the cluster placement group it was created in, if any
    owner_id: str = ""  # the owning account; "" for the deploying account's own


@dataclass(frozen=True)
class VpcRecord:
    """One VPC as EC2 holds it (Amazon EC2 API Reference, Vpc:
    https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_Vpc.html)."""

    vpc_id: str
    region: str
    cidr_block: str
    owner_id: str = ""  # "" for the deploying account's own
    # EnableDnsSupport and EnableDnsHostnames (DescribeVpcAttribute), both on as a landing zone has them.
    dns: bool = True


@dataclass(frozen=True)
class SubnetRecord:
    """One subnet as EC2 holds it (Amazon EC2 API Reference, Subnet)."""

    subnet_id: str
    vpc_id: str
    availability_zone: str
    cidr_block: str
    available_ip_address_count: int
    tags: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class RouteTableRecord:
    """One route table as EC2 holds it (Amazon EC2 API Reference, RouteTable): its routes other than
    `local`, each EC2's Route as {target field: id} plus DestinationCidrBlock, and the subnets
    explicitly associated with it; `main` for the VPC's main table."""

    route_table_id: str
    vpc_id: str
    routes: tuple[tuple[tuple[str, str], ...], ...] = ()
    subnet_ids: tuple[str, ...] = ()
    main: bool = False


@dataclass(frozen=True)
class EksClusterRecord:
    """One EKS cluster as EKS holds it (EKS API Reference, Cluster:
    https://docs.aws.amazon.com/eks/latest/APIReference/API_Cluster.html), with its add-ons and
    access entries."""

    name: str
    region: str
    vpc_id: str
    subnet_ids: tuple[str, ...]
    version: str = "1.34"
    status: str = "ACTIVE"  # CREATING | ACTIVE | DELETING | FAILED | UPDATING | PENDING
    authentication_mode: str = "API_AND_CONFIG_MAP"  # API | API_AND_CONFIG_MAP | CONFIG_MAP
    addons: dict[str, str] = field(default_factory=dict)  # add-on name -> addonVersion
    # add-on name -> its serviceAccountRoleArn (IRSA); an add-on not here has none
    addon_roles: dict[str, str] = field(default_factory=dict)
    access_entries: dict[str, str] = field(default_factory=dict)  # principal ARN -> type


@dataclass(frozen=True)
class Account:
    account_id: str
    caller_arn: str
    role_paths: dict[str, str]  # role name -> path, as iam:GetRole answers
    zones: dict[str, list[ZoneRecord]]  # region -> zones
    offerings: dict[str, frozenset[str]]  # zone id -> instance types offered there
    quotas: dict[str, float]  # ec2 quota code -> applied value
    quota_defaults: dict[str, float]
    denied: frozenset[str] = field(default_factory=frozenset)  # IAM actions refused
    # Opt-in regions (https://docs.aws.amazon.com/accounts/latest/reference/manage-acct-regions.html)
    # this account has not enabled: EC2 answers OptInRequired there.
    regions_not_enabled: frozenset[str] = frozenset()
    failure: tuple[int, str, str] | None = None  # every EC2 call fails: (status, code, message)
    reservations: dict[str, ReservationRecord] = field(default_factory=dict)  # by cr- id
    # The Price List's on-demand Linux price in USD per hour, by (regionCode, instance type).
    prices: dict[tuple[str, str], float] = field(default_factory=dict)
    price_list_failure: str | None = None  # every GetProducts call fails with this text
    # Its VPCs, subnets and route tables, by id (the table's own order for route tables).
    vpcs: dict[str, VpcRecord] = field(default_factory=dict)
    subnets: dict[str, SubnetRecord] = field(default_factory=dict)
    route_tables: tuple[RouteTableRecord, ...] = ()
    # The images the registries hold: repository (host/path) -> its tags (held_images()).
    images: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Its EKS clusters, by name.
    eks_clusters: dict[str, "EksClusterRecord"] = field(default_factory=dict)

    def but(self, **changes) -> "Account":
        return replace(self, **changes)


_ALL_GPU = frozenset(efa_gpu_types())
# DefaultVCpus of the CPU types (Amazon EC2 instance type specifications, general purpose:
# https://docs.aws.amazon.com/ec2/latest/instancetypes/gp.html).
_CPU_VCPUS = {"m6i.2xlarge": 8, "m6i.4xlarge": 16, "m7i.2xlarge": 8}
_CPU = frozenset(_CPU_VCPUS)
# Their NetworkInfo.Ipv4AddressesPerInterface (the same specifications page, networking).
_CPU_IPV4 = {"m6i.2xlarge": 15, "m6i.4xlarge": 30, "m7i.2xlarge": 15}

# us-west-2 as one account sees it: zone names map to ids per account
# (https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html); an opted-in Local
# Zone (Los Angeles) and Wavelength Zone (Las Vegas), one Local Zone not opted in.
US_WEST_2 = [
    ZoneRecord("us-west-2a", "usw2-az2"),
    ZoneRecord("us-west-2b", "usw2-az1"),
    ZoneRecord("us-west-2c", "usw2-az3"),
    ZoneRecord("us-west-2d", "usw2-az4"),
    ZoneRecord("us-west-2-lax-1a", "usw2-lax1-az1", "local-zone", "opted-in"),
    ZoneRecord("us-west-2-lax-1b", "usw2-lax1-az2", "local-zone", "opted-in"),
    ZoneRecord("us-west-2-den-1a", "usw2-den1-az1", "local-zone", "not-opted-in"),
    ZoneRecord("us-west-2-wl1-las-wlz-1", "usw2-wl1-las-wlz1", "wavelength-zone", "opted-in"),
]
# us-east-1 with use1-az3 (where EKS places no control plane) behind us-east-1e in this account.
US_EAST_1 = [
    ZoneRecord("us-east-1a", "use1-az4"),
    ZoneRecord("us-east-1b", "use1-az6"),
    ZoneRecord("us-east-1c", "use1-az1"),
    ZoneRecord("us-east-1d", "use1-az2"),
    ZoneRecord("us-east-1e", "use1-az3"),
    ZoneRecord("us-east-1f", "use1-az5"),
    ZoneRecord("us-east-1-bos-1a", "use1-bos1-az1", "local-zone", "opted-in"),
]
# ap-east-1 (Hong Kong): its DLC registry is another account than most regions'.
AP_EAST_1 = [
    ZoneRecord("ap-east-1a", "ape1-az1"),
    ZoneRecord("ap-east-1b", "ape1-az2"),
    ZoneRecord("ap-east-1c", "ape1-az3"),
]

# What each zone offers is this fixture's choice, not a copy of AWS's current tables.
# A well-provisioned account: every EFA GPU type in the first two AZs of each region; p5 not in
# usw2-az3, g6.12xlarge not in usw2-az4; m7i.2xlarge only in usw2-az2 and usw2-az4; quotas raised.
DEV = Account(
    account_id="123456789012",
    caller_arn="arn:aws:sts::123456789012:assumed-role/platform-deployer/ci-session",
    role_paths={
        "platform-deployer": "/",
        "AWSReservedSSO_Admin_0123456789abcdef": "/aws-reserved/sso.amazonaws.com/",
    },
    zones={"us-west-2": US_WEST_2, "us-east-1": US_EAST_1, "ap-east-1": AP_EAST_1},
    offerings={
        "usw2-az1": _ALL_GPU | _CPU - {"m7i.2xlarge"},
        "usw2-az2": _ALL_GPU | _CPU,
        "usw2-az3": _ALL_GPU - {"p5.48xlarge"} | _CPU - {"m7i.2xlarge"},
        "usw2-az4": _ALL_GPU - {"g6.12xlarge"} | _CPU,
        **{z: _ALL_GPU | _CPU for z in ("use1-az1", "use1-az2", "use1-az4", "use1-az5", "use1-az6")},
        "use1-az3": _CPU,
        **{z: frozenset({"g5.12xlarge"}) | _CPU for z in ("ape1-az1", "ape1-az2", "ape1-az3")},
        "usw2-lax1-az1": _CPU,
        "usw2-lax1-az2": _CPU,
        "use1-bos1-az1": _CPU,
    },
    quotas={"L-DB2E81BA": 768.0, "L-417A185B": 768.0, "L-1216C47A": 640.0},
    # This fixture's values where nothing was requested: below two g6.12xlarge (96 vCPUs) and one
    # p5.48xlarge (192), as new accounts often are (AWS sets new accounts' values per account).
    # The standard quota's default covers the dev core group (3 x m6i.2xlarge during an update = 24)
    # but not 3 x m6i.4xlarge (48).
    quota_defaults={"L-DB2E81BA": 64.0, "L-417A185B": 0.0, "L-1216C47A": 32.0},
)
# What the Price List answers is this fixture's choice: us-east-1's list prices (model/facts/cost.py's
# table) for us-west-2 and us-east-1 alike, except g6.12xlarge in us-west-2, priced apart so a test
# can tell a Price List answer from the table's.
_PRICED = [*efa_gpu_types(), *_CPU_VCPUS]
# How an offline run's Price List answers are labelled where they are shown (devkit/plan.py): the
# program labels them the Price List's, but this fixture answered, with the table's figures.
PRICE_SOURCE = "offline account"
PRICE_SOURCE_NOTE = (
    f"devkit/offline_account.py answered the Price List with the figures of {LIST_PRICE_SOURCE}, "
    "g6.12xlarge in us-west-2 made up $0.10 above them: not your account's prices"
)
DEV = DEV.but(
    prices={
        **{
            (region, t): LIST_PRICES[t]
            for region in ("us-west-2", "us-east-1")
            for t in _PRICED
            if t in LIST_PRICES
        },
        ("us-west-2", "g6.12xlarge"): 4.6016 + 0.1,
    }
)


def image_digest(repository: str, tag: str) -> str:
    """The digest the offline registries answer for repository:tag: a fake, derived from the two
    (sha256 of "offline/<repository>:<tag>"), the same every run; no registry holds it."""
    return "sha256:" + hashlib.sha256(f"offline/{repository}:{tag}".encode()).hexdigest()


# What the registries hold is this fixture's choice, not a record of what ghcr.io or the DLC
# registries hold: the Slinky images of the 26.05 patches the tests use, on both flavours, and the
# operator's of the 1.2 releases; the default DLC in the DLC registries of the three regions the
# account has; the other images tests name.
_SLINKY = SLINKY_IMAGES
_DLC_TAGS = ("2.13.0-cu133-amzn2023", "2.13.0-cu130-amzn2023", "2.12.0-cu130-amzn2023")
HELD_IMAGES = {
    **{
        f"{_SLINKY}/{name}": tuple(
            f"26.05.{patch}-{flavour}" for patch in (2, 3, 4, 5) for flavour in ("ubuntu24.04", "ubuntu26.04")
        )
        for name in ("slurmd", "slurmctld", "slurmrestd", "slurmdbd", "login", "login-pyxis")
    },
    **{
        f"{_SLINKY}/{name}": ("1.2.0", "1.2.1", "1.2.2")
        for name in ("slurm-operator", "slurm-operator-webhook")
    },
    **{
        f"{registry}/pytorch": _DLC_TAGS
        for registry in (
            "763104351884.dkr.ecr.us-west-2.amazonaws.com",
            "763104351884.dkr.ecr.us-east-1.amazonaws.com",
            "871362719292.dkr.ecr.ap-east-1.amazonaws.com",
        )
    },
    "871362719292.dkr.ecr.ap-east-1.amazonaws.com/pytorch-training": (
        "2.9.0-gpu-py312-cu130-ubuntu22.04-ec2",
    ),
    "210987654321.dkr.ecr.eu-west-1.amazonaws.com/slinky/slurmd": ("26.05.5-ubuntu24.04",),
    "registry-1.docker.io/myorg/pytorch-training": ("2.9.0-gpu",),
    "localhost:5000/slurmd": ("26.05.5-ubuntu24.04",),
}
DEV = DEV.but(images=HELD_IMAGES)
# A new account: default quotas only.
NEW = DEV.but(quotas={})


# A landing zone in us-west-2, as a network team hands it out: the VPC and its routes are theirs.
# Private subnets in three AZs routed to a NAT gateway (us-west-2a, b, c), one in us-west-2d routed
# to a Transit Gateway, one tiny subnet with few free addresses, one isolated subnet with no
# explicit association (so the VPC's main table, which routes nothing out), public subnets in
# three AZs routed to an internet gateway, none tagged for load balancer discovery; and a second
# VPC with a subnet of its own. The ids and counts are this fixture's choice.
LANDING_ZONE_VPC = "vpc-0a1b2c3d4e5f60718"
OTHER_VPC = "vpc-0f1e2d3c4b5a69788"
LANDING_ZONE_PRIVATE = {
    "us-west-2a": "subnet-0a00000000000000a",
    "us-west-2b": "subnet-0a00000000000000b",
    "us-west-2c": "subnet-0a00000000000000c",
}
TRANSIT_SUBNET = "subnet-0a00000000000000d"  # us-west-2d, out through the Transit Gateway
TINY_SUBNET = "subnet-0a000000000000001"  # us-west-2a, a /28 with 5 addresses free
ISOLATED_SUBNET = "subnet-0a000000000000002"  # us-west-2b, no explicit association
LANDING_ZONE_PUBLIC = {
    "us-west-2a": "subnet-0b00000000000000a",
    "us-west-2b": "subnet-0b00000000000000b",
    "us-west-2c": "subnet-0b00000000000000c",
}
OTHER_VPC_SUBNET = "subnet-0c00000000000000a"  # us-west-2a, in OTHER_VPC
NAT_GATEWAY = "nat-0a1b2c3d4e5f60718"
TRANSIT_GATEWAY = "tgw-0a1b2c3d4e5f60718"


def _subnets() -> dict[str, SubnetRecord]:
    lz, found = LANDING_ZONE_VPC, []
    for i, (zone, sid) in enumerate(LANDING_ZONE_PRIVATE.items()):
        found.append(SubnetRecord(sid, lz, zone, f"10.64.{i * 32}.0/19", 8170))
    found += [
        SubnetRecord(TRANSIT_SUBNET, lz, "us-west-2d", "10.64.96.0/19", 8187),
        SubnetRecord(TINY_SUBNET, lz, "us-west-2a", "10.64.128.0/28", 5),
        SubnetRecord(ISOLATED_SUBNET, lz, "us-west-2b", "10.64.129.0/24", 251),
    ]
    for i, (zone, sid) in enumerate(LANDING_ZONE_PUBLIC.items()):
        found.append(SubnetRecord(sid, lz, zone, f"10.64.{192 + i * 16}.0/20", 4091))
    found.append(SubnetRecord(OTHER_VPC_SUBNET, OTHER_VPC, "us-west-2a", "10.80.0.0/20", 4091))
    return {s.subnet_id: s for s in found}


LANDING_ZONE = DEV.but(
    vpcs={
        LANDING_ZONE_VPC: VpcRecord(LANDING_ZONE_VPC, "us-west-2", "10.64.0.0/16"),
        OTHER_VPC: VpcRecord(OTHER_VPC, "us-west-2", "10.80.0.0/16"),
    },
    subnets=_subnets(),
    route_tables=(
        RouteTableRecord("rtb-0a0000000000000f0", LANDING_ZONE_VPC, main=True),
        RouteTableRecord(
            "rtb-0a0000000000000a1",
            LANDING_ZONE_VPC,
            ((("cidr_block", "0.0.0.0/0"), ("nat_gateway_id", NAT_GATEWAY)),),
            (*LANDING_ZONE_PRIVATE.values(), TINY_SUBNET),
        ),
        RouteTableRecord(
            "rtb-0a0000000000000a2",
            LANDING_ZONE_VPC,
            ((("cidr_block", "0.0.0.0/0"), ("transit_gateway_id", TRANSIT_GATEWAY)),),
            (TRANSIT_SUBNET,),
        ),
        RouteTableRecord(
            "rtb-0a0000000000000b1",
            LANDING_ZONE_VPC,
            ((("cidr_block", "0.0.0.0/0"), ("gateway_id", "igw-0a1b2c3d4e5f60718")),),
            tuple(LANDING_ZONE_PUBLIC.values()),
        ),
        RouteTableRecord("rtb-0f0000000000000f0", OTHER_VPC, main=True),
    ),
)


# A platform team's EKS cluster in the landing zone, its control plane in the three NAT-routed
# private subnets: ACTIVE, on a version EKS offers, access entries beside aws-auth, the add-ons a
# cluster created with the console has, and the deployer's role (DEV's caller) an admin. The
# variants are the refusals' cases. The ids and versions are this fixture's choice.
EXISTING_CLUSTER_NAME = "platform"
DEPLOYER_ROLE = "arn:aws:iam::123456789012:role/platform-deployer"
EXISTING_CLUSTER_RECORD = EksClusterRecord(
    EXISTING_CLUSTER_NAME,
    "us-west-2",
    LANDING_ZONE_VPC,
    tuple(LANDING_ZONE_PRIVATE.values()),
    addons={
        "vpc-cni": "v1.20.4-eksbuild.1",
        "kube-proxy": "v1.34.1-eksbuild.2",
        "coredns": "v1.12.4-eksbuild.1",
        "eks-pod-identity-agent": "v1.3.9-eksbuild.3",
    },
    addon_roles={"vpc-cni": "arn:aws:iam::123456789012:role/platform-vpc-cni"},
    access_entries={DEPLOYER_ROLE: "STANDARD"},
)
EXISTING_CLUSTER = LANDING_ZONE.but(eks_clusters={EXISTING_CLUSTER_NAME: EXISTING_CLUSTER_RECORD})


def existing_cluster(**changes) -> Account:
    """EXISTING_CLUSTER with its cluster changed (status, version, vpc_id, addons, ...)."""
    return EXISTING_CLUSTER.but(
        eks_clusters={EXISTING_CLUSTER_NAME: replace(EXISTING_CLUSTER_RECORD, **changes)}
    )


# What https://truststore.pki.rds.amazonaws.com/<region>/<region>-bundle.pem serves, offline: a
# PEM bundle of CA certificates (Amazon RDS User Guide, "Using SSL/TLS to encrypt a connection to a
# DB instance or cluster": https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/UsingWithRDS.SSL.html).
# Not AWS's: a self-signed P-256 CA made for the offline account with openssl (no key kept), so no
# run downloads anything and every run records the same bytes.
RDS_CA_BUNDLE = (
    "-----BEGIN CERTIFICATE-----\n"
    "MIIB9zCCAZygAwIBAgIBATAKBggqhkjOPQQDAjBZMSMwIQYDVQQKDBpzbGlua3kt\n"
    "ZWtzIG9mZmxpbmUgYWNjb3VudDEyMDAGA1UEAwwpT2ZmbGluZSBSRFMgdXMtd2Vz\n"
    "dC0yIFJvb3QgQ0EgKHRlc3Qgb25seSkwIBcNMjYxMjA0MjAyNjU3WhgPMjEyNjEx\n"
    "MTAyMDI2NTdaMFkxIzAhBgNVBAoMGnNsaW5reS1la3Mgb2ZmbGluZSBhY2NvdW50\n"
    "MTIwMAYDVQQDDClPZmZsaW5lIFJEUyB1cy13ZXN0LTIgUm9vdCBDQSAodGVzdCBv\n"
    "bmx5KTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABA00P9Y6oQtL5JBUqya/bO+i\n"
    "ZeeP3uGu8bmZN67ij0tWmYXlY/macElWKAT5HWOt3JKrKGxfLrKV59fHTZYkda2j\n"
    "UzBRMB0GA1UdDgQWBBQB5jr3fmRQTynEuutqWXbSz7L/kjAfBgNVHSMEGDAWgBQB\n"
    "5jr3fmRQTynEuutqWXbSz7L/kjAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMC\n"
    "A0kAMEYCIQCNa0VMTZf1VH1WnPAzidVJECpLWU0nPRkYqN7OEGGw5AIhAMTz6P1n\n"
    "KdqajPdZ5SbEz0cwhD9tmEqfYyh7utOxijtg\n"
    "-----END CERTIFICATE-----\n"
)


def rds_ca_bundle(region: str) -> str:
    """The region's RDS CA bundle, as components/accounting_database.py rds_ca_bundle returns it."""
    return RDS_CA_BUNDLE


def denied_message(account: Account, action: str) -> str:
    return (
        f"operation error: https response error StatusCode: 403, api error AccessDenied: "
        f"User: {account.caller_arn} is not authorized to perform: {action} because no "
        f"identity-based policy allows the {action} action"
    )


def api_error(operation: str, status: int, code: str, message: str) -> str:
    """The provider's text for a failed EC2 call, as the AWS SDK for Go v2 words it."""
    return (
        f"operation error EC2: {operation}, https response error StatusCode: {status}, "
        f"RequestID: 00000000-0000-0000-0000-000000000000, api error {code}: {message}"
    )


def _zone_filter(z: ZoneRecord, name: str, values: list[str]) -> bool:
    attr = {
        "state": z.state,
        "zone-type": z.zone_type,
        "opt-in-status": z.opt_in_status,
        "zone-name": z.name,
        "zone-id": z.zone_id,
        "group-name": z.group_name,
    }
    if name not in attr:
        raise ValueError(f"the mock does not model the zone filter {name!r}")
    return any(fnmatch.fnmatchcase(attr[name], v) for v in values)


def _reservation(account: Account, region: str, reservation_id: str):
    r = account.reservations.get(reservation_id)
    if r is None or r.region != region:  # Capacity Reservations are regional
        not_found = api_error(
            "DescribeCapacityReservations",
            400,
            "InvalidCapacityReservationId.NotFound",
            f"The capacity reservation ID '{reservation_id}' does not exist",
        )
        return {}, [
            (
                "",
                f"reading EC2 Capacity Block Reservation ({reservation_id}): couldn't find resource: "
                f"{not_found}",
            )
        ]
    zone_ids = {z.name: z.zone_id for z in account.zones.get(region, [])}
    available = r.total_instance_count if r.available_instance_count is None else r.available_instance_count
    owner = r.owner_id or account.account_id
    return {
        "id": reservation_id,
        "region": region,
        "arn": f"arn:aws:ec2:{region}:{owner}:capacity-reservation/{reservation_id}",
        "availabilityZone": r.availability_zone,
        "availabilityZoneId": zone_ids.get(r.availability_zone, ""),
        "instanceType": r.instance_type,
        "instanceCount": r.total_instance_count,
        "availableInstanceCount": available,
        "state": r.state,
        "reservationType": r.reservation_type,
        "tenancy": r.tenancy,
        "instancePlatform": r.instance_platform,
        "startDate": r.start_date,
        "endDate": r.end_date,
        "endDateType": "limited" if r.end_date else "unlimited",
        "instanceMatchCriteria": "targeted" if r.reservation_type == "capacity-block" else "open",
        "ownerId": owner,
        "ebsOptimized": True,
        "createdDate": "2026-10-01T00:00:00Z",
        # The provider sets "" where EC2 leaves PlacementGroupArn out (a reservation in no group);
        # a group is its owner's.
        "placementGroupArn": (
            f"arn:aws:ec2:{region}:{owner}:placement-group/{r.placement_group}" if r.placement_group else ""
        ),
        "tags": {},
    }


# The attributes GetProducts is asked to match (model/facts/cost.py product_filters), with the value the
# fixture's product has where it does not come from the price table's key.
_PRODUCT_ATTRIBUTES = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "licenseModel": "No License required",
    "capacitystatus": "Used",
    "marketoption": "OnDemand",
}
ON_DEMAND_TERM, HOURLY_RATE = "JRTCKXETXF", "6YS6EN2CT7"  # the OnDemand offer term and rate codes


def product_document(region: str, instance_type: str, usd: float) -> str:
    """One EC2 product as GetProducts' PriceList holds it: a JSON string of product, serviceCode and
    terms.OnDemand/Reserved offers with priceDimensions (AWS Price List API Reference, GetProducts:
    https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html;
    the term and rate codes as AWS Billing User Guide, "Reading the price list", shows them)."""
    sku = hashlib.sha256(f"{region}/{instance_type}".encode()).hexdigest()[:16].upper()
    on_demand = f"{sku}.{ON_DEMAND_TERM}"
    reserved = f"{sku}.4NA7Y494T4"  # a 1-year No Upfront term: priced per hour too, lower
    return json.dumps(
        {
            "product": {
                "productFamily": "Compute Instance",
                "sku": sku,
                "attributes": {
                    "instanceType": instance_type,
                    "regionCode": region,
                    **_PRODUCT_ATTRIBUTES,
                    "servicecode": "AmazonEC2",
                },
            },
            "serviceCode": "AmazonEC2",
            "terms": {
                "OnDemand": {
                    on_demand: {
                        "sku": sku,
                        "offerTermCode": ON_DEMAND_TERM,
                        "effectiveDate": "2026-11-01T00:00:00Z",
                        "termAttributes": {},
                        "priceDimensions": {
                            f"{on_demand}.{HOURLY_RATE}": {
                                "rateCode": f"{on_demand}.{HOURLY_RATE}",
                                "unit": "Hrs",
                                "beginRange": "0",
                                "endRange": "Inf",
                                "appliesTo": [],
                                "pricePerUnit": {"USD": f"{usd:.10f}"},
                                "description": f"${usd:g} per On Demand Linux {instance_type} Instance Hour",
                            }
                        },
                    }
                },
                "Reserved": {
                    reserved: {
                        "sku": sku,
                        "offerTermCode": "4NA7Y494T4",
                        "effectiveDate": "2026-11-01T00:00:00Z",
                        "termAttributes": {
                            "LeaseContractLength": "1yr",
                            "OfferingClass": "standard",
                            "PurchaseOption": "No Upfront",
                        },
                        "priceDimensions": {
                            f"{reserved}.{HOURLY_RATE}": {
                                "rateCode": f"{reserved}.{HOURLY_RATE}",
                                "unit": "Hrs",
                                "beginRange": "0",
                                "endRange": "Inf",
                                "appliesTo": [],
                                "pricePerUnit": {"USD": f"{usd * 0.6:.10f}"},
                                "description": f"Linux/UNIX ({instance_type}) reserved hour",
                            }
                        },
                    }
                },
            },
            "version": "20261120000000",
            "publicationDate": "2026-11-20T00:00:00Z",
        },
        sort_keys=True,
    )


def _product(account: Account, endpoint_region: str, args: dict):
    operation = "operation error Pricing: GetProducts"
    if endpoint_region not in PRICE_LIST_REGIONS:
        host = f"api.pricing.{endpoint_region}.amazonaws.com"
        return {}, [
            (
                "",
                f"{operation}, https response error StatusCode: 0, RequestID: , request send failed, "
                f'Post "https://{host}/": dial tcp: lookup {host}: no such host',
            )
        ]
    if account.price_list_failure:
        return {}, [("", f"{operation}, {account.price_list_failure}")]
    if "pricing:GetProducts" in account.denied:
        return {}, [("", denied_message(account, "pricing:GetProducts"))]
    if args.get("serviceCode") != "AmazonEC2":
        raise ValueError(f"the mock models AmazonEC2 products only, not {args.get('serviceCode')!r}")
    wanted = {f["field"]: f["value"] for f in args.get("filters") or []}
    unknown = set(wanted) - {"instanceType", "regionCode", *_PRODUCT_ATTRIBUTES}
    if unknown:
        raise ValueError(f"the mock does not model the product attributes {sorted(unknown)}")
    key = (wanted.get("regionCode"), wanted.get("instanceType"))
    matches = key in account.prices and all(wanted.get(k, v) == v for k, v in _PRODUCT_ATTRIBUTES.items())
    if not matches:
        return {}, [("", "reading Pricing Product: empty result")]
    return {
        "id": "aws-pricing-product",
        "filters": args.get("filters"),
        "serviceCode": "AmazonEC2",
        "result": product_document(key[0], key[1], account.prices[key]),
    }


def _not_found(what: str) -> tuple[dict, list[tuple[str, str]]]:
    """tfresource.SingularDataSourceFindError's text for an id EC2 does not know."""
    return {}, [("", f"no matching {what} found")]


# Every target field of a route as the data source sets it (EC2 Route), "" where EC2 gives none.
_ROUTE_FIELDS = (
    "carrier_gateway_id",
    "cidr_block",
    "core_network_arn",
    "destination_prefix_list_id",
    "egress_only_gateway_id",
    "gateway_id",
    "instance_id",
    "ipv6_cidr_block",
    "local_gateway_id",
    "nat_gateway_id",
    "network_interface_id",
    "odb_network_arn",
    "transit_gateway_id",
    "vpc_endpoint_id",
    "vpc_peering_connection_id",
)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


def _vpc(account: Account, region: str, args: dict):
    v = account.vpcs.get(args.get("id") or "")
    if v is None or v.region != region:  # VPCs are regional
        return _not_found("EC2 VPC")
    owner = v.owner_id or account.account_id
    main = next((t.route_table_id for t in account.route_tables if t.vpc_id == v.vpc_id and t.main), "")
    return {
        "id": v.vpc_id,
        "arn": f"arn:aws:ec2:{region}:{owner}:vpc/{v.vpc_id}",
        "cidrBlock": v.cidr_block,
        "ownerId": owner,
        "state": "available",
        "default": False,
        "mainRouteTableId": main,
        "enableDnsHostnames": v.dns,
        "enableDnsSupport": v.dns,
        "instanceTenancy": "default",
        "tags": {},
        "region": region,
    }


def _subnet(account: Account, region: str, args: dict):
    s = account.subnets.get(args.get("id") or "")
    vpc = account.vpcs.get(s.vpc_id) if s else None
    if s is None or vpc is None or vpc.region != region:
        return _not_found("EC2 Subnet")
    zone_ids = {z.name: z.zone_id for z in account.zones.get(region, [])}
    owner = vpc.owner_id or account.account_id
    return {
        "id": s.subnet_id,
        "arn": f"arn:aws:ec2:{region}:{owner}:subnet/{s.subnet_id}",
        "vpcId": s.vpc_id,
        "availabilityZone": s.availability_zone,
        "availabilityZoneId": zone_ids.get(s.availability_zone, ""),
        "availableIpAddressCount": s.available_ip_address_count,
        "cidrBlock": s.cidr_block,
        "mapPublicIpOnLaunch": False,
        "defaultForAz": False,
        "ownerId": owner,
        "state": "available",
        "tags": dict(s.tags),
        "region": region,
    }


def _route_table(account: Account, region: str, args: dict):
    def matches(t: RouteTableRecord, name: str, values: list[str]) -> bool:
        attr = {
            "route-table-id": [t.route_table_id],
            "vpc-id": [t.vpc_id],
            "association.subnet-id": list(t.subnet_ids),
            "association.main": ["true" if t.main else "false"],
        }
        if name not in attr:
            raise ValueError(f"the mock does not model the route table filter {name!r}")
        return any(a in values for a in attr[name])

    filters = [
        (name, [args[arg]])
        for name, arg in (
            ("route-table-id", "routeTableId"),
            ("vpc-id", "vpcId"),
            ("association.subnet-id", "subnetId"),
        )
        if args.get(arg)
    ]
    filters += [(f["name"], f["values"]) for f in args.get("filters") or []]
    regional = [t for t in account.route_tables if account.vpcs[t.vpc_id].region == region]
    found = [t for t in regional if all(matches(t, n, v) for n, v in filters)]
    if not found:
        return {}, [("", "query returned no results. Please change your search criteria and try again")]
    if len(found) > 1:
        return {}, [
            (
                "",
                "multiple Route Tables matched; use additional constraints to reduce matches to a "
                "single Route Table",
            )
        ]
    (t,) = found
    owner = account.vpcs[t.vpc_id].owner_id or account.account_id
    associations = [
        {
            "routeTableId": t.route_table_id,
            "routeTableAssociationId": f"rtbassoc-{hashlib.sha256(sid.encode()).hexdigest()[:17]}",
            "subnetId": sid,
            "gatewayId": "",
            "main": False,
        }
        for sid in t.subnet_ids
    ]
    if t.main:
        associations.append(
            {
                "routeTableId": t.route_table_id,
                "routeTableAssociationId": f"rtbassoc-{hashlib.sha256(t.route_table_id.encode()).hexdigest()[:17]}",
                "subnetId": "",
                "gatewayId": "",
                "main": True,
            }
        )
    return {
        "id": t.route_table_id,
        "routeTableId": t.route_table_id,
        "vpcId": t.vpc_id,
        "subnetId": args.get("subnetId") or "",
        "gatewayId": "",
        "ownerId": owner,
        "arn": f"arn:aws:ec2:{region}:{owner}:route-table/{t.route_table_id}",
        "routes": [{_camel(f): dict(r).get(f, "") for f in _ROUTE_FIELDS} for r in t.routes],
        "associations": associations,
        "tags": {},
        "region": region,
    }


def _ipv4_per_interface(instance_type: str) -> int | None:
    """NetworkInfo.Ipv4AddressesPerInterface of a GPU type, from the reference data's records."""
    if instance_type in _CPU_IPV4:
        return _CPU_IPV4[instance_type]
    from devkit import reference_data

    records = json.loads(reference_data.path("aws", "describe-instance-types.json").read_text())
    for r in records["InstanceTypes"]:
        if r["InstanceType"] == instance_type:
            return r["NetworkInfo"]["Ipv4AddressesPerInterface"]
    return None


def ecr_error(operation: str, code: str, message: str) -> str:
    """The provider's text for a failed ECR call (the SDK's "operation error" form, as api_error)."""
    return (
        f"reading ECR Images: operation error ECR: {operation}, https response error StatusCode: 400, "
        f"RequestID: 00000000-0000-0000-0000-000000000000, {code}: {message}"
    )


def _ecr_images(account: Account, token: str, args: dict, region: str):
    registry_id = args.get("registryId") or account.account_id
    name = args["repositoryName"]
    repository = f"{registry_id}.dkr.ecr.{region}.amazonaws.com/{name}"
    single = token == "aws:ecr/getImage:getImage"
    operation = "DescribeImages" if single else "ListImages"
    if f"ecr:{operation}" in account.denied:
        return {}, [("", denied_message(account, f"ecr:{operation}"))]
    if repository not in account.images:
        return {}, [
            (
                "",
                ecr_error(
                    operation,
                    "RepositoryNotFoundException",
                    f"The repository with name '{name}' does not exist in the registry with id '{registry_id}'",
                ),
            )
        ]
    tags = account.images[repository]
    if not single:
        return {
            "id": name,
            "registryId": registry_id,
            "repositoryName": name,
            "region": region,
            "imageIds": [{"imageDigest": image_digest(repository, t), "imageTag": t} for t in tags],
        }
    tag = args.get("imageTag")
    if tag not in tags:
        return {}, [
            (
                "",
                ecr_error(
                    operation,
                    "ImageNotFoundException",
                    f"The image with imageId {{imageDigest:'null', imageTag:'{tag}'}} does not exist within "
                    f"the repository with name '{name}' in the registry with id '{registry_id}'",
                ),
            )
        ]
    digest = image_digest(repository, tag)
    return {
        "id": digest,
        "imageDigest": digest,
        "imageTag": tag,
        "imageTags": [tag],
        "imageUri": f"{repository}@{digest}",
        "registryId": registry_id,
        "repositoryName": name,
        "region": region,
        "imagePushedAt": 1790000000,
        "imageSizeInBytes": 9_000_000_000,
    }


ANONYMOUS_TOKEN = "offline-anonymous-pull"


def registry_answer(account: Account, method: str, url: str, headers: dict[str, str]) -> Response:
    """What a registry of `account.images` answers to one request of stack/registry.py."""
    parsed = urllib.parse.urlsplit(url)
    host, path = parsed.netloc, parsed.path
    if path == "/token":
        query = urllib.parse.parse_qs(parsed.query)
        assert query.get("service") == [host], query
        return Response(
            200, {"content-type": "application/json"}, json.dumps({"token": ANONYMOUS_TOKEN}).encode()
        )
    found = re.fullmatch(r"/v2/(.+)/(manifests|tags)/(.+)", path)
    if found is None:
        raise ValueError(f"the offline registry does not model {method} {url}")
    name, kind, rest = found.groups()
    if headers.get("Authorization") != f"Bearer {ANONYMOUS_TOKEN}":
        challenge = f'Bearer realm="https://{host}/token",service="{host}",scope="repository:{name}:pull"'
        return Response(401, {"www-authenticate": challenge}, b'{"errors":[{"code":"UNAUTHORIZED"}]}')
    repository = f"{host}/{name}"
    if repository not in account.images:
        return Response(404, {}, _registry_error("NAME_UNKNOWN", "repository name not known to registry"))
    tags = account.images[repository]
    if kind == "tags":
        body = json.dumps({"name": name, "tags": list(tags)}).encode()
        return Response(200, {"content-type": "application/json"}, body)
    if rest not in tags:
        return Response(404, {}, _registry_error("MANIFEST_UNKNOWN", "manifest unknown"))
    return Response(
        200,
        {
            "content-type": "application/vnd.oci.image.index.v1+json",
            "docker-content-digest": image_digest(repository, rest),
        },
        b"" if method == "HEAD" else b"{}",
    )


def _registry_error(code: str, message: str) -> bytes:
    return json.dumps({"errors": [{"code": code, "message": message}]}).encode()


def answer(account: Account, token: str, args: dict, provider_region: str | None = None):
    """The invoke's result dict, or (result, failures) as the provider fails it; None when the
    token is not one the account answers. `provider_region` is the region of the provider the
    invoke went through (an explicit one's, or the stack's for the default provider)."""

    def refuse(action):
        return {}, [("", denied_message(account, action))]

    region = args.get("region") or provider_region or "us-west-2"
    provider_region = provider_region or region
    ec2_operation = {
        "aws:index/getAvailabilityZones:getAvailabilityZones": "DescribeAvailabilityZones",
        "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings": "DescribeInstanceTypeOfferings",
        "aws:ec2/getInstanceType:getInstanceType": "DescribeInstanceTypes",
    }.get(token)
    if ec2_operation and account.failure:
        return {}, [("", api_error(ec2_operation, *account.failure))]
    if ec2_operation and region in account.regions_not_enabled:
        return {}, [
            (
                "",
                api_error(
                    ec2_operation,
                    401,
                    "OptInRequired",
                    "You are not subscribed "
                    "to this service. Please go to http://aws.amazon.com to subscribe.",
                ),
            )
        ]
    if token == "aws:index/getAvailabilityZones:getAvailabilityZones":
        if "ec2:DescribeAvailabilityZones" in account.denied:
            return refuse("ec2:DescribeAvailabilityZones")
        if region not in account.zones:  # as the provider answers an invalid region
            return {}, [("region", f"invalid AWS Region: {region}")]
        filters = [{"name": "state", "values": [args["state"]]}] if args.get("state") else []
        filters += args.get("filters") or []
        zones = [
            z
            for z in account.zones[region]
            if (args.get("allAvailabilityZones") or z.opt_in_status != "not-opted-in")
            and all(_zone_filter(z, f["name"], f["values"]) for f in filters)
        ]
        zones = sorted(zones, key=lambda z: z.name)
        zones = [
            z
            for z in zones
            if z.name not in (args.get("excludeNames") or [])
            and z.zone_id not in (args.get("excludeZoneIds") or [])
        ]
        return {
            "names": [z.name for z in zones],
            "zoneIds": [z.zone_id for z in zones],
            "groupNames": sorted({z.group_name for z in zones}),
            "id": region,
            "region": region,
        }
    if token == "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings":
        if "ec2:DescribeInstanceTypeOfferings" in account.denied:
            return refuse("ec2:DescribeInstanceTypeOfferings")
        location_type = args.get("locationType") or "region"
        rows = []
        for z in account.zones.get(region, []):
            for t in sorted(account.offerings.get(z.zone_id, ())):
                location = {"availability-zone": z.name, "availability-zone-id": z.zone_id, "region": region}[
                    location_type
                ]
                rows.append((t, location))
        rows = sorted(set(rows))
        for f in args.get("filters") or []:
            col = {"instance-type": 0, "location": 1}[f["name"]]
            rows = [r for r in rows if any(fnmatch.fnmatchcase(r[col], v) for v in f["values"])]
        return {
            "instanceTypes": [r[0] for r in rows],
            "locations": [r[1] for r in rows],
            "locationTypes": [location_type] * len(rows),
            "id": region,
            "region": region,
        }
    if token == "aws:ec2/getInstanceType:getInstanceType":
        if "ec2:DescribeInstanceTypes" in account.denied:
            return refuse("ec2:DescribeInstanceTypes")
        name = args["instanceType"]
        gpu = lookup(name)
        vcpus = gpu.vcpus if gpu else _CPU_VCPUS.get(name)
        if vcpus is None:  # DescribeInstanceTypes refuses an unknown type name
            return {}, [
                (
                    "",
                    api_error(
                        "DescribeInstanceTypes",
                        400,
                        "InvalidInstanceType",
                        f"The following supplied instance types do not exist: [{name}]",
                    ),
                )
            ]
        return {
            "instanceType": name,
            "defaultVcpus": vcpus,
            "maximumIpv4AddressesPerInterface": _ipv4_per_interface(name),
            "id": name,
            "region": region,
        }
    if token == "aws:servicequotas/getServiceQuota:getServiceQuota":
        for action in ("servicequotas:GetAWSDefaultServiceQuota", "servicequotas:GetServiceQuota"):
            if action in account.denied:
                return refuse(action)
        code = args["quotaCode"]
        value = account.quotas.get(code, account.quota_defaults[code])
        return {
            "quotaCode": code,
            "serviceCode": args["serviceCode"],
            "value": value,
            "defaultValue": account.quota_defaults[code],
            "adjustable": True,
            "globalQuota": False,
            "id": f"arn:aws:servicequotas:{region}:{account.account_id}:ec2/{code}",
            "region": region,
        }
    if token == "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation":
        if account.failure:
            return {}, [("", api_error("DescribeCapacityReservations", *account.failure))]
        if "ec2:DescribeCapacityReservations" in account.denied:
            return refuse("ec2:DescribeCapacityReservations")
        return _reservation(account, region, args["id"])
    network = {
        "aws:ec2/getVpc:getVpc": ("ec2:DescribeVpcs", "DescribeVpcs", _vpc),
        "aws:ec2/getSubnet:getSubnet": ("ec2:DescribeSubnets", "DescribeSubnets", _subnet),
        "aws:ec2/getRouteTable:getRouteTable": (
            "ec2:DescribeRouteTables",
            "DescribeRouteTables",
            _route_table,
        ),
    }.get(token)
    if network:
        action, operation, read = network
        if account.failure:
            return {}, [("", api_error(operation, *account.failure))]
        if action in account.denied:
            return refuse(action)
        return read(account, region, args)
    if token == "aws:pricing/getProduct:getProduct":
        return _product(account, provider_region, args)
    if token in ("aws:ecr/getImage:getImage", "aws:ecr/getImages:getImages"):
        return _ecr_images(account, token, args, region)
    if token == "aws:index/getCallerIdentity:getCallerIdentity":
        return {
            "accountId": account.account_id,
            "arn": account.caller_arn,
            "userId": "AROAEXAMPLEROLEID:ci-session",
            "id": account.account_id,
        }
    if token in _EKS_ACTIONS:
        if _EKS_ACTIONS[token] in account.denied:
            return refuse(_EKS_ACTIONS[token])
        return _eks(account, token, args, region)
    if token == "aws:iam/getSessionContext:getSessionContext":
        arn = args["arn"]
        resource = arn.split(":", 5)[5]
        if not (arn.split(":")[2] == "sts" and resource.startswith("assumed-role/")):
            return {
                "arn": arn,
                "issuerArn": arn,
                "issuerId": "",
                "issuerName": "",
                "sessionName": "",
                "id": arn,
            }
        if "iam:GetRole" in account.denied:
            return refuse("iam:GetRole")
        role, session = resource.split("/")[-2:]
        partition, acct = arn.split(":")[1], arn.split(":")[4]
        path = account.role_paths[role]
        return {
            "arn": arn,
            "issuerArn": f"arn:{partition}:iam::{acct}:role{path}{role}",
            "issuerId": "AROAEXAMPLEROLEID",
            "issuerName": role,
            "sessionName": session,
            "id": arn,
        }
    return None


_EKS_ACTIONS = {
    "aws:eks/getCluster:getCluster": "eks:DescribeCluster",
    "aws:eks/getAddon:getAddon": "eks:DescribeAddon",
    "aws:eks/getAccessEntry:getAccessEntry": "eks:DescribeAccessEntry",
}


def _eks_not_found(what: str, ident: str, message: str) -> tuple[dict, list]:
    return {}, [
        (
            "",
            f"reading {what} ({ident}): couldn't find resource: operation error EKS, https response "
            "error StatusCode: 404, RequestID: 00000000-0000-0000-0000-000000000000, "
            f"ResourceNotFoundException: {message}",
        )
    ]


def _eks(account: Account, token: str, args: dict, region: str):
    """An EKS data source's answer for the account's clusters (clusters are regional)."""
    name = args.get("name") or args.get("clusterName")
    c = account.eks_clusters.get(name)
    if c is None or c.region != region:
        return _eks_not_found("EKS Cluster", name, f"No cluster found for name: {name}.")
    arn = f"arn:aws:eks:{region}:{account.account_id}:cluster/{name}"
    suffix = hashlib.sha256(arn.encode()).hexdigest()[:32].upper()
    if token == "aws:eks/getCluster:getCluster":
        return {
            "id": name,
            "name": name,
            "arn": arn,
            "region": region,
            "status": c.status,
            "version": c.version,
            "platformVersion": "eks.9",
            "endpoint": f"https://{suffix}.gr7.{region}.eks.amazonaws.com",
            "certificateAuthorities": [{"data": base64.b64encode(f"offline CA of {name}".encode()).decode()}],
            "identities": [{"oidcs": [{"issuer": f"https://oidc.eks.{region}.amazonaws.com/id/{suffix}"}]}],
            "vpcConfig": {
                "clusterSecurityGroupId": "sg-0e" + suffix[:15].lower(),
                "vpcId": c.vpc_id,
                "subnetIds": list(c.subnet_ids),
                "securityGroupIds": [],
                "endpointPrivateAccess": True,
                "endpointPublicAccess": True,
                "publicAccessCidrs": ["0.0.0.0/0"],
                "controlPlaneEgressMode": "AWS_MANAGED",
            },
            "accessConfigs": [
                {"authenticationMode": c.authentication_mode, "bootstrapClusterCreatorAdminPermissions": True}
            ],
            "roleArn": f"arn:aws:iam::{account.account_id}:role/{name}-cluster",
            "createdAt": "2026-06-01T00:00:00Z",
            "tags": {},
        }
    if token == "aws:eks/getAddon:getAddon":
        addon = args["addonName"]
        if addon not in c.addons:
            return _eks_not_found(
                "EKS Add-On", f"{name}:{addon}", f"No addon: {addon} found in cluster: {name}"
            )
        return {
            "id": f"{name}:{addon}",
            "addonName": addon,
            "clusterName": name,
            "addonVersion": c.addons[addon],
            "arn": f"arn:aws:eks:{region}:{account.account_id}:addon/{name}/{addon}/{suffix[:8].lower()}",
            "configurationValues": "",
            "serviceAccountRoleArn": c.addon_roles.get(addon, ""),
            "podIdentityAssociations": [],
            "createdAt": "2026-06-01T00:00:00Z",
            "modifiedAt": "2026-06-01T00:00:00Z",
            "region": region,
            "tags": {},
        }
    principal = args["principalArn"]
    if principal not in c.access_entries:
        return _eks_not_found(
            "EKS Access Entry",
            f"{name}:{principal}",
            "The specified principalArn could not be found. You can view your available access entries "
            "with 'list-access-entries'.",
        )
    return {
        "id": f"{name}:{principal}",
        "clusterName": name,
        "principalArn": principal,
        "type": c.access_entries[principal],
        "accessEntryArn": f"arn:aws:eks:{region}:{account.account_id}:access-entry/{name}/role/"
        f"{account.account_id}/{principal.rsplit('/', 1)[-1]}/{suffix[:8].lower()}",
        "kubernetesGroups": [],
        "userName": principal,
        "createdAt": "2026-06-01T00:00:00Z",
        "modifiedAt": "2026-06-01T00:00:00Z",
        "region": region,
        "tags": {},
        "tagsAll": {},
    }
