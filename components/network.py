"""The VPC: private subnets for nodes, public subnets for load balancers, one NAT gateway."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_aws as aws


@dataclass(frozen=True)
class NetworkArgs:
    """Every field is required (no defaults)."""
    # The VPC's block (vpcCidr), carved into eight equal subnets (subnet_cidrs).
    cidr: str
    # One private and one public subnet each. The first (availabilityZone) gets the NAT gateway;
    # every GPU pool's AZ is among them.
    zones: Sequence[str]
    # Tags the subnets for the load balancer controller's discovery.
    cluster_name: str
    # Names the S3 gateway endpoint's service.
    region: str


def subnet_cidrs(vpc_cidr: str, zones: int) -> tuple[list[str], list[str]]:
    """Carve the VPC into eight equal blocks: private subnets first (nodes and pod IPs from the
    VPC CNI need the room), public subnets from the fifth block on."""
    blocks = list(ipaddress.ip_network(vpc_cidr).subnets(prefixlen_diff=3))
    return ([str(b) for b in blocks[:zones]], [str(b) for b in blocks[4:4 + zones]])


class Network(pulumi.ComponentResource):
    vpc_id: pulumi.Output[str]                     # the VPC everything runs in
    private_subnet_ids: list[pulumi.Output[str]]   # one per zone, in `zones` order: the nodes'
    public_subnet_ids: list[pulumi.Output[str]]    # one per zone, in `zones` order: load balancers'
    # The private subnet of each zone: a GPU pool's node group has exactly its AZ's.
    private_subnet_by_zone: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: NetworkArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:network:Network", name, None, opts)
        self._name, self._args = name, args
        vpc = self._vpc()
        private_cidrs, public_cidrs = subnet_cidrs(args.cidr, len(args.zones))
        igw, public = self._public_subnets(vpc, public_cidrs)
        private_rt = self._private_route_table(vpc, igw, public[0])
        private = self._private_subnets(vpc, private_rt, private_cidrs)
        self._s3_endpoint(vpc, private_rt)
        self.vpc_id = vpc.id
        self.private_subnet_ids = [s.id for s in private]
        self.public_subnet_ids = [s.id for s in public]
        self.private_subnet_by_zone = {zone: s.id for zone, s in zip(args.zones, private, strict=True)}
        self.register_outputs({"vpc_id": self.vpc_id, "private_subnet_ids": self.private_subnet_ids,
                               "public_subnet_ids": self.public_subnet_ids,
                               "private_subnet_by_zone": self.private_subnet_by_zone})

    def _cluster_tag(self) -> dict[str, str]:
        # The load balancer controller finds subnets by these tags
        # (https://kubernetes-sigs.github.io/aws-load-balancer-controller/v2.17/deploy/subnet_discovery/).
        return {f"kubernetes.io/cluster/{self._args.cluster_name}": "shared"}

    def _vpc(self) -> aws.ec2.Vpc:
        name = self._name
        return aws.ec2.Vpc(f"{name}-vpc", cidr_block=self._args.cidr, enable_dns_hostnames=True,
                           enable_dns_support=True, tags={"Name": f"{name}-vpc"},
                           opts=pulumi.ResourceOptions(parent=self))

    def _public_subnets(self, vpc: aws.ec2.Vpc, cidrs: list[str]) -> tuple[aws.ec2.InternetGateway,
                                                                            list[aws.ec2.Subnet]]:
        """The internet gateway and a public subnet per zone routed through it."""
        name, child = self._name, pulumi.ResourceOptions(parent=self)
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags={"Name": f"{name}-igw"},
                                      opts=child)
        public_rt = aws.ec2.RouteTable(
            f"{name}-public", vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
            tags={"Name": f"{name}-public"}, opts=child)
        public = []
        for zone, cidr in zip(self._args.zones, cidrs, strict=True):
            subnet = aws.ec2.Subnet(
                f"{name}-public-{zone}", vpc_id=vpc.id, availability_zone=zone, cidr_block=cidr,
                map_public_ip_on_launch=False,
                tags={"Name": f"{name}-public-{zone}", "kubernetes.io/role/elb": "1", **self._cluster_tag()},
                opts=child)
            aws.ec2.RouteTableAssociation(f"{name}-public-{zone}-rt", subnet_id=subnet.id,
                                          route_table_id=public_rt.id, opts=child)
            public.append(subnet)
        return igw, public

    def _private_route_table(self, vpc: aws.ec2.Vpc, igw: aws.ec2.InternetGateway,
                             nat_subnet: aws.ec2.Subnet) -> aws.ec2.RouteTable:
        """One NAT gateway, in the first zone's public subnet, for every private subnet."""
        name = self._name
        eip = aws.ec2.Eip(f"{name}-nat", domain="vpc", tags={"Name": f"{name}-nat"},
                          opts=pulumi.ResourceOptions(parent=self))
        nat = aws.ec2.NatGateway(f"{name}-nat", subnet_id=nat_subnet.id, allocation_id=eip.id,
                                 tags={"Name": f"{name}-nat"},
                                 opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]))
        return aws.ec2.RouteTable(
            f"{name}-private", vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)],
            tags={"Name": f"{name}-private"}, opts=pulumi.ResourceOptions(parent=self))

    def _private_subnets(self, vpc: aws.ec2.Vpc, private_rt: aws.ec2.RouteTable,
                         cidrs: list[str]) -> list[aws.ec2.Subnet]:
        name, child = self._name, pulumi.ResourceOptions(parent=self)
        private = []
        for zone, cidr in zip(self._args.zones, cidrs, strict=True):
            subnet = aws.ec2.Subnet(
                f"{name}-private-{zone}", vpc_id=vpc.id, availability_zone=zone, cidr_block=cidr,
                tags={"Name": f"{name}-private-{zone}", "kubernetes.io/role/internal-elb": "1",
                      **self._cluster_tag()},
                opts=child)
            aws.ec2.RouteTableAssociation(f"{name}-private-{zone}-rt", subnet_id=subnet.id,
                                          route_table_id=private_rt.id, opts=child)
            private.append(subnet)
        return private

    def _s3_endpoint(self, vpc: aws.ec2.Vpc, private_rt: aws.ec2.RouteTable) -> aws.ec2.VpcEndpoint:
        # ECR keeps image layers in S3: with a gateway endpoint the nodes pull the multi-GB slurmd
        # image straight from S3 instead of through the NAT gateway and its per-GB charge (Amazon
        # ECR user guide, "Create the Amazon S3 gateway endpoint",
        # https://docs.aws.amazon.com/AmazonECR/latest/userguide/vpc-endpoints.html). Gateway
        # endpoints themselves cost nothing.
        name = self._name
        return aws.ec2.VpcEndpoint(
            f"{name}-s3", vpc_id=vpc.id, service_name=f"com.amazonaws.{self._args.region}.s3",
            vpc_endpoint_type="Gateway", route_table_ids=[private_rt.id],
            tags={"Name": f"{name}-s3"}, opts=pulumi.ResourceOptions(parent=self))
