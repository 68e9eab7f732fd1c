"""A real Slurm cluster for a test module: the jobs' cluster, started from the dev stack's render."""
import contextlib
import os
from typing import Iterator

import pytest

from model.catalog import CATALOG
from tests.support.local_slurm import LocalSlurm, RootMissing
from tests.support.slinky_conf import Release

# The walkthrough's g6.12xlarge: the instance type of the job tests' cluster.
WALKTHROUGH = CATALOG["g6.12xlarge"]


@contextlib.contextmanager
def running_cluster(tmp_path_factory, rendered, who: str, suite: str = "sid") -> Iterator[LocalSlurm]:
    """A real Slurm cluster in the Slinky shape (tests/local_slurm.py) from the dev stack's rendered
    `slurm` release, for the walkthrough's g6.12xlarge; `who` names the tests in the failure."""
    if os.geteuid() != 0:
        pytest.fail(f"{who} start a real Slurm cluster in namespaces: they need root")
    try:
        cluster = LocalSlurm(tmp_path_factory.mktemp(suite), Release.from_documents(rendered["slurm"]),
                             WALKTHROUGH.gpu_model, WALKTHROUGH.gpus, suite=suite)
    except RootMissing as e:
        pytest.fail(str(e))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
