"""The VPC: two AZs including the GPU AZ, private node subnets, public LB subnets, NAT, LBC tags."""

import ipaddress
import json

from devkit.offline_run import run_program


def _subnets(graph, kind):
    return [r for r in graph.of_type("aws:ec2/subnet:Subnet") if f"-{kind}-" in r.name]


def test_vpc_uses_the_configured_cidr(dev):
    assert dev.named("network-vpc").inputs["cidrBlock"] == "10.0.0.0/16"


def test_subnets_span_two_azs_including_the_gpu_az(dev):
    for kind in ("private", "public"):
        zones = [s.inputs["availabilityZone"] for s in _subnets(dev, kind)]
        assert len(set(zones)) == 2 and "us-west-2a" in zones


def test_gpu_az_follows_config():
    graph = run_program("dev", {"availabilityZone": "us-west-2c"})
    zones = {s.inputs["availabilityZone"] for s in _subnets(graph, "private")}
    assert "us-west-2c" in zones and len(zones) == 2


def test_subnets_are_disjoint_and_inside_the_vpc(dev):
    vpc = ipaddress.ip_network("10.0.0.0/16")
    nets = [
        ipaddress.ip_network(s.inputs["cidrBlock"])
        for s in _subnets(dev, "private") + _subnets(dev, "public")
    ]
    assert all(n.subnet_of(vpc) for n in nets)
    assert all(not a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1 :])


def test_public_subnets_are_tagged_for_internet_facing_load_balancers(dev):
    for s in _subnets(dev, "public"):
        assert s.inputs["tags"]["kubernetes.io/role/elb"] == "1"
        assert s.inputs["tags"]["kubernetes.io/cluster/slinky-eks-dev"] == "shared"


def test_private_subnets_are_tagged_for_internal_load_balancers(dev):
    for s in _subnets(dev, "private"):
        assert s.inputs["tags"]["kubernetes.io/role/internal-elb"] == "1"


def test_private_subnets_route_through_the_nat_gateway(dev):
    (nat,) = dev.of_type("aws:ec2/natGateway:NatGateway")
    private_rt = dev.named("network-private")
    assert private_rt.inputs["routes"][0]["natGatewayId"] == "network-nat-id"
    assert nat.urn in private_rt.property_dependencies["routes"]
    # The NAT gateway sits in a public subnet.
    public_ids = {f"{s.name}-id" for s in _subnets(dev, "public")}
    assert nat.inputs["subnetId"] in public_ids


def test_public_subnets_route_to_the_internet_gateway(dev):
    assert dev.named("network-public").inputs["routes"][0]["gatewayId"] == "network-igw-id"


def test_default_security_group_is_adopted_with_no_rules(dev):
    (default,) = dev.of_type("aws:ec2/defaultSecurityGroup:DefaultSecurityGroup")
    assert default.inputs["vpcId"] == "network-vpc-id"
    assert default.inputs["ingress"] == [] and default.inputs["egress"] == []


def test_flow_logs_record_all_traffic_to_cloudwatch_logs_by_default(dev):
    (flow,) = dev.of_type("aws:ec2/flowLog:FlowLog")
    assert flow.inputs["vpcId"] == "network-vpc-id" and flow.inputs["trafficType"] == "ALL"
    assert flow.inputs["logDestinationType"] == "cloud-watch-logs"
    group = dev.named("network-flow-log-group")
    assert (
        flow.inputs["logDestination"]
        == f"arn:aws:logs:us-west-2:123456789012:log-group:{group.inputs['name']}"
    )
    assert flow.inputs["iamRoleArn"] == "arn:aws:iam::123456789012:role/network-flow-log-role"


def test_flow_log_group_keeps_logs_for_the_configured_retention(dev):
    assert dev.named("network-flow-log-group").inputs["retentionInDays"] == 90
    graph = run_program("dev", {"flowLogsRetentionDays": 14})
    assert graph.named("network-flow-log-group").inputs["retentionInDays"] == 14


def test_flow_log_role_is_trusted_by_the_flow_logs_service_for_this_account_only(dev):
    (statement,) = json.loads(dev.named("network-flow-log-role").inputs["assumeRolePolicy"])["Statement"]
    assert statement["Principal"] == {"Service": "vpc-flow-logs.amazonaws.com"}
    assert statement["Action"] == "sts:AssumeRole"
    assert statement["Condition"] == {
        "StringEquals": {"aws:SourceAccount": "123456789012"},
        "ArnLike": {"aws:SourceArn": "arn:aws:ec2:us-west-2:123456789012:vpc-flow-log/*"},
    }


def test_flow_log_role_writes_only_to_its_log_group(dev):
    arn = "arn:aws:logs:us-west-2:123456789012:log-group:/slinky-eks/slinky-eks-dev/vpc-flow-logs"
    statements = json.loads(dev.named("network-flow-log-delivery").inputs["policy"])["Statement"]
    writes = {a for s in statements for a in s["Action"] if not a.startswith("logs:Describe")}
    assert writes == {"logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"}
    for statement in statements:
        if statement["Action"] != ["logs:DescribeLogGroups"]:  # a list call: on "*", as the guide grants it
            assert statement["Resource"] == [arn, f"{arn}:*"]


def test_flow_log_waits_for_its_delivery_permission(dev):
    assert dev.depends_on(dev.named("network-flow-logs"), dev.named("network-flow-log-delivery"))


def test_flow_logs_to_s3_go_to_a_private_expiring_bucket_of_the_stack():
    graph = run_program("dev", {"flowLogsDestination": "s3", "flowLogsRetentionDays": 30})
    flow = graph.named("network-flow-logs")
    assert flow.inputs["logDestinationType"] == "s3"
    assert flow.inputs["logDestination"] == "arn:aws:s3:::network-flow-log-bucket"
    assert "iamRoleArn" not in flow.inputs
    assert graph.named("network-flow-log-bucket").inputs["forceDestroy"] is True
    (rule,) = graph.named("network-flow-log-expiry").inputs["rules"]
    assert rule["expiration"] == {"days": 30} and rule["status"] == "Enabled"
    # The flow log bucket's block (the image build's sources bucket has its own).
    blocks = [
        b
        for b in graph.of_type("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
        if graph.depends_on(b, graph.named("network-flow-log-bucket"))
    ]
    assert [
        all(
            b.inputs[k]
            for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
        )
        for b in blocks
    ] == [True]
    # No flow-log group beside the bucket (the control plane's and the database's are their own).
    assert [
        g.name for g in graph.of_type("aws:cloudwatch/logGroup:LogGroup") if g.name.startswith("network-")
    ] == []


def test_flow_logs_s3_delivery_is_limited_to_this_account():
    graph = run_program("dev", {"flowLogsDestination": "s3"})
    policy = json.loads(graph.named("network-flow-log-delivery").inputs["policy"])
    for statement in policy["Statement"]:
        assert statement["Principal"] == {"Service": "delivery.logs.amazonaws.com"}
        assert statement["Condition"]["StringEquals"]["aws:SourceAccount"] == "123456789012"
    assert policy["Statement"][0]["Resource"] == "arn:aws:s3:::network-flow-log-bucket/AWSLogs/123456789012/*"


def test_flow_logs_off_makes_none():
    graph = run_program("dev", {"flowLogsDestination": "off"})
    assert graph.of_type("aws:ec2/flowLog:FlowLog") == []
    assert [r.name for r in graph.resources if "flow-log" in r.name] == []
