"""The jobs on a real two-node Slurm 26.05 cluster shaped as the Slinky operator runs it
(local_slurm.py: the slurm.conf, gres.conf and slurmd --conf of the release the chart renders from
the program's values), in CPU mode: the same job files and the same cluster.env the program stages
onto /shared, reached through environment overrides only."""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

from components.catalog import CATALOG
from components.job_environment import ENV_FILE, cluster_environment, render
from components.job_staging import job_files
from local_slurm import LocalSlurm, RootMissing
from slinky_conf import Release

ROOT = pathlib.Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slurm


WALKTHROUGH = CATALOG["g6.12xlarge"]


@pytest.fixture(scope="module")
def slurm(tmp_path_factory, rendered):
    if os.geteuid() != 0:
        pytest.fail("the job tests start a real Slurm cluster in namespaces: they need root")
    try:
        cluster = LocalSlurm(tmp_path_factory.mktemp("slurm"), Release.from_documents(rendered["slurm"]),
                             WALKTHROUGH.gpu_model, WALKTHROUGH.gpus)
    except RootMissing as e:
        pytest.fail(str(e))
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def staged(tmp_path_factory) -> pathlib.Path:
    """/shared/jobs as the program stages it, for the walkthrough's g6.12xlarge."""
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
            "EXPECT_EFA": "0", "NPROC_PER_NODE": "2", "ALLREDUCE_BYTES": str(16 * 2**20),
            "TINY_MODEL": "1", "MAX_STEPS": "3", "HF_HOME": str(tmp_path / "hf"),
            "OUTPUT_DIR": str(tmp_path / "lora-out"), "OMP_NUM_THREADS": "1",
            # Job logs where /shared/logs would be: sbatch's input variable beats #SBATCH --output.
            "LOG_DIR": str(tmp_path), "SBATCH_OUTPUT": str(tmp_path / "%x-%j.out")}


def test_sanity_job_passes(slurm, staged, cpu_mode, tmp_path):
    state, code, out = slurm.sbatch(staged / "sanity.sbatch", tmp_path, cpu_mode)
    assert (state, code) == ("COMPLETED", "0:0"), out
    assert "all_reduce OK: value 4.0 == world_size 4.0" in out and "SANITY OK" in out


def test_sanity_job_fails_on_a_wrong_all_reduce(slurm, staged, cpu_mode, tmp_path):
    state, _, out = slurm.sbatch(staged / "sanity.sbatch", tmp_path, {**cpu_mode, "SANITY_INJECT_FAULT": "1"})
    assert state == "FAILED", out
    assert "all_reduce FAILED: value 3.0 != world_size 4.0" in out and "SANITY OK" not in out


def test_sanity_job_fails_when_efa_is_expected_but_not_in_use(slurm, staged, cpu_mode, tmp_path):
    state, _, out = slurm.sbatch(staged / "sanity.sbatch", tmp_path, {**cpu_mode, "EXPECT_EFA": "1"})
    assert state == "FAILED", out
    assert "FAILED: EXPECT_EFA=1 but DIST_BACKEND=gloo" in out


def test_finetune_two_nodes_two_processes_writes_adapters(slurm, staged, cpu_mode, tmp_path):
    state, code, out = slurm.sbatch(staged / "finetune.sbatch", tmp_path, cpu_mode, timeout=600)
    assert (state, code) == ("COMPLETED", "0:0"), out
    adapters = pathlib.Path(cpu_mode["OUTPUT_DIR"])
    assert (adapters / "adapter_model.safetensors").stat().st_size > 0
    assert (adapters / "adapter_config.json").exists()
    metrics = [line for line in out.splitlines() if line.startswith("METRICS ")]
    assert any('"loss"' in m and '"mean_token_accuracy"' in m for m in metrics), out[-3000:]
    assert f"Done. LoRA adapters saved to {adapters}" in out
    # Dynamic nodes are listed in registration order: slinky-[0-1] or slinky-[1,0].
    assert "nnodes=2" in out or re.search(r"job \d+ on slinky-\[(0-1|0,1|1,0)\]", out), out[:500]


# The transport check on real NCCL log lines (aws-facts §3b).

EFA_LINES = "NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 1 nics)\n"
SOCKET_LINES = ("NCCL INFO NET/Plugin: Could not find: libnccl-net.so\n"
                "NCCL INFO NET/Socket : Using [0]eth0:10.0.1.23<0>\nNCCL INFO Using network Socket\n")


def _check(tmp_path, log_text, ranks, **env):
    log = tmp_path / "ranks.log"
    log.write_text(log_text)
    return subprocess.run(["bash", "-c", f'source {ROOT}/jobs/lib/checks.sh; check_transport {log} {ranks}'],
                          env={**os.environ, "DIST_BACKEND": "nccl", **env}, capture_output=True, text=True)


def test_transport_check_passes_when_every_rank_selected_efa(tmp_path):
    assert _check(tmp_path, EFA_LINES * 8, 8, EXPECT_EFA="1").returncode == 0


def test_transport_check_fails_on_socket_fallback(tmp_path):
    result = _check(tmp_path, EFA_LINES * 7 + SOCKET_LINES, 8, EXPECT_EFA="1")
    assert result.returncode == 1 and "fell back to TCP sockets" in result.stderr


def test_transport_check_fails_without_the_efa_provider(tmp_path):
    result = _check(tmp_path, "NCCL INFO Using network Libfabric\n", 8, EXPECT_EFA="1")
    assert result.returncode == 1 and "never selected the EFA provider" in result.stderr


def test_transport_check_fails_when_some_ranks_missed_efa(tmp_path):
    result = _check(tmp_path, EFA_LINES * 3, 8, EXPECT_EFA="1")
    assert result.returncode == 1 and "only 3 of 8 ranks" in result.stderr


def test_transport_is_not_checked_off_efa(tmp_path):
    assert _check(tmp_path, SOCKET_LINES, 8, EXPECT_EFA="0").returncode == 0


def test_every_script_passes_shellcheck():
    scripts = [*sorted((ROOT / "jobs").glob("*.sbatch")), *sorted((ROOT / "jobs/lib").glob("*.sh")),
               *sorted((ROOT / "image").glob("*.sh")), *sorted((ROOT / "tests").glob("*.sh")),
               *sorted((ROOT / "tools").glob("*.sh")), ROOT / ".ci/run"]
    result = subprocess.run([str(ROOT / ".venv/bin/shellcheck"), "-x", "-P", "SCRIPTDIR", "-P", "SCRIPTDIR/..",
                             *map(str, scripts)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


