"""Image pulls skip the NAT gateway: an S3 gateway endpoint on every private subnet's route table."""

import copy

S3_ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"


def _private_route_tables(graph):
    private = {f"{s.name}-id" for s in graph.of_type("aws:ec2/subnet:Subnet") if "-private-" in s.name}
    return {
        a.inputs["routeTableId"]
        for a in graph.of_type("aws:ec2/routeTableAssociation:RouteTableAssociation")
        if a.inputs["subnetId"] in private
    }


def s3_gateway_problems(graph, region):
    """Why the private subnets would reach S3 through the NAT gateway; empty when they don't."""
    endpoints = [
        e for e in graph.of_type(S3_ENDPOINT) if e.inputs.get("serviceName") == f"com.amazonaws.{region}.s3"
    ]
    if not endpoints:
        return [f"no endpoint for com.amazonaws.{region}.s3"]
    problems = [
        f"{e.name} is of type {e.inputs.get('vpcEndpointType')}, not Gateway"
        for e in endpoints
        if e.inputs.get("vpcEndpointType") != "Gateway"
    ]
    routed = {rt for e in endpoints for rt in e.inputs.get("routeTableIds", [])}
    missing = sorted(_private_route_tables(graph) - routed)
    return problems + [f"private route table {rt} has no S3 gateway route" for rt in missing]


def test_private_route_tables_reach_s3_through_a_gateway_endpoint(dev):
    assert _private_route_tables(dev)
    assert s3_gateway_problems(dev, "us-west-2") == []


def test_the_endpoint_is_in_the_vpc_of_the_nodes(dev):
    (endpoint,) = dev.of_type(S3_ENDPOINT)
    assert endpoint.inputs["vpcId"] == "network-vpc-id"


def test_an_endpoint_of_another_region_does_not_count(dev):
    assert s3_gateway_problems(dev, "us-east-1") == ["no endpoint for com.amazonaws.us-east-1.s3"]


def test_an_endpoint_missing_a_private_route_table_is_found(dev):
    broken = copy.deepcopy(dev)
    broken.of_type(S3_ENDPOINT)[0].inputs["routeTableIds"] = []
    assert s3_gateway_problems(broken, "us-west-2") == [
        "private route table network-private-id has no S3 gateway route"
    ]


def test_an_interface_endpoint_is_found(dev):
    broken = copy.deepcopy(dev)
    broken.of_type(S3_ENDPOINT)[0].inputs["vpcEndpointType"] = "Interface"
    assert s3_gateway_problems(broken, "us-west-2") == ["network-s3 is of type Interface, not Gateway"]
