"""The jobs on a real two-node Slurm cluster (Debian's slurmctld/slurmd/munge, PMIx), in CPU mode:
the same job files and the same cluster.env the program stages onto /shared, reached through
environment overrides only."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

import pytest

from components.catalog import CATALOG
from components.job_environment import ENV_FILE, cluster_environment, render
from components.job_staging import job_files
from fake_root import cuda_wheels, shared_library
from local_slurm import LocalSlurm, missing_binaries
from tools import reference_data, slurm_state

ROOT = pathlib.Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    if os.geteuid() != 0 or missing_binaries():
        pytest.fail("the job tests start a real Slurm cluster: they need root and Debian's slurmctld, "
                    f"slurmd, slurm-client, munge and libpmix-dev (missing: {missing_binaries()}); "
                    "`make test` installs them")
    cluster = LocalSlurm(tmp_path_factory.mktemp("slurm")).start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def staged(tmp_path_factory) -> pathlib.Path:
    """/shared/jobs as the program stages it, for the walkthrough's g6.12xlarge."""
    jobs = tmp_path_factory.mktemp("shared") / "jobs"
    for key, text in {**job_files(), ENV_FILE: render(cluster_environment(CATALOG["g6.12xlarge"]))}.items():
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


def test_sanity_job_passes(slurm, staged, cpu_mode, tmp_path):
    state, code, out = slurm.sbatch(staged / "sanity.sbatch", tmp_path, cpu_mode)
    assert (state, code) == ("COMPLETED", "0:0"), out
    assert "all_reduce OK: value 4.0 == world_size 4.0" in out and "SANITY OK" in out


def test_sanity_job_steps_get_the_gpus_they_request(slurm, staged, cpu_mode, tmp_path):
    # The test cluster's nodes have gres/gpu:2; an --exclusive job's steps see them only when asked.
    state, _, out = slurm.sbatch(staged / "sanity.sbatch", tmp_path, cpu_mode)
    assert state == "COMPLETED", out
    seen = sorted(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("rank "))
    assert seen == ["CUDA_VISIBLE_DEVICES=0,1"] * 4, out


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
    assert "nnodes=2" in out or "on n[1-2]" in out


@pytest.fixture(scope="module")
def nccl_tests_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("shared-nccl") / "nccl-tests"


def _nccl_tests_build_env(cpu_mode, nccl_tests_dir, torch_nccl):
    """The CPU cluster's stand-ins for the image: PyPI's CUDA 13.0 wheels as CUDA_HOME and as
    torch's NCCL (a CPU torch loads none); the source from the pinned tarball; one GPU
    architecture and the static CUDA runtime (the wheels have no unversioned libcudart.so)."""
    wheels = cuda_wheels()
    return {**cpu_mode, "NCCL_TESTS_DIR": str(nccl_tests_dir),
            "NCCL_TESTS_SOURCE": str(reference_data.path("nccl-tests", "nccl-tests-v2.17.9.tar.gz")),
            "CUDA_HOME": str(wheels / "cu13"), "CUDARTLIB": "cudart_static",
            "NVCC_GENCODE": "-gencode=arch=compute_90,code=sm_90", "TORCH_NCCL": str(torch_nccl),
            # Where the image's loader cache has torch's NCCL (register-libraries.sh).
            "LD_LIBRARY_PATH": str(wheels / "nccl/lib")}


def test_nccl_tests_build_compiles_and_links_from_the_tarball(slurm, staged, cpu_mode, tmp_path, nccl_tests_dir):
    torch_nccl = cuda_wheels() / "nccl/lib/libnccl.so.2"
    env = _nccl_tests_build_env(cpu_mode, nccl_tests_dir, torch_nccl)
    state, code, out = slurm.sbatch(staged / "nccl-tests-build.sbatch", tmp_path, env, timeout=900)
    assert (state, code) == ("COMPLETED", "0:0"), out[-3000:]
    for binary in ("all_reduce_perf", "all_gather_perf"):
        assert f"{binary}: libnccl.so.2 => {torch_nccl}, libmpi.so.40 => " in out
        assert (nccl_tests_dir / "build" / binary).stat().st_size > 0
    assert "BUILD OK" in out


def test_nccl_tests_build_fails_when_the_binaries_load_another_nccl_than_torchs(
        slurm, staged, cpu_mode, tmp_path, nccl_tests_dir):
    # Runs after the build above: make finds the binaries up to date, the check runs again.
    if not (nccl_tests_dir / "build/all_reduce_perf").exists():
        pytest.fail("needs test_nccl_tests_build_compiles_and_links_from_the_tarball to have built")
    other = tmp_path / "torch/nvidia/nccl/lib/libnccl.so.2"
    shared_library(other)
    (other.parent.parent / "include").symlink_to(cuda_wheels() / "nccl/include")
    env = _nccl_tests_build_env(cpu_mode, nccl_tests_dir, other)
    state, _, out = slurm.sbatch(staged / "nccl-tests-build.sbatch", tmp_path, env)
    assert state == "FAILED", out[-3000:]
    assert f"loads libnccl.so.2 from {cuda_wheels() / 'nccl/lib/libnccl.so.2'}, not torch's {other}" in out
    assert "BUILD OK" not in out


def test_srun_offers_and_launches_pmix(slurm):
    listed = subprocess.run(["srun", "--mpi=list"], env=slurm.env, capture_output=True, text=True)
    assert "pmix" in listed.stdout + listed.stderr
    step = subprocess.run(["srun", "--mpi=pmix", "-N2", "-n4", "bash", "-c", "echo rank=$PMIX_RANK"],
                          env=slurm.env, capture_output=True, text=True, timeout=60)
    assert step.returncode == 0, step.stderr
    assert sorted(step.stdout.split()) == [f"rank={i}" for i in range(4)]


# Stuck nodes on a real Slurm: the same resume script `verify --fix` and `pulumi up` run.

def _sinfo(slurm):
    out = subprocess.run(["sinfo", "-N", "-h", "-o", "%N %T %G"], env=slurm.env, capture_output=True, text=True)
    return slurm_state.parse_sinfo(out.stdout)


def _all_idle(slurm, timeout=60):
    """Node states change asynchronously (a finished step leaves a node COMPLETING for a moment)."""
    deadline = time.time() + timeout
    while (states := [n.state for n in _sinfo(slurm)]) != ["idle", "idle"] and time.time() < deadline:
        time.sleep(0.5)
    return states


@pytest.mark.parametrize("state", ["down", "drain"])
def test_resume_script_brings_stuck_nodes_back(slurm, state):
    assert _all_idle(slurm) == ["idle", "idle"]
    subprocess.run(["scontrol", "update", "nodename=n2", f"state={state}", "reason=image change"],
                   env=slurm.env, check=True)
    stuck = _sinfo(slurm)
    assert slurm_state.nodes_to_resume(stuck) == ["n2"], stuck
    scontrol = subprocess.run(["scontrol", "show", "node", "n2"], env=slurm.env, capture_output=True, text=True).stdout
    assert slurm_state.nodes_to_resume(slurm_state.parse_scontrol_nodes(scontrol)) == ["n2"]
    result = subprocess.run(["bash", str(ROOT / "tools/resume-nodes.sh"), "2", "30", "1"], env=slurm.env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "resuming n2" in result.stdout and "nodes ready: 2 of 2" in result.stdout
    assert _all_idle(slurm) == ["idle", "idle"]


def test_resume_script_fails_loudly_when_nodes_never_come_back(slurm):
    assert _all_idle(slurm) == ["idle", "idle"]
    result = subprocess.run(["bash", str(ROOT / "tools/resume-nodes.sh"), "3", "1", "1"], env=slurm.env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "FAILED: 2 of 3 Slurm nodes take jobs" in result.stderr


# The transport check on real NCCL log lines: "Selected provider is efa" (aws/aws-ofi-nccl
# src/nccl_ofi_net.cpp) against NCCL's "Using network Socket" fallback (vllm-project/vllm issue #5484).

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
