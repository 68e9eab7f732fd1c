"""Stack outputs CI consumes, exported exactly as model/facts/outputs.py declares them (the README's
outputs table is written from that table: tests/repo/test_project_docs.py)."""

from devkit.offline_run import is_secret
from model.facts.outputs import OUTPUTS, Output, export_differences


def test_foundation_outputs(dev):
    assert dev.output("clusterName") == "slinky-eks-dev"
    assert dev.output("region") == "us-west-2"
    assert dev.output("vpcId") == "network-vpc-id"
    assert dev.output("gpuAvailabilityZone") == "us-west-2a"


def test_kubeconfig_is_a_secret_output(dev):
    assert is_secret(dev.stack_outputs["kubeconfig"])
    assert '"kind": "Config"' in dev.output("kubeconfig")


def test_the_dev_stack_exports_exactly_the_declared_outputs(dev):
    assert export_differences(set(dev.stack_outputs)) == []


def test_an_export_the_table_lacks_is_found(dev):
    without_vpc = tuple(o for o in OUTPUTS if o.name != "vpcId")
    assert export_differences(set(dev.stack_outputs), without_vpc) == [
        "exported, not in model/facts/outputs.py: vpcId"
    ]


def test_a_declared_output_no_longer_exported_is_found(dev):
    exports = set(dev.stack_outputs) - {"sshCommand"}
    assert export_differences(exports) == ["in model/facts/outputs.py, not exported: sshCommand"]


def test_a_declared_output_the_program_never_exported_is_found(dev):
    extra = (*OUTPUTS, Output("loginAddress", "an output nobody exports"))
    assert export_differences(set(dev.stack_outputs), extra) == [
        "in model/facts/outputs.py, not exported: loginAddress"
    ]
