"""Stack outputs CI consumes."""
import re

from devkit.offline_run import PROJECT_DIR, is_secret

README = (PROJECT_DIR / "README.md").read_text()


def outputs_table(readme: str) -> set[str]:
    """The output names in the first column of the README's "## Outputs" table."""
    section = readme[readme.index("\n## Outputs\n") + len("\n## Outputs\n"):]
    end = re.search(r"^## ", section, re.M)
    rows = [line for line in section[:end.start() if end else None].splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([A-Za-z]+)`", row.split("|")[1])}


def table_differences(readme: str, exports: set[str]) -> list[str]:
    table = outputs_table(readme)
    return ([f"exported, not in the README: {n}" for n in sorted(exports - table)]
            + [f"in the README, not exported: {n}" for n in sorted(table - exports)])


def test_foundation_outputs(dev):
    assert dev.output("clusterName") == "slinky-eks-dev"
    assert dev.output("region") == "us-west-2"
    assert dev.output("vpcId") == "network-vpc-id"
    assert dev.output("gpuAvailabilityZone") == "us-west-2a"


def test_kubeconfig_is_a_secret_output(dev):
    assert is_secret(dev.stack_outputs["kubeconfig"])
    assert '"kind": "Config"' in dev.output("kubeconfig")


def test_the_readme_outputs_table_lists_exactly_the_stack_outputs(dev):
    assert table_differences(README, set(dev.stack_outputs)) == []


def test_the_outputs_table_check_catches_an_export_missing_from_the_readme(dev):
    without_vpc = "\n".join(line for line in README.splitlines() if not line.startswith("| `vpcId`"))
    assert table_differences(without_vpc, set(dev.stack_outputs)) == ["exported, not in the README: vpcId"]


def test_the_outputs_table_check_catches_a_readme_row_no_longer_exported(dev):
    exports = set(dev.stack_outputs) - {"sshCommand"}
    assert table_differences(README, exports) == ["in the README, not exported: sshCommand"]
