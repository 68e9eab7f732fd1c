"""The shipped two-node NCCL and training jobs ask Slurm for one leaf switch (sbatch --switches:
SchedMD/slurm doc/man/man1/sbatch.1 at slurm-26-05-3-1), with a wait Slurm honours (at most
max_switch_wait, 300 s by default: slurm.conf SchedulerParameters); the sanity job, which checks
the fabric and not its speed, asks for no placement (docs/topology.md)."""

import re

import pytest

from tests.repo.test_job_requeue import _directives
from tests.support.paths import REPO

PLACED = ("nccl-allreduce.sbatch", "nccl-allgather.sbatch", "finetune.sbatch")
MAX_SWITCH_WAIT = 300


def _switches(name: str) -> list[str]:
    return [d for d in _directives((REPO / "jobs" / name).read_text()) if d.startswith("--switches")]


@pytest.mark.parametrize("job", PLACED)
def test_a_multi_node_job_asks_for_one_switch_within_the_wait_slurm_allows(job):
    (directive,) = _switches(job)
    minutes, seconds = re.fullmatch(r"--switches=1@(\d+):(\d\d)", directive).groups()
    assert 0 < int(minutes) * 60 + int(seconds) <= MAX_SWITCH_WAIT


def test_the_sanity_job_asks_for_no_placement():
    assert _switches("sanity.sbatch") == []
