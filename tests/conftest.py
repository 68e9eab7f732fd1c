import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from harness import Graph, run_program  # noqa: E402

SHARED = pathlib.Path(__file__).resolve().parent.parent.parent / "shared"


@pytest.fixture(scope="session")
def dev() -> Graph:
    """The dev stack's resource graph (Pulumi.yaml defaults + Pulumi.dev.yaml)."""
    return run_program("dev")


@pytest.fixture(scope="session")
def shared_ref() -> pathlib.Path:
    """../shared/ref: upstream data the tests validate against. Missing is a failure, not a skip."""
    ref = SHARED / "ref"
    if not ref.is_dir():
        pytest.fail(f"{ref} is missing: tests validate against the upstream files there "
                    "(the shared/ folder beside the project checkout)")
    return ref


def rejected(**overrides) -> str:
    """Run the dev stack with overrides that must be refused; return the error message and
    check that nothing was registered first."""
    graph = run_program("dev", overrides, expect_error=True)
    assert graph.resources == [], [r.name for r in graph.resources]
    return str(graph.error)
