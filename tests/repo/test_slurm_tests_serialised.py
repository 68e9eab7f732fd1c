"""make test runs the suite on several pytest-xdist workers, and the real-cluster tests one cluster
at a time on one of them (tests/conftest.py pytest_collection_modifyitems): that holds only while
every test module that starts a cluster carries the slurm mark the hook groups by."""
import ast
import os
import pathlib

import pytest

from devkit.offline_run import PROJECT_DIR
from tests.conftest import SLURM_GROUP, pytest_collection_modifyitems
from tests.support.local_slurm import ClusterBusy, hold_cluster_lock

TESTS = PROJECT_DIR / "tests"
# What starts a cluster: tests/support/local_slurm.py's LocalSlurm, slurm_cluster.py's running_cluster.
STARTERS = frozenset({"LocalSlurm", "running_cluster"})


def unmarked_cluster_module(source: str) -> bool:
    """Whether a test module uses a cluster starter without `pytestmark = pytest.mark.slurm`."""
    tree = ast.parse(source)
    uses = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
            for a in n.names} & STARTERS
    marked = any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in n.targets)
                 and "pytest.mark.slurm" in ast.unparse(n.value) for n in tree.body)
    return bool(uses) and not marked


def test_every_module_that_starts_a_cluster_is_marked_slurm():
    modules = sorted(TESTS.rglob("test_*.py"))
    unmarked = [str(p.relative_to(PROJECT_DIR)) for p in modules if unmarked_cluster_module(p.read_text())]
    assert not unmarked, f"{unmarked} start a Slurm cluster without pytestmark = pytest.mark.slurm"


def test_an_unmarked_cluster_module_is_found():
    assert unmarked_cluster_module("from tests.support.slurm_cluster import running_cluster\n")
    assert not unmarked_cluster_module("import pytest\nfrom tests.support.slurm_cluster import running_cluster\n"
                                       "pytestmark = pytest.mark.slurm\n")
    assert not unmarked_cluster_module("from tests.support.slurm_cluster import WALKTHROUGH\n")


class _Item:
    """What the hook reads and writes of a pytest item."""

    def __init__(self, *marks: pytest.MarkDecorator):
        self.marks = [m.mark for m in marks]

    def get_closest_marker(self, name: str):
        return next((m for m in self.marks if m.name == name), None)

    def add_marker(self, marker: pytest.MarkDecorator) -> None:
        self.marks.append(marker.mark)


def test_cluster_tests_share_one_xdist_group_and_the_rest_none():
    cluster, offline = _Item(pytest.mark.slurm), _Item()
    pytest_collection_modifyitems(None, [cluster, offline])
    assert cluster.get_closest_marker("xdist_group").args == (SLURM_GROUP,)
    assert offline.get_closest_marker("xdist_group") is None


def test_the_tests_directory_is_where_the_modules_are():
    # The scan above finds nothing when pointed at the wrong directory; it must see the cluster tests.
    assert any(unmarked_cluster_module(p.read_text().replace("pytestmark", "unmarked"))
               for p in pathlib.Path(TESTS, "slurm").glob("test_*.py"))


def test_a_second_cluster_waits_for_the_first_and_names_it(tmp_path):
    """Clusters of other checkouts and sessions on this machine: one at a time (local_slurm.py
    CLUSTER_LOCK), the one waiting too long told who holds it."""
    lock = tmp_path / "cluster.lock"
    first = hold_cluster_lock(tmp_path / "first", lock=lock)
    try:
        with pytest.raises(ClusterBusy, match=f"held {lock} for over 1 s .*{tmp_path / 'first'}"):
            hold_cluster_lock(tmp_path / "second", wait_s=1, lock=lock)
    finally:
        os.close(first)
    second = hold_cluster_lock(tmp_path / "second", wait_s=1, lock=lock)
    os.close(second)
