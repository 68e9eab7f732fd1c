"""How `make test` spreads the suite over pytest-xdist workers: the real-cluster tests, which all
live in the layer folder tests/slurm/, form one unit of work that one worker runs first and alone
in order (one cluster at a time: they share one network namespace with fixed ports, the root
filesystems and the cgroup v1 directories named by node); every other test is a unit of its own.

Not xdist's own `xdist_group` + `--dist loadgroup`: pytest-xdist 3.8.0 groups by renaming the item
(`item._nodeid = ...@group`, src/xdist/remote.py), and pytest 9 reads a node's id from `_id`
(src/_pytest/nodes.py `Node.nodeid`), so the group never reaches the scheduler and two workers
start clusters at once. A scheduler that groups by the folder needs no item renamed."""

from __future__ import annotations

from typing import Sequence, TypeVar

from xdist.scheduler import LoadScopeScheduling

CLUSTER_TESTS = "tests/slurm/"

T = TypeVar("T")


def work_unit(nodeid: str) -> str:
    """The unit a test is scheduled in: all of tests/slurm/ together, any other test alone."""
    return CLUSTER_TESTS if nodeid.startswith(CLUSTER_TESTS) else nodeid


def cluster_tests_first(items: Sequence[T], nodeid=lambda item: item.nodeid) -> list[T]:
    """The items with the cluster tests first, each part in collection order: the longest unit
    starts at once and the short ones fill the other workers around it."""
    return sorted(items, key=lambda item: work_unit(nodeid(item)) != CLUSTER_TESTS)


class ClusterTestsOnOneWorker(LoadScopeScheduling):
    """xdist's scope scheduling with the units of work_unit."""

    def _split_scope(self, nodeid: str) -> str:
        return work_unit(nodeid)
