"""Every shipped batch job asks to be requeued when its node fails (sbatch --requeue: SchedMD/slurm
doc/man/man1/sbatch.1 at slurm-26-05-3-1), so the promise in docs/health.md holds whatever the
cluster's JobRequeue default; and that default is written into slurm.conf, not left to Slurm's."""

import re

import pytest

from tests.support.paths import REPO
from tests.support.slinky_conf import Release

JOBS = sorted((REPO / "jobs").glob("*.sbatch"))


def _directives(text: str) -> list[str]:
    """The #SBATCH lines sbatch reads: those before the first line that is neither a comment nor blank."""
    found = []
    for line in text.splitlines()[1:]:
        if line.startswith("#SBATCH"):
            found.append(line.split(None, 1)[1].strip())
        elif line.strip() and not line.startswith("#"):
            break
    return found


def test_there_are_shipped_jobs():
    assert len(JOBS) >= 5


@pytest.mark.parametrize("job", JOBS, ids=lambda p: p.name)
def test_each_shipped_job_asks_to_be_requeued_after_a_node_failure(job):
    directives = _directives(job.read_text())
    assert "--requeue" in directives and "--no-requeue" not in directives, directives


def test_the_cluster_requeues_batch_jobs_by_default(rendered):
    conf = Release.from_documents(rendered["slurm"]).slurm_conf()
    assert re.findall(r"^JobRequeue=(\S+)$", conf, re.M) == ["1"]
