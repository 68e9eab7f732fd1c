"""The VPC: two AZs including the GPU AZ, private node subnets, public LB subnets, NAT, LBC tags."""
import ipaddress

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
    nets = [ipaddress.ip_network(s.inputs["cidrBlock"]) for s in _subnets(dev, "private") + _subnets(dev, "public")]
    assert all(n.subnet_of(vpc) for n in nets)
    assert all(not a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1:])


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
