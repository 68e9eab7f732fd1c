"""The jobs on a real two-node Slurm 26.05 cluster shaped as the Slinky operator runs it
(local_slurm.py: the slurm.conf, gres.conf and slurmd --conf of the release the chart renders from
the program's values), in CPU mode: the same job files and the same cluster.env the program stages
onto /shared, reached through environment overrides only."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import time

import pytest

from cluster_programs import rollout
from model.facts import versions
from tests.support.paths import REPO
from tests.support.slurm_cluster import running_cluster
from tools import command_output

ROOT = REPO
pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def slurm(tmp_path_factory, rendered):
    with running_cluster(tmp_path_factory, rendered, "the job tests") as cluster:
        yield cluster


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
    # Dynamic nodes are listed in registration order: slinky-[0-1] or slinky-[1,0].
    assert "nnodes=2" in out or re.search(r"job \d+ on slinky-\[(0-1|0,1|1,0)\]", out), out[:500]


def test_verify_parses_mpi_list_of_slurm_26_05(slurm):
    """Debian's 26.05 build carries no mpi/pmix plugin (test_pmix.py covers PMIx on 24.11)."""
    listed = slurm.run(["srun", "--mpi=list"])
    assert command_output.mpi_types(listed.stdout + listed.stderr) == ["none", "cray_shasta", "pmi2"], (
        listed.stdout
    )


def test_cluster_runs_the_models_slurm_release(slurm):
    # The sid root (roots/sid.packages) runs the release the slurmd image is built on.
    assert slurm.run(["slurmctld", "-V"]).stdout.strip() == f"slurm-wlm {versions.SLURM_RELEASE}"
    assert slurm.run(["sinfo", "-V"]).stdout.strip() == f"slurm-wlm {versions.SLURM_RELEASE}"


# The transport check on real NCCL log lines: "Selected provider is efa" (aws/aws-ofi-nccl
# src/nccl_ofi_net.cpp) against NCCL's "Using network Socket" fallback (vllm-project/vllm issue #5484).

EFA_LINES = "NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 1 nics)\n"
SOCKET_LINES = (
    "NCCL INFO NET/Plugin: Could not find: libnccl-net.so\n"
    "NCCL INFO NET/Socket : Using [0]eth0:10.0.1.23<0>\nNCCL INFO Using network Socket\n"
)


def _check(tmp_path, log_text, ranks, **env):
    log = tmp_path / "ranks.log"
    log.write_text(log_text)
    return subprocess.run(
        ["bash", "-c", f"source {ROOT}/jobs/lib/checks.sh; check_transport {log} {ranks}"],
        env={**os.environ, "DIST_BACKEND": "nccl", **env},
        capture_output=True,
        text=True,
    )


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
    scripts = [
        *sorted((ROOT / "jobs").glob("*.sbatch")),
        *sorted((ROOT / "jobs/lib").glob("*.sh")),
        *sorted((ROOT / "image").glob("*.sh")),
        *sorted((ROOT / "tests").glob("*.sh")),
        *sorted((ROOT / "tools").glob("*.sh")),
        ROOT / ".ci/run",
    ]
    result = subprocess.run(
        [
            str(ROOT / ".venv/bin/shellcheck"),
            "-x",
            "-P",
            "SCRIPTDIR",
            "-P",
            "SCRIPTDIR/..",
            *map(str, scripts),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout


# A NodeSet pod replaced (rolling update after an image change) on the real cluster: the operator's
# preStop hook sets the node DOWN, the pod's slurmd stops, a new pod starts `slurmd -Z` under the same
# name. The state strings are what Slurm 26.05.5 printed here.


def _nodes(slurm) -> list[rollout.SlurmNode]:
    """The nodes as verify and the readiness Job read them (rollout.parse_scontrol)."""
    return rollout.parse_scontrol(slurm.run(["scontrol", "-o", "show", "node"]).stdout)


def _stuck(slurm) -> list[str]:
    return [n.name for n in _nodes(slurm) if n.stuck]


def _all_idle(slurm, timeout=60):
    """Node states change asynchronously (a finished step leaves a node COMPLETING for a moment)."""
    deadline = time.time() + timeout
    while (states := list(slurm.states().values())) != ["idle", "idle"] and time.time() < deadline:
        time.sleep(0.5)
    return states


def _scontrol_node(slurm, node) -> str:
    return slurm.run(["scontrol", "show", "node", "-o", node]).stdout


def test_prestop_leaves_the_node_down_with_the_operator_reason_until_the_new_pod(slurm):
    assert _all_idle(slurm) == ["idle", "idle"]
    assert slurm.prestop("slinky-1").returncode == 0
    record = _scontrol_node(slurm, "slinky-1")
    assert "State=DOWN+DYNAMIC_NORM " in record, record
    assert re.search(r"Reason=slurm-operator: Pod is terminating \[root@[\dT:-]+\]$", record.strip()), record
    assert slurm.states() == {"slinky-0": "idle", "slinky-1": "down"}
    assert _stuck(slurm) == ["slinky-1"]
    slurm.stop_slurmd("slinky-1")
    assert "State=DOWN+DYNAMIC_NORM " in _scontrol_node(slurm, "slinky-1")
    slurm.start_slurmd("slinky-1")
    # ReturnToService=2 (the release's extra config): the re-registered node is usable again.
    slurm.wait_for_states({"slinky-0": "idle", "slinky-1": "idle"}, 30)
    record = _scontrol_node(slurm, "slinky-1")
    assert "State=IDLE+DYNAMIC_NORM " in record and "Reason=" not in record, record
    assert _stuck(slurm) == [] and all(n.usable for n in _nodes(slurm))


def test_a_replaced_pod_takes_jobs_again(slurm):
    slurm.replace_pod("slinky-0")
    slurm.wait_for_states({"slinky-0": "idle", "slinky-1": "idle"}, 30)
    step = slurm.run(["srun", "-N2", "hostname"], timeout=60)
    assert step.returncode == 0 and sorted(step.stdout.split()) == ["slinky-0", "slinky-1"], step.stderr
