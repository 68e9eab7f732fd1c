import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from harness import Graph, run_program  # noqa: E402
from tools import reference_data  # noqa: E402


@pytest.fixture(scope="session")
def dev() -> Graph:
    """The dev stack's resource graph (Pulumi.yaml defaults + Pulumi.dev.yaml)."""
    return run_program("dev")


@pytest.fixture(scope="session")
def shared_ref() -> pathlib.Path:
    """The upstream reference data the tests validate against ($SLINKY_EKS_REF or ../shared/ref).
    Missing is a failure, not a skip."""
    try:
        return reference_data.ref_root()
    except reference_data.ReferenceDataMissing as e:
        pytest.fail(str(e))


def rejected(**overrides) -> str:
    """Run the dev stack with overrides that must be refused; return the error message and
    check that nothing was registered first."""
    graph = run_program("dev", overrides, expect_error=True)
    assert graph.resources == [], [r.name for r in graph.resources]
    return str(graph.error)


@pytest.fixture(scope="session")
def rendered(dev) -> dict[str, list[dict]]:
    """Every helm Release of the dev stack rendered from its reference chart, by release name."""
    from tools.chart_render import render_graph_releases
    return render_graph_releases(dev)


def pytest_report_header(config):
    """The Slurm the cluster tests run (`slurmctld -V` in each root filesystem), in the test log."""
    import subprocess

    from local_slurm import ROOTS
    lines = []
    for root in sorted(ROOTS.glob("*/.slinky-stamp")):
        version = subprocess.run(["chroot", str(root.parent), "slurmctld", "-V"], capture_output=True, text=True)
        lines.append(f"slurmctld -V ({root.parent.name} root): {version.stdout.strip() or version.stderr.strip()}")
    return lines or ["slurmctld -V: no Slurm root filesystem built (make test builds them)"]
