"""The program under mocks as the config tests run it."""

from devkit.offline_run import run_program


def rejected(**overrides) -> str:
    """Run the dev stack with overrides that must be refused; return the error message and
    check that nothing was registered first."""
    graph = run_program("dev", overrides, expect_error=True)
    assert graph.resources == [], [r.name for r in graph.resources]
    return str(graph.error)
