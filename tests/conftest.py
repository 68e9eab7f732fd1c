"""The fixtures every layer shares: the dev stack's graph, its rendered charts, the reference
data, the jobs as staged. Helpers that tests import live in tests/support/."""

import pathlib
import sys

import pytest

from components.job_staging import job_files
from devkit import reference_data
from devkit.offline_run import Graph, run_program
from model.builders.job_environment import ENV_FILE, cluster_environment, render
from tests.support.scheduling import ClusterTestsOnOneWorker, cluster_tests_first
from tests.support.slurm_cluster import WALKTHROUGH


@pytest.fixture(scope="session")
def dev() -> Graph:
    """The dev stack's resource graph (Pulumi.yaml defaults + Pulumi.dev.yaml)."""
    return run_program("dev")


@pytest.fixture(scope="session")
def shared_ref() -> pathlib.Path:
    """The reference data directory ($SLINKY_EKS_REF or ../shared/ref); missing fails the test."""
    try:
        return reference_data.ref_root()
    except reference_data.ReferenceDataMissing as e:
        pytest.fail(str(e))


@pytest.fixture(scope="session")
def rendered(dev) -> dict[str, list[dict]]:
    """Every helm Release of the dev stack rendered from its reference chart, by release name."""
    from devkit.chart_render import render_graph_releases

    return render_graph_releases(dev)


def pytest_collection_modifyitems(config, items) -> None:
    """The real-cluster tests first (tests/support/scheduling.py), with or without workers."""
    items[:] = cluster_tests_first(items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under pytest-xdist (make test: -n) the real-cluster tests run on one worker, one cluster at
    a time (tests/support/scheduling.py)."""
    return ClusterTestsOnOneWorker(config, log)


def pytest_report_header(config) -> list[str]:
    """The first lines of the test log: which reference data this run reads
    (devkit/reference_data.py) and the Slurm the cluster tests run (`slurmctld -V` in each root
    filesystem)."""
    import subprocess

    from tests.support.local_slurm import ROOTS

    try:
        lines = [reference_data.source()]
    except reference_data.ReferenceDataMissing as e:
        lines = [f"reference data: MISSING ({e}); the tests that read it fail"]
    roots = sorted(ROOTS.glob("*/.slinky-stamp"))
    for root in roots:
        version = subprocess.run(
            ["chroot", str(root.parent), "slurmctld", "-V"], capture_output=True, text=True
        )
        lines.append(
            f"slurmctld -V ({root.parent.name} root): {version.stdout.strip() or version.stderr.strip()}"
        )
    return (
        lines if roots else lines + ["slurmctld -V: no Slurm root filesystem built (make test builds them)"]
    )


# The jobs as the program stages them, and the CPU mode the job tests run them in.
@pytest.fixture(scope="module")
def staged(tmp_path_factory) -> pathlib.Path:
    """/shared/jobs as the program stages it, for the walkthrough's g6.12xlarge (the job tests' cluster)."""
    jobs = tmp_path_factory.mktemp("shared") / "jobs"
    for key, text in {**job_files(), ENV_FILE: render(cluster_environment(WALKTHROUGH))}.items():
        path = jobs / key.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o755)
    return jobs


@pytest.fixture
def cpu_mode(staged, tmp_path) -> dict[str, str]:
    return {
        "JOBS_DIR": str(staged),
        "PYTHON": sys.executable,
        "DIST_BACKEND": "gloo",
        "EXPECT_EFA": "0",
        "NPROC_PER_NODE": "2",
        "GPUS_PER_NODE": "2",
        "ALLREDUCE_BYTES": str(16 * 2**20),
        "TINY_MODEL": "1",
        "MAX_STEPS": "3",
        "HF_HOME": str(tmp_path / "hf"),
        "OUTPUT_DIR": str(tmp_path / "lora-out"),
        "OMP_NUM_THREADS": "1",
        # Job logs where /shared/logs would be: sbatch's input variable beats #SBATCH --output.
        "LOG_DIR": str(tmp_path),
        "SBATCH_OUTPUT": str(tmp_path / "%x-%j.out"),
    }
