"""What the AWS account answers before anything is created: its availability zones, the instance
types each zone offers, an instance type's vCPUs, its on-demand vCPU quotas and who is deploying.
One pulumi-aws invoke each, answering the model's Account protocol (model/checks/preflight.py, whose
Zone and PermissionDenied it returns and raises); a refused call comes back as PermissionDenied
naming the IAM action it needed, and an account that cannot be asked at all as AccountUnreachable.
"""

from __future__ import annotations

import json
import re
from typing import Callable, Sequence, TypeVar

import pulumi
import pulumi_aws as aws

from model.checks.existing_cluster import AccessEntry, EksAddon, EksCluster
from model.checks.preflight import PermissionDenied, Zone
from model.checks.vpc_subnets import EGRESS_TARGETS, RouteTable, Subnet, Vpc
from model.facts import cost
from model.facts.capacity import Reservation
from model.facts.cost import PriceListUnanswered
from model.facts.image_references import ecr_registry, parts, registry_host
from stack.registry import Registry

T = TypeVar("T")

# The IAM "access denied" message names the action: "... is not authorized to perform: <action>"
# (https://docs.aws.amazon.com/IAM/latest/UserGuide/troubleshoot_access-denied.html); EC2 answers
# UnauthorizedOperation, most other services AccessDenied(Exception).
_DENIED = re.compile(r"AccessDenied|UnauthorizedOperation|not authorized to perform")
_ACTION = re.compile(r"not authorized to perform: ([a-z0-9-]+:[A-Za-z0-9]+)")


# Why the account could not be asked, by the error code in the provider's message (EC2 API error
# codes: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html). An invalid
# region name is refused by the provider itself ("invalid AWS Region"); OptInRequired is EC2's
# answer in an opt-in region the account has not enabled. Anything else is not the region's fault.
_REGION_UNUSABLE = re.compile(r"invalid AWS Region|OptInRequired")
_CAUSES = (
    (
        re.compile(
            r"AuthFailure|ExpiredToken|InvalidClientTokenId|RequestExpired|"
            r"UnrecognizedClient|no valid credential|failed to refresh cached credentials|"
            r"NoCredentialProviders"
        ),
        "the AWS credentials do not work ({detail}): check them with `aws sts get-caller-identity` "
        "(and that the region is enabled for the account)",
    ),
    (
        re.compile(r"RequestLimitExceeded|Throttl"),
        "AWS throttled the request ({detail}): run it again in a minute",
    ),
)


class AccountUnreachable(pulumi.RunError):
    """The account could not be asked at all; Pulumi prints the one line without a trace."""


def _unreachable(what: str, error: Exception) -> AccountUnreachable:
    detail = " ".join(str(error).split())
    for pattern, why in _CAUSES:
        found = pattern.search(detail)
        if found:
            return AccountUnreachable(f"could not ask AWS for {what}: " + why.format(detail=found.group(0)))
    return AccountUnreachable(
        f"could not ask AWS for {what}: {detail} (check the network and `aws sts get-caller-identity`)"
    )


def _ask(action: str, call: Callable[[], T]) -> T:
    try:
        return call()
    except Exception as e:  # noqa: BLE001 - the provider's error is a plain Exception with AWS's text
        if _DENIED.search(str(e)):
            named = _ACTION.search(str(e))
            raise PermissionDenied(named.group(1) if named else action) from e
        raise


# EC2's answer for a reservation id it does not know (EC2 API error codes), and the provider's
# own wording when DescribeCapacityReservations comes back empty (terraform-provider-aws
# internal/tfresource: "couldn't find resource", "empty result").
_NO_RESERVATION = re.compile(
    r"InvalidCapacityReservationId\.NotFound|InvalidCapacityReservationId\.Malformed|"
    r"couldn't find resource|empty result"
)

# What the data sources say when nothing matched (terraform-provider-aws internal/service/ec2:
# tfresource.SingularDataSourceFindError's "no matching EC2 VPC/Subnet found" for an id EC2 does
# not know, vpc_route_table_data_source.go's "query returned no results").
# "no matching EC2 VPC found" and the like (tfresource.SingularDataSourceFindError, whose newer
# form leaves out "EC2 ": "no matching Route Table found"), or the older route table data source's
# "query returned no results".
_NOTHING_FOUND = re.compile(r"no matching (EC2 )?(VPC|Subnet|Route Table) found|query returned no results")


# An ECR image or repository that is not there: DescribeImages' and ListImages' errors
# (https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_DescribeImages.html#API_DescribeImages_Errors),
# and the provider's own answer to an empty result (hashicorp/terraform-provider-aws
# internal/service/ecr/image_data_source.go: "Your query returned no results").
_NO_ECR_IMAGE = re.compile(r"ImageNotFoundException|RepositoryNotFoundException|returned no results")


# EKS's answer for a cluster, add-on or access entry it does not know (EKS API Reference, errors of
# DescribeCluster, DescribeAddon, DescribeAccessEntry: ResourceNotFoundException), which the
# provider reports as a resource it couldn't find (terraform-provider-aws internal/tfresource).
_NO_EKS_RESOURCE = re.compile(r"ResourceNotFoundException|couldn't find resource|empty result")


def _unless_missing(missing: re.Pattern, action: str, what: str, call: Callable[[], T]) -> T | None:
    """The answer, None where the provider's error says `missing`; a refusal as PermissionDenied,
    any other failure as the account unreachable."""
    try:
        return _ask(action, call)
    except PermissionDenied:
        raise
    except Exception as e:  # noqa: BLE001 - the provider's error is a plain Exception
        if missing.search(str(e)):
            return None
        raise _unreachable(what, e) from e


def _or_none(action: str, what: str, call: Callable[[], T]) -> T | None:
    """The answer, None where EKS knows no such thing."""
    return _unless_missing(_NO_EKS_RESOURCE, action, what, call)


class Account:
    """The deploying account, asked through pulumi-aws invokes (model.checks.preflight.Account,
    model.checks.existing_cluster.ClusterAccount), and the image registries
    (model.checks.image_digests.Registry): ECR through pulumi-aws's invokes, any other registry
    through its own API (stack/registry.py)."""

    def __init__(self) -> None:
        self._price_list: aws.Provider | None = None
        self._registries = Registry()

    def zones(self, region: str) -> list[Zone] | None:
        """The region's standard availability zones in every state, each marked with whether it
        is `available` now, or None for a region the account cannot use.

        Without a filter DescribeAvailabilityZones also returns the Local and Wavelength Zones the
        account opted in to, and their names sort first (us-west-2-lax-1a < us-west-2a); EKS takes
        neither. zone-type and state are DescribeAvailabilityZones filters
        (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeAvailabilityZones.html).
        Every state, because the cluster's zones are chosen from this list: a zone impaired for an
        hour must not move the cluster's subnets on the next `up`.
        """
        standard = [{"name": "zone-type", "values": ["availability-zone"]}]
        try:
            found = _ask(
                "ec2:DescribeAvailabilityZones",
                lambda: aws.get_availability_zones(region=region, filters=standard),
            )
            available = _ask(
                "ec2:DescribeAvailabilityZones",
                lambda: aws.get_availability_zones(state="available", region=region, filters=standard),
            )
        except PermissionDenied:
            raise
        except Exception as e:  # noqa: BLE001 - the provider's error is a plain Exception
            if _REGION_UNUSABLE.search(str(e)):
                return None
            raise _unreachable(f"the zones of {region}", e) from e
        return [Zone(n, i, n in available.names) for n, i in zip(found.names, found.zone_ids, strict=True)]

    def offered(
        self, region: str, instance_types: Sequence[str], zone_names: Sequence[str]
    ) -> dict[str, set[str]]:
        """For each instance type, the zones (names) among zone_names that offer it."""
        found = _ask(
            "ec2:DescribeInstanceTypeOfferings",
            lambda: aws.ec2.get_instance_type_offerings(
                location_type="availability-zone",
                region=region,
                filters=[
                    {"name": "instance-type", "values": sorted(set(instance_types))},
                    {"name": "location", "values": sorted(set(zone_names))},
                ],
            ),
        )
        out: dict[str, set[str]] = {t: set() for t in instance_types}
        for t, location in zip(found.instance_types, found.locations, strict=True):
            out.setdefault(t, set()).add(location)
        return out

    def vcpus(self, region: str, instance_type: str) -> int:
        """The instance type's default vCPU count, as the vCPU quotas count it
        (https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html)."""
        return _ask(
            "ec2:DescribeInstanceTypes",
            lambda: aws.ec2.get_instance_type(instance_type=instance_type, region=region),
        ).default_vcpus

    def ipv4_per_interface(self, region: str, instance_type: str) -> int:
        """How many IPv4 addresses one network interface of the type holds
        (DescribeInstanceTypes NetworkInfo.Ipv4AddressesPerInterface)."""
        return _ask(
            "ec2:DescribeInstanceTypes",
            lambda: aws.ec2.get_instance_type(instance_type=instance_type, region=region),
        ).maximum_ipv4_addresses_per_interface

    def vpc(self, region: str, vpc_id: str) -> Vpc | None:
        """The VPC as DescribeVpcs describes it, or None for an id EC2 does not know in the region
        (the data source's "no matching EC2 VPC found")."""
        found = self._find(
            "ec2:DescribeVpcs", f"VPC {vpc_id}", lambda: aws.ec2.get_vpc(id=vpc_id, region=region)
        )
        return found and Vpc(
            found.id,
            found.arn,
            found.owner_id,
            found.cidr_block,
            bool(found.enable_dns_support and found.enable_dns_hostnames),
        )

    def subnet(self, region: str, subnet_id: str) -> Subnet | None:
        """The subnet as DescribeSubnets describes it, or None for an id EC2 does not know there."""
        found = self._find(
            "ec2:DescribeSubnets",
            f"subnet {subnet_id}",
            lambda: aws.ec2.get_subnet(id=subnet_id, region=region),
        )
        return found and Subnet(
            found.id,
            found.vpc_id,
            found.availability_zone,
            found.availability_zone_id,
            int(found.available_ip_address_count),
            tuple(sorted((found.tags or {}).items())),
        )

    def route_table(self, region: str, vpc_id: str, subnet_id: str) -> RouteTable | None:
        """The table explicitly associated with the subnet (DescribeRouteTables filter
        association.subnet-id); where none is, the VPC's main table (association.main), which the
        subnet then uses (Amazon VPC user guide, "Subnet route tables":
        https://docs.aws.amazon.com/vpc/latest/userguide/subnet-route-tables.html); None where the
        deployer is shown neither."""
        own = self._find(
            "ec2:DescribeRouteTables",
            f"the route table of {subnet_id}",
            lambda: aws.ec2.get_route_table(subnet_id=subnet_id, region=region),
        )
        table = own or self._find(
            "ec2:DescribeRouteTables",
            f"the main route table of {vpc_id}",
            lambda: aws.ec2.get_route_table(
                vpc_id=vpc_id, region=region, filters=[{"name": "association.main", "values": ["true"]}]
            ),
        )
        if table is None:
            return None
        fields = ("cidr_block", "gateway_id", *EGRESS_TARGETS)
        routes = tuple({f: getattr(r, f) for f in fields if getattr(r, f, None)} for r in table.routes)
        return RouteTable(table.route_table_id, routes, own is None)

    @staticmethod
    def _find(action: str, what: str, call: Callable[[], T]) -> T | None:
        """The data source's answer, or None where it found nothing."""
        return _unless_missing(_NOTHING_FOUND, action, what, call)

    def ec2_quota(self, region: str, quota_code: str) -> float:
        """The applied value of an EC2 quota (the AWS default where none was requested)."""
        return _ask(
            "servicequotas:GetServiceQuota",
            lambda: aws.servicequotas.get_service_quota(
                service_code="ec2", quota_code=quota_code, region=region
            ),
        ).value

    def deployer_role_arn(self) -> str | None:
        """The IAM role behind the caller's session (arn:aws:iam::<acct>:role/<path><name>), or
        None when the caller is not an assumed role (an IAM user)."""
        caller = aws.get_caller_identity().arn
        if ":assumed-role/" not in caller:
            return None
        return _ask("iam:GetRole", lambda: aws.iam.get_session_context(arn=caller)).issuer_arn

    def account_id(self) -> str:
        return aws.get_caller_identity().account_id

    def deployer_principal_arn(self) -> str:
        """The principal an access entry names for the deployer: an assumed role's role (with its
        path), else the caller's own ARN."""
        return self.deployer_role_arn() or aws.get_caller_identity().arn

    def eks_cluster(self, region: str, name: str) -> EksCluster | None:
        """The cluster as aws.eks.get_cluster reads it: the provider's DescribeCluster, each field
        flattened under its own name (terraform-provider-aws internal/service/eks/
        cluster_data_source.go, dataSourceClusterRead; EKS API Reference, Cluster:
        https://docs.aws.amazon.com/eks/latest/APIReference/API_Cluster.html)."""
        found = _or_none(
            "eks:DescribeCluster",
            f"the EKS cluster {name}",
            lambda: aws.eks.get_cluster(name=name, region=region),
        )
        if found is None:
            return None
        vpc = found.vpc_config
        oidc = found.identities[0].oidcs[0].issuer if found.identities and found.identities[0].oidcs else ""
        access = found.access_configs[0].authentication_mode if found.access_configs else "CONFIG_MAP"
        return EksCluster(
            name=found.name,
            arn=found.arn,
            status=found.status,
            version=found.version,
            endpoint=found.endpoint,
            certificate_authority=found.certificate_authorities[0].data,
            oidc_issuer=oidc,
            security_group_id=vpc.cluster_security_group_id,
            vpc_id=vpc.vpc_id,
            subnet_ids=tuple(sorted(vpc.subnet_ids)),
            authentication_mode=access,
        )

    def eks_addon(self, region: str, cluster: str, addon: str) -> EksAddon | None:
        """The add-on as aws.eks.get_addon reads it (DescribeAddon:
        https://docs.aws.amazon.com/eks/latest/APIReference/API_DescribeAddon.html;
        terraform-provider-aws internal/service/eks/addon_data_source.go)."""
        found = _or_none(
            "eks:DescribeAddon",
            f"the {addon} add-on of {cluster}",
            lambda: aws.eks.get_addon(addon_name=addon, cluster_name=cluster, region=region),
        )
        if found is None:
            return None
        roles = [a.role_arn for a in found.pod_identity_associations or []]
        return EksAddon(found.addon_version, found.service_account_role_arn or (roles[0] if roles else ""))

    def access_entry(self, region: str, cluster: str, principal_arn: str) -> AccessEntry | None:
        """The principal's access entry as aws.eks.get_access_entry reads it (DescribeAccessEntry:
        https://docs.aws.amazon.com/eks/latest/APIReference/API_DescribeAccessEntry.html;
        terraform-provider-aws internal/service/eks/access_entry_datasource.go)."""
        found = _or_none(
            "eks:DescribeAccessEntry",
            f"the access entries of {cluster}",
            lambda: aws.eks.get_access_entry(
                cluster_name=cluster, principal_arn=principal_arn, region=region
            ),
        )
        return None if found is None else AccessEntry(found.principal_arn, found.type)

    def capacity_reservation(self, region: str, reservation_id: str) -> Reservation | None:
        """The reservation as EC2's DescribeCapacityReservations describes it, in any state.

        pulumi-aws 7.51.1 has no plain Capacity Reservation data source; getCapacityBlockReservation
        is the provider's DescribeCapacityReservations by id with no filter of its own
        (hashicorp/terraform-provider-aws internal/service/ec2/ec2_capacity_block_reservation_data_source.go
        at commit 23b9e58d39e4bb6038d65ad3b165bad97a6ade42: CapacityReservationIds = [id], then
        findCapacityReservation), so it answers for an On-Demand Capacity Reservation as for a
        block, with EC2's ReservationType, State and counts. (Its documentation says it returns
        only blocks; the code read filters nothing. Were a later provider to filter, an ODCR
        would read as unknown and be refused loudly, never launched into blindly.)"""
        try:
            found = _ask(
                "ec2:DescribeCapacityReservations",
                lambda: aws.ec2.get_capacity_block_reservation(id=reservation_id, region=region),
            )
        except PermissionDenied:
            raise
        except Exception as e:  # noqa: BLE001 - the provider's error is a plain Exception
            if _NO_RESERVATION.search(str(e)):
                return None
            raise _unreachable(f"capacity reservation {reservation_id}", e) from e
        return Reservation(
            reservation_id=found.id,
            instance_type=found.instance_type,
            availability_zone=found.availability_zone,
            state=found.state,
            reservation_type=found.reservation_type,
            total_instances=int(found.instance_count),
            available_instances=int(found.available_instance_count),
            tenancy=found.tenancy,
            instance_platform=found.instance_platform,
            start_date=found.start_date or "",
            end_date=found.end_date or "",
            placement_group_arn=found.placement_group_arn or "",
            owner_id=found.owner_id or "",
        )

    def on_demand_price(self, region: str, instance_type: str) -> float:
        """The on-demand USD price per hour from the AWS Price List's GetProducts, through a
        provider in its endpoint region (model/facts/cost.py PRICE_LIST_REGION): the default provider's
        region is the stack's, where the Price List has no endpoint.

        The answer is the product as a JSON string (Price List Query API reference, GetProducts:
        "PriceList ... The list of products that match your filters", each a JSON document;
        https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html)
        whose terms.OnDemand.<offer term>.priceDimensions.<rate code>.pricePerUnit.USD is the
        hourly rate (AWS Billing User Guide, "Reading the price list":
        https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/reading-an-offer.html)."""
        try:
            found = _ask(
                "pricing:GetProducts",
                lambda: aws.pricing.get_product(
                    service_code="AmazonEC2",
                    filters=cost.product_filters(region, instance_type),
                    opts=pulumi.InvokeOptions(provider=self._price_list_provider()),
                ),
            )
        except PermissionDenied:
            raise
        except Exception as e:  # noqa: BLE001 - the provider's error is a plain Exception
            raise PriceListUnanswered(" ".join(str(e).split())[:300]) from e
        return on_demand_usd(found.result)

    def image_digest(self, reference: str) -> str | None:
        """The digest the registry holds for the reference's tag, None where it holds none.

        An ECR image through ECR's API (aws:ecr/getImage is DescribeImages by registry, repository
        and tag: hashicorp/terraform-provider-aws internal/service/ecr/image_data_source.go; its
        imageDigest is the manifest's, ImageDetail.imageDigest,
        https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_ImageDetail.html), with the
        deployer's credentials. Any other registry through its own API, anonymously
        (stack/registry.py)."""
        name, tag, _ = parts(reference)
        ecr = ecr_registry(registry_host(reference))
        if ecr is None:  # a RegistryError is the model's LookupFailed: the image stays by tag
            return self._registries.image_digest(reference)
        account, region = ecr
        try:
            found = _ask(
                "ecr:DescribeImages",
                lambda: aws.ecr.get_image(
                    registry_id=account,
                    repository_name=name.split("/", 1)[1],
                    image_tag=tag or "latest",
                    region=region,
                ),
            )
        except PermissionDenied:
            raise
        except Exception as e:  # noqa: BLE001 - the provider's error is a plain Exception
            if _NO_ECR_IMAGE.search(str(e)):
                return None
            raise _unreachable(f"the digest of {reference}", e) from e
        return found.image_digest

    def image_tags(self, reference: str) -> list[str] | None:
        """The tags the repository holds: on ECR through aws:ecr/getImages (ListImages:
        internal/service/ecr/images_data_source.go; ImageIdentifier.imageTag,
        https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_ListImages.html), None
        where the deployer may not list them; elsewhere the registry's tags list
        (stack/registry.py)."""
        name, _, _ = parts(reference)
        ecr = ecr_registry(registry_host(reference))
        if ecr is None:
            return self._registries.image_tags(reference)
        account, region = ecr
        try:
            found = _ask(
                "ecr:ListImages",
                lambda: aws.ecr.get_images(
                    registry_id=account, repository_name=name.split("/", 1)[1], region=region
                ),
            )
        except PermissionDenied:
            return None
        except Exception as e:  # noqa: BLE001 - the provider's error is a plain Exception
            if _NO_ECR_IMAGE.search(str(e)):
                return []
            raise _unreachable(f"the tags of {name}", e) from e
        return sorted({i.image_tag for i in found.image_ids if i.image_tag})

    def _price_list_provider(self) -> aws.Provider:
        # An explicit provider reads no `aws:` stack config, so the profile the default provider
        # was given is passed on (credentials from the environment reach both).
        if self._price_list is None:
            self._price_list = aws.Provider(
                "price-list", region=cost.PRICE_LIST_REGION, profile=pulumi.Config("aws").get("profile")
            )
        return self._price_list


def on_demand_usd(product_json: str) -> float:
    """The one on-demand hourly USD rate of a Price List product document."""
    try:
        terms = json.loads(product_json)["terms"]["OnDemand"]
        rates = [
            float(d["pricePerUnit"]["USD"])
            for term in terms.values()
            for d in term["priceDimensions"].values()
            if d.get("unit") == "Hrs"
        ]
    except (KeyError, TypeError, ValueError) as e:
        raise PriceListUnanswered(f"the product answer has no on-demand hourly USD price ({e!r})") from e
    if len(set(rates)) != 1:
        raise PriceListUnanswered(f"the product answer has {len(set(rates))} on-demand hourly rates, not one")
    return rates[0]
