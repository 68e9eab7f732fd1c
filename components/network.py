"""The VPC: private subnets for nodes, public subnets for load balancers, one NAT gateway."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_aws as aws


@dataclass(frozen=True)
class NetworkArgs:
    cidr: str
    # The first zone (availabilityZone) gets the NAT gateway; every GPU pool's AZ is among them.
    zones: Sequence[str]
    cluster_name: str
    region: str


def subnet_cidrs(vpc_cidr: str, zones: int) -> tuple[list[str], list[str]]:
    """Carve the VPC into eight equal blocks: private subnets first (nodes and pod IPs from the
    VPC CNI need the room), public subnets from the fifth block on."""
    blocks = list(ipaddress.ip_network(vpc_cidr).subnets(prefixlen_diff=3))
    return ([str(b) for b in blocks[:zones]], [str(b) for b in blocks[4:4 + zones]])


class Network(pulumi.ComponentResource):
    vpc_id: pulumi.Output[str]
    private_subnet_ids: list[pulumi.Output[str]]
    public_subnet_ids: list[pulumi.Output[str]]
    # The private subnet of each zone: a GPU pool's node group has exactly its AZ's.
    private_subnet_by_zone: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: NetworkArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:network:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # The load balancer controller finds subnets by these tags
        # (https://kubernetes-sigs.github.io/aws-load-balancer-controller/v2.17/deploy/subnet_discovery/).
        cluster_tag = {f"kubernetes.io/cluster/{args.cluster_name}": "shared"}
        vpc = aws.ec2.Vpc(f"{name}-vpc", cidr_block=args.cidr, enable_dns_hostnames=True,
                          enable_dns_support=True, tags={"Name": f"{name}-vpc"}, opts=child)
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags={"Name": f"{name}-igw"},
                                      opts=child)
        public_rt = aws.ec2.RouteTable(
            f"{name}-public", vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
            tags={"Name": f"{name}-public"}, opts=child)
        private_cidrs, public_cidrs = subnet_cidrs(args.cidr, len(args.zones))
        public, private = [], []
        for zone, cidr in zip(args.zones, public_cidrs, strict=True):
            subnet = aws.ec2.Subnet(
                f"{name}-public-{zone}", vpc_id=vpc.id, availability_zone=zone, cidr_block=cidr,
                map_public_ip_on_launch=False,
                tags={"Name": f"{name}-public-{zone}", "kubernetes.io/role/elb": "1", **cluster_tag},
                opts=child)
            aws.ec2.RouteTableAssociation(f"{name}-public-{zone}-rt", subnet_id=subnet.id,
                                          route_table_id=public_rt.id, opts=child)
            public.append(subnet)
        eip = aws.ec2.Eip(f"{name}-nat", domain="vpc", tags={"Name": f"{name}-nat"}, opts=child)
        nat = aws.ec2.NatGateway(f"{name}-nat", subnet_id=public[0].id, allocation_id=eip.id,
                                 tags={"Name": f"{name}-nat"},
                                 opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]))
        private_rt = aws.ec2.RouteTable(
            f"{name}-private", vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)],
            tags={"Name": f"{name}-private"}, opts=child)
        for zone, cidr in zip(args.zones, private_cidrs, strict=True):
            subnet = aws.ec2.Subnet(
                f"{name}-private-{zone}", vpc_id=vpc.id, availability_zone=zone, cidr_block=cidr,
                tags={"Name": f"{name}-private-{zone}", "kubernetes.io/role/internal-elb": "1",
                      **cluster_tag},
                opts=child)
            aws.ec2.RouteTableAssociation(f"{name}-private-{zone}-rt", subnet_id=subnet.id,
                                          route_table_id=private_rt.id, opts=child)
            private.append(subnet)
        # ECR keeps image layers in S3: with a gateway endpoint the nodes pull the multi-GB slurmd
        # image straight from S3 instead of through the NAT gateway and its per-GB charge (Amazon
        # ECR user guide, "Create the Amazon S3 gateway endpoint",
        # https://docs.aws.amazon.com/AmazonECR/latest/userguide/vpc-endpoints.html). Gateway
        # endpoints themselves cost nothing.
        aws.ec2.VpcEndpoint(f"{name}-s3", vpc_id=vpc.id, service_name=f"com.amazonaws.{args.region}.s3",
                            vpc_endpoint_type="Gateway", route_table_ids=[private_rt.id],
                            tags={"Name": f"{name}-s3"}, opts=child)

        self.vpc_id = vpc.id
        self.private_subnet_ids = [s.id for s in private]
        self.public_subnet_ids = [s.id for s in public]
        self.private_subnet_by_zone = {zone: s.id for zone, s in zip(args.zones, private, strict=True)}
        self.register_outputs({"vpc_id": self.vpc_id, "private_subnet_ids": self.private_subnet_ids,
                               "public_subnet_ids": self.public_subnet_ids,
                               "private_subnet_by_zone": self.private_subnet_by_zone})
