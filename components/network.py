"""The VPC: private subnets for nodes, public subnets for load balancers in the cluster's two
zones, one NAT gateway; each subnet's block is fixed by its zone (model/facts/node_zones.py). Its
default security group admits nothing, and its flow logs go where flowLogsDestination says."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_aws as aws

from components._parts.private_bucket import private_bucket
from model.facts import audit_logs, node_zones
from model.facts.node_zones import NodeZone


@dataclass(frozen=True)
class NetworkArgs:
    """Every field is required (no defaults)."""

    # The VPC's block (vpcCidr), carved as model/facts/node_zones.py says.
    cidr: str
    # StackConfig.node_zones: the cluster's two zones (a private and a public subnet each; the
    # first, availabilityZone, gets the NAT gateway), then the other GPU pools' AZs (a private
    # subnet each).
    zones: Sequence[NodeZone]
    # Tags the subnets for the load balancer controller's discovery.
    cluster_name: str
    # Names the S3 gateway endpoint's service.
    region: str
    # Where the flow logs go (flowLogsDestination: audit_logs.FLOW_LOG_DESTINATIONS).
    flow_logs_destination: str
    # How long they are kept there (flowLogsRetentionDays).
    flow_logs_retention_days: int


class Network(pulumi.ComponentResource):
    vpc_id: pulumi.Output[str]  # the VPC everything runs in
    vpc_arn: pulumi.Output[str]  # its ARN, as IAM conditions name it (ec2:Vpc)
    account_id: pulumi.Output[str]  # the account that owns it: this stack's
    # The cluster's two zones' private subnets, in `zones` order: the control plane's and the
    # core nodes'. A pool AZ added later leaves them, and so the cluster and core group, as they are.
    private_subnet_ids: list[pulumi.Output[str]]
    public_subnet_ids: list[pulumi.Output[str]]  # the cluster's two zones': load balancers'
    # The private subnet of each zone: a GPU pool's node group has exactly its AZ's.
    private_subnet_by_zone: dict[str, pulumi.Output[str]]
    # The private subnet of each zone by node_zones.subnet_key: what a resource per node subnet
    # (an EFS mount target) is named by, so that none is renamed when a pool AZ comes or goes.
    private_subnet_by_key: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: NetworkArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:network:Network", name, None, opts)
        self._name, self._args = name, args
        vpc = self._vpc()
        cluster_zones = [z for z in args.zones if z.cluster_position is not None]
        igw, public = self._public_subnets(vpc, cluster_zones)
        private_rt = self._private_route_table(vpc, igw, public[0])
        private = self._private_subnets(vpc, private_rt)
        self._s3_endpoint(vpc, private_rt)
        self._lock_default_security_group(vpc)
        self._flow_logs(vpc)
        self.vpc_id, self.vpc_arn, self.account_id = vpc.id, vpc.arn, vpc.owner_id
        self.private_subnet_ids = [private[z.name].id for z in cluster_zones]
        self.public_subnet_ids = [s.id for s in public]
        self.private_subnet_by_zone = {z.name: private[z.name].id for z in args.zones}
        self.private_subnet_by_key = {node_zones.subnet_key(z): private[z.name].id for z in args.zones}
        self.register_outputs(
            {
                "vpc_id": self.vpc_id,
                "private_subnet_ids": self.private_subnet_ids,
                "public_subnet_ids": self.public_subnet_ids,
                "private_subnet_by_zone": self.private_subnet_by_zone,
                "private_subnet_by_key": self.private_subnet_by_key,
            }
        )

    def _cluster_tag(self) -> dict[str, str]:
        # The load balancer controller finds subnets by these tags
        # (https://kubernetes-sigs.github.io/aws-load-balancer-controller/v2.17/deploy/subnet_discovery/).
        return {f"kubernetes.io/cluster/{self._args.cluster_name}": "shared"}

    def _vpc(self) -> aws.ec2.Vpc:
        name = self._name
        return aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=self._args.cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags={"Name": f"{name}-vpc"},
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _public_subnets(
        self, vpc: aws.ec2.Vpc, zones: list[NodeZone]
    ) -> tuple[aws.ec2.InternetGateway, list[aws.ec2.Subnet]]:
        """The internet gateway and a public subnet in each of the cluster's zones routed through it."""
        name, child = self._name, pulumi.ResourceOptions(parent=self)
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags={"Name": f"{name}-igw"}, opts=child)
        public_rt = aws.ec2.RouteTable(
            f"{name}-public",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
            tags={"Name": f"{name}-public"},
            opts=child,
        )
        public = []
        for node_zone in zones:
            zone, cidr = node_zone.name, node_zones.public_cidr(self._args.cidr, node_zone)
            subnet = aws.ec2.Subnet(
                f"{name}-public-{zone}",
                vpc_id=vpc.id,
                availability_zone=zone,
                cidr_block=cidr,
                map_public_ip_on_launch=False,
                tags={"Name": f"{name}-public-{zone}", "kubernetes.io/role/elb": "1", **self._cluster_tag()},
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                f"{name}-public-{zone}-rt", subnet_id=subnet.id, route_table_id=public_rt.id, opts=child
            )
            public.append(subnet)
        return igw, public

    def _private_route_table(
        self, vpc: aws.ec2.Vpc, igw: aws.ec2.InternetGateway, nat_subnet: aws.ec2.Subnet
    ) -> aws.ec2.RouteTable:
        """One NAT gateway, in the first zone's public subnet, for every private subnet."""
        name = self._name
        eip = aws.ec2.Eip(
            f"{name}-nat",
            domain="vpc",
            tags={"Name": f"{name}-nat"},
            opts=pulumi.ResourceOptions(parent=self),
        )
        nat = aws.ec2.NatGateway(
            f"{name}-nat",
            subnet_id=nat_subnet.id,
            allocation_id=eip.id,
            tags={"Name": f"{name}-nat"},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]),
        )
        return aws.ec2.RouteTable(
            f"{name}-private",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)],
            tags={"Name": f"{name}-private"},
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _private_subnets(self, vpc: aws.ec2.Vpc, private_rt: aws.ec2.RouteTable) -> dict[str, aws.ec2.Subnet]:
        """A private subnet per zone, by zone name."""
        name, child = self._name, pulumi.ResourceOptions(parent=self)
        private = {}
        for node_zone in self._args.zones:
            zone, cidr = node_zone.name, node_zones.private_cidr(self._args.cidr, node_zone)
            subnet = aws.ec2.Subnet(
                f"{name}-private-{zone}",
                vpc_id=vpc.id,
                availability_zone=zone,
                cidr_block=cidr,
                tags={
                    "Name": f"{name}-private-{zone}",
                    "kubernetes.io/role/internal-elb": "1",
                    **self._cluster_tag(),
                },
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                f"{name}-private-{zone}-rt", subnet_id=subnet.id, route_table_id=private_rt.id, opts=child
            )
            private[zone] = subnet
        return private

    def _s3_endpoint(self, vpc: aws.ec2.Vpc, private_rt: aws.ec2.RouteTable) -> aws.ec2.VpcEndpoint:
        # ECR keeps image layers in S3: with a gateway endpoint the nodes pull the multi-GB slurmd
        # image straight from S3 instead of through the NAT gateway and its per-GB charge (Amazon
        # ECR user guide, "Create the Amazon S3 gateway endpoint",
        # https://docs.aws.amazon.com/AmazonECR/latest/userguide/vpc-endpoints.html). Gateway
        # endpoints themselves cost nothing.
        name = self._name
        return aws.ec2.VpcEndpoint(
            f"{name}-s3",
            vpc_id=vpc.id,
            service_name=f"com.amazonaws.{self._args.region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=[private_rt.id],
            tags={"Name": f"{name}-s3"},
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _lock_default_security_group(self, vpc: aws.ec2.Vpc) -> aws.ec2.DefaultSecurityGroup:
        # Every VPC comes with a default security group that admits all traffic from its members
        # and lets all out; nothing here uses it (nodes have the EKS cluster security group, the
        # NLB its own), but an interface created without a group lands in it. Adopted with no
        # rules, it admits and sends nothing: the provider removes every rule of the group when
        # it adopts it and then adds only those given (pulumi-aws 7.51.1 ec2.DefaultSecurityGroup,
        # from hashicorp/terraform-provider-aws website/docs/r/default_security_group.html.markdown).
        return aws.ec2.DefaultSecurityGroup(
            f"{self._name}-default-sg",
            vpc_id=vpc.id,
            ingress=[],
            egress=[],
            tags={"Name": f"{self._name}-default-locked"},
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _flow_logs(self, vpc: aws.ec2.Vpc) -> aws.ec2.FlowLog | None:
        """The VPC's flow logs, accepted and rejected, to CloudWatch Logs or S3; None when off.
        Nothing waits for them: they come up beside the subnets."""
        destination = self._args.flow_logs_destination
        if destination == audit_logs.FLOW_LOGS_OFF:
            return None
        if destination == audit_logs.FLOW_LOGS_S3:
            target, role, after = self._flow_log_bucket(vpc)
        else:
            target, role, after = self._flow_log_group(vpc)
        return aws.ec2.FlowLog(
            f"{self._name}-flow-logs",
            vpc_id=vpc.id,
            traffic_type="ALL",
            log_destination_type=destination,
            log_destination=target,
            iam_role_arn=role.arn if role else None,
            max_aggregation_interval=600,
            tags={"Name": f"{self._name}-flow-logs"},
            opts=pulumi.ResourceOptions(parent=self, depends_on=after),
        )

    def _flow_log_group(
        self, vpc: aws.ec2.Vpc
    ) -> tuple[pulumi.Output[str], aws.iam.Role, list[pulumi.Resource]]:
        """The log group, and the role the flow logs service delivers to it with: trusted by that
        service for this account's flow logs only, allowed to write to this group only. The trust
        and the actions are the Amazon VPC user guide's, "IAM role for publishing flow logs to
        CloudWatch Logs" (https://docs.aws.amazon.com/vpc/latest/userguide/flow-logs-iam-role.html),
        whose Resource "*" is narrowed to the one group for everything but the list call DescribeLogGroups."""
        name, child = self._name, pulumi.ResourceOptions(parent=self)
        group = aws.cloudwatch.LogGroup(
            f"{name}-flow-log-group",
            name=audit_logs.flow_log_group(self._args.cluster_name),
            retention_in_days=self._args.flow_logs_retention_days,
            opts=child,
        )
        account = vpc.owner_id
        role = aws.iam.Role(
            f"{name}-flow-log-role",
            assume_role_policy=account.apply(
                lambda a: json.dumps(
                    {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Principal": {"Service": "vpc-flow-logs.amazonaws.com"},
                                "Action": "sts:AssumeRole",
                                # The confused-deputy guard of the guide: only this account's flow logs.
                                "Condition": {
                                    "StringEquals": {"aws:SourceAccount": a},
                                    "ArnLike": {
                                        "aws:SourceArn": f"arn:aws:ec2:{self._args.region}:{a}:vpc-flow-log/*"
                                    },
                                },
                            }
                        ],
                    }
                )
            ),
            opts=child,
        )
        policy = aws.iam.RolePolicy(
            f"{name}-flow-log-delivery",
            role=role.id,
            policy=group.arn.apply(
                lambda arn: json.dumps(
                    {
                        "Version": "2012-10-17",
                        "Statement": [
                            # Writes to the one group and its streams (arn:...:log-group:<name>:log-stream:<s>).
                            # CreateLogGroup, which the guide lists, only ever finds the group there.
                            {
                                "Effect": "Allow",
                                "Action": [
                                    "logs:CreateLogGroup",
                                    "logs:CreateLogStream",
                                    "logs:PutLogEvents",
                                ],
                                "Resource": [arn, f"{arn}:*"],
                            },
                            # The guide's reads: the streams of the one group, and the list of groups.
                            # DescribeLogGroups is a list call that names no group, so it is granted on "*"
                            # as the guide grants it (a narrower ARN may deny it; parliament's
                            # RESOURCE_MISMATCH says the same).
                            {
                                "Effect": "Allow",
                                "Action": ["logs:DescribeLogStreams"],
                                "Resource": [arn, f"{arn}:*"],
                            },
                            {"Effect": "Allow", "Action": ["logs:DescribeLogGroups"], "Resource": "*"},
                        ],
                    }
                )
            ),
            opts=child,
        )
        return group.arn, role, [policy]

    def _flow_log_bucket(self, vpc: aws.ec2.Vpc) -> tuple[pulumi.Output[str], None, list[pulumi.Resource]]:
        """A private bucket of the stack's, emptied and deleted on destroy, whose objects expire
        after the retention. Flow logs to S3 need no role: the log delivery service writes under
        AWSLogs/<account>/ as the bucket policy allows (Amazon VPC user guide, "Amazon S3 bucket
        permissions for flow logs": https://docs.aws.amazon.com/vpc/latest/userguide/flow-logs-s3-permissions.html)."""
        name, child = self._name, pulumi.ResourceOptions(parent=self)
        bucket = private_bucket(f"{name}-flow-log-bucket", f"{name}-flow-log-private", child)
        aws.s3.BucketLifecycleConfiguration(
            f"{name}-flow-log-expiry",
            bucket=bucket.id,
            rules=[
                aws.s3.BucketLifecycleConfigurationRuleArgs(
                    id="expire-flow-logs",
                    status="Enabled",
                    filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
                    expiration=aws.s3.BucketLifecycleConfigurationRuleExpirationArgs(
                        days=self._args.flow_logs_retention_days
                    ),
                )
            ],
            opts=child,
        )
        region = self._args.region
        policy = aws.s3.BucketPolicy(
            f"{name}-flow-log-delivery",
            bucket=bucket.id,
            policy=pulumi.Output.all(bucket.arn, vpc.owner_id).apply(
                lambda a: json.dumps(
                    {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Sid": "AWSLogDeliveryWrite",
                                "Effect": "Allow",
                                "Principal": {"Service": "delivery.logs.amazonaws.com"},
                                "Action": "s3:PutObject",
                                "Resource": f"{a[0]}/AWSLogs/{a[1]}/*",
                                "Condition": {
                                    "StringEquals": {
                                        "aws:SourceAccount": a[1],
                                        "s3:x-amz-acl": "bucket-owner-full-control",
                                    },
                                    "ArnLike": {"aws:SourceArn": f"arn:aws:logs:{region}:{a[1]}:*"},
                                },
                            },
                            {
                                "Sid": "AWSLogDeliveryAclCheck",
                                "Effect": "Allow",
                                "Principal": {"Service": "delivery.logs.amazonaws.com"},
                                "Action": "s3:GetBucketAcl",
                                "Resource": a[0],
                                "Condition": {
                                    "StringEquals": {"aws:SourceAccount": a[1]},
                                    "ArnLike": {"aws:SourceArn": f"arn:aws:logs:{region}:{a[1]}:*"},
                                },
                            },
                        ],
                    }
                )
            ),
            opts=child,
        )
        # The flow log waits for the policy: CreateFlowLogs checks that the service may write.
        return bucket.arn, None, [policy]
