"""make test runs the suite on several pytest-xdist workers, and the real-cluster tests one cluster
at a time on one of them (tests/support/scheduling.py): that holds only while every test module
that starts a cluster carries the slurm mark and every slurm-marked module lives in tests/slurm/,
the folder the scheduler groups by."""

import ast
import os
import pathlib

import pytest

from devkit.offline_run import PROJECT_DIR
from tests.support.local_slurm import ClusterBusy, hold_cluster_lock
from tests.support.scheduling import CLUSTER_TESTS, ClusterTestsOnOneWorker, cluster_tests_first, work_unit

TESTS = PROJECT_DIR / "tests"
# What starts a cluster: tests/support/local_slurm.py's LocalSlurm, slurm_cluster.py's running_cluster.
STARTERS = frozenset({"LocalSlurm", "running_cluster"})


def unmarked_cluster_module(source: str) -> bool:
    """Whether a test module uses a cluster starter without `pytestmark = pytest.mark.slurm`."""
    tree = ast.parse(source)
    uses = {
        a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names
    } & STARTERS
    marked = any(
        isinstance(n, ast.Assign)
        and any(getattr(t, "id", "") == "pytestmark" for t in n.targets)
        and "pytest.mark.slurm" in ast.unparse(n.value)
        for n in tree.body
    )
    return bool(uses) and not marked


def test_every_module_that_starts_a_cluster_is_marked_slurm():
    modules = sorted(TESTS.rglob("test_*.py"))
    unmarked = [str(p.relative_to(PROJECT_DIR)) for p in modules if unmarked_cluster_module(p.read_text())]
    assert not unmarked, f"{unmarked} start a Slurm cluster without pytestmark = pytest.mark.slurm"


def test_an_unmarked_cluster_module_is_found():
    assert unmarked_cluster_module("from tests.support.slurm_cluster import running_cluster\n")
    assert not unmarked_cluster_module(
        "import pytest\nfrom tests.support.slurm_cluster import running_cluster\n"
        "pytestmark = pytest.mark.slurm\n"
    )
    assert not unmarked_cluster_module("from tests.support.slurm_cluster import WALKTHROUGH\n")


def marked_slurm(source: str) -> bool:
    """Whether a test module carries the slurm mark, on the module or on a test (in code, not in
    a string)."""
    return any(
        isinstance(n, ast.Attribute) and ast.unparse(n) == "pytest.mark.slurm"
        for n in ast.walk(ast.parse(source))
    )


def test_every_slurm_marked_module_lives_in_the_folder_the_scheduler_groups():
    outside = [
        str(p.relative_to(PROJECT_DIR))
        for p in sorted(TESTS.rglob("test_*.py"))
        if marked_slurm(p.read_text()) and not str(p.relative_to(PROJECT_DIR)).startswith(CLUSTER_TESTS)
    ]
    assert outside == [], (
        f"{outside} are marked slurm outside {CLUSTER_TESTS}: two workers could start clusters"
    )


def test_a_slurm_marked_module_elsewhere_is_found():
    assert marked_slurm("import pytest\npytestmark = pytest.mark.slurm\n")
    assert marked_slurm("import pytest\n@pytest.mark.slurm\ndef test_x():\n    pass\n")
    assert not marked_slurm("import pytest\ndef test_x():\n    pass\n")
    assert not marked_slurm("SOURCE = 'pytestmark = pytest.mark.slurm'\n")


def test_every_cluster_test_is_in_one_unit_of_work_and_every_other_test_alone():
    units = {
        work_unit(n)
        for n in (
            "tests/slurm/test_jobs.py::test_sanity_job_passes",
            "tests/slurm/test_pmix.py::test_srun_lists_pmix[x]",
        )
    }
    assert units == {CLUSTER_TESTS}
    assert work_unit("tests/graph/test_cluster.py::test_a") == "tests/graph/test_cluster.py::test_a"
    assert work_unit("tests/unit/model/test_slurm.py::t") != CLUSTER_TESTS  # a name, not the folder


def test_the_scheduler_splits_by_that_unit():
    assert ClusterTestsOnOneWorker._split_scope(None, "tests/slurm/test_jobs.py::t") == CLUSTER_TESTS
    assert (
        ClusterTestsOnOneWorker._split_scope(None, "tests/charts/test_a.py::t") == "tests/charts/test_a.py::t"
    )


def test_the_cluster_tests_are_scheduled_first_each_part_in_collection_order():
    ids = [
        "tests/charts/a.py::t",
        "tests/slurm/test_jobs.py::t1",
        "tests/graph/b.py::t",
        "tests/slurm/test_pmix.py::t2",
        "tests/unit/c.py::t",
    ]
    assert cluster_tests_first(ids, nodeid=str) == [
        "tests/slurm/test_jobs.py::t1",
        "tests/slurm/test_pmix.py::t2",
        "tests/charts/a.py::t",
        "tests/graph/b.py::t",
        "tests/unit/c.py::t",
    ]


def test_the_tests_directory_is_where_the_modules_are():
    # The scan above finds nothing when pointed at the wrong directory; it must see the cluster tests.
    assert any(
        unmarked_cluster_module(p.read_text().replace("pytestmark", "unmarked"))
        for p in pathlib.Path(TESTS, "slurm").glob("test_*.py")
    )


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
