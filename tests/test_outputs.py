"""Stack outputs CI consumes."""
from tools.offline_run import is_secret


def test_foundation_outputs(dev):
    assert dev.output("clusterName") == "slinky-eks-dev"
    assert dev.output("region") == "us-west-2"
    assert dev.output("vpcId") == "network-vpc-id"
    assert dev.output("gpuAvailabilityZone") == "us-west-2a"


def test_kubeconfig_is_a_secret_output(dev):
    assert is_secret(dev.stack_outputs["kubeconfig"])
    assert '"kind": "Config"' in dev.output("kubeconfig")
