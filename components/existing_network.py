"""A VPC the stack is given (vpcId, privateSubnetIds, publicSubnetIds): the same attributes as
components/network.py's Network, read from the account, and nothing created. The VPC, its subnets,
routes, NAT or Transit Gateway, endpoints and flow logs stay their owner's: the stack adds none
(not even the S3 gateway endpoint or flow logs Network adds to its own VPC, which would change
another team's route tables and logging) and tags none of their subnets, so `destroy` leaves the
VPC exactly as it found it (docs/decisions/existing-vpc.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_aws as aws

from model.checks.vpc_subnets import ExistingVpc


@dataclass(frozen=True)
class ExistingNetworkArgs:
    """Every field is required (no defaults)."""

    # The VPC and its subnets as DescribeVpcs and DescribeSubnets answered at preview
    # (StackConfig.existing_vpc): one reading, the one the refusals of model/checks/vpc_subnets.py
    # judged, so what the stack uses is what was checked.
    vpc: ExistingVpc


class ExistingNetwork(pulumi.ComponentResource):
    vpc_id: pulumi.Output[str]  # the VPC everything runs in
    vpc_arn: pulumi.Output[str]  # its ARN, as IAM conditions name it (ec2:Vpc)
    account_id: pulumi.Output[str]  # the deploying account
    # Every given private subnet, in the order given: the control plane's, the core nodes', the
    # accounting database's subnet group's and the metrics scraper's.
    private_subnet_ids: list[pulumi.Output[str]]
    public_subnet_ids: list[pulumi.Output[str]]  # the given public subnets ([] for an internal login)
    # The first given private subnet of each AZ: a GPU pool's node group has its AZ's.
    private_subnet_by_zone: dict[str, pulumi.Output[str]]
    # The same by zone name: one EFS mount target per AZ (EFS takes one per AZ), named by its AZ so
    # that a subnet given later in another AZ renames none.
    private_subnet_by_key: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: ExistingNetworkArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:network:ExistingNetwork", name, None, opts)
        given = args.vpc
        self.vpc_id = pulumi.Output.from_input(given.vpc.vpc_id)
        self.vpc_arn = pulumi.Output.from_input(given.vpc.arn)
        self.account_id = self._deployer_account()
        self.private_subnet_ids = [pulumi.Output.from_input(s.subnet_id) for s in given.private]
        self.public_subnet_ids = [pulumi.Output.from_input(s.subnet_id) for s in given.public]
        self.private_subnet_by_zone = {
            zone: pulumi.Output.from_input(s.subnet_id) for zone, s in given.private_by_zone.items()
        }
        self.private_subnet_by_key = dict(self.private_subnet_by_zone)
        self.register_outputs(
            {
                "vpc_id": self.vpc_id,
                "private_subnet_ids": self.private_subnet_ids,
                "public_subnet_ids": self.public_subnet_ids,
                "private_subnet_by_zone": self.private_subnet_by_zone,
                "private_subnet_by_key": self.private_subnet_by_key,
            }
        )

    def _deployer_account(self) -> pulumi.Output[str]:
        # The deploying account (STS GetCallerIdentity), not the VPC's owner: a VPC shared through
        # AWS RAM belongs to another account, and the stack's own resources are named in the deployer's.
        return aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
