import contextlib
import os
import pathlib
import sys
from typing import Iterator

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from components.job_staging import job_files  # noqa: E402
from local_slurm import LocalSlurm, RootMissing  # noqa: E402
from model.catalog import CATALOG  # noqa: E402
from model.job_environment import ENV_FILE, cluster_environment, render  # noqa: E402
from slinky_conf import Release  # noqa: E402
from tools import reference_data  # noqa: E402
from tools.offline_run import Graph, run_program  # noqa: E402


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


def pytest_report_header(config) -> list[str]:
    """The first lines of the test log: which reference data this run reads
    (tools/reference_data.py) and the Slurm the cluster tests run (`slurmctld -V` in each root
    filesystem)."""
    import subprocess

    from local_slurm import ROOTS
    try:
        lines = [reference_data.source()]
    except reference_data.ReferenceDataMissing as e:
        lines = [f"reference data: MISSING ({e}); the tests that read it fail"]
    roots = sorted(ROOTS.glob("*/.slinky-stamp"))
    for root in roots:
        version = subprocess.run(["chroot", str(root.parent), "slurmctld", "-V"], capture_output=True, text=True)
        lines.append(f"slurmctld -V ({root.parent.name} root): {version.stdout.strip() or version.stderr.strip()}")
    return lines if roots else lines + ["slurmctld -V: no Slurm root filesystem built (make test builds them)"]


# The jobs as the program stages them, and the CPU mode the job tests run them in.
WALKTHROUGH = CATALOG["g6.12xlarge"]


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
    return {"JOBS_DIR": str(staged), "PYTHON": sys.executable, "DIST_BACKEND": "gloo",
            "EXPECT_EFA": "0", "NPROC_PER_NODE": "2", "GPUS_PER_NODE": "2", "ALLREDUCE_BYTES": str(16 * 2**20),
            "TINY_MODEL": "1", "MAX_STEPS": "3", "HF_HOME": str(tmp_path / "hf"),
            "OUTPUT_DIR": str(tmp_path / "lora-out"), "OMP_NUM_THREADS": "1",
            # Job logs where /shared/logs would be: sbatch's input variable beats #SBATCH --output.
            "LOG_DIR": str(tmp_path), "SBATCH_OUTPUT": str(tmp_path / "%x-%j.out")}


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
