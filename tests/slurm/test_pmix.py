"""The walkthrough's nccl-tests launch path, `srun --mpi=pmix` of an OpenMPI program, on real MPI
ranks across two nodes. Debian dropped Slurm's PMIx plugin after 24.11, so this cluster runs
trixie's Slurm 24.11.5 (mpi_pmix_v5) with its OpenMPI 5, in the same Slinky shape as the 26.05
cluster of the job tests."""

from __future__ import annotations

import pathlib
import re

import pytest

from model.builders.job_environment import PMIX_ENVIRONMENT
from tests.support.paths import DATA
from tests.support.slurm_cluster import running_cluster
from tools import command_output

pytestmark = pytest.mark.slurm
SOURCE = DATA / "mpi_ranks.c"
# All "nodes" share this machine's one network namespace: OpenMPI's TCP transport has to be allowed
# onto loopback, which it excludes by default; PMIx's shared-memory datastore is left out (hash).
# The point-to-point layer is pinned to ob1 over those transports, as the transports are: the root
# also has UCX (libucs, loaded in the crash below), and OpenMPI selects a PML in each process on
# its own, ucx first where it initialises. Once in nine runs a rank died in MPI_Init inside
# mca_pml_ob1_recv_frag_callback_match with UCX's error handler on the stack, which two ranks on
# different PMLs would explain; with the PML named, each rank takes the same one, not a guess.
MPI_ENV = {
    "OMPI_MCA_pml": "ob1",
    "OMPI_MCA_btl": "self,tcp",
    "OMPI_MCA_btl_tcp_if_include": "lo",
    "OMPI_MCA_oob_tcp_if_include": "lo",
    "PMIX_MCA_gds": "hash",
}
RANK_LINE = re.compile(r"rank=(\d+) size=(\d+) host=(\S+) sum=(\d+) libpmix=(\S+) stepd_libpmix=(\S+)")


@pytest.fixture(scope="module")
def pmix_cluster(tmp_path_factory, rendered):
    with running_cluster(tmp_path_factory, rendered, "the PMIx tests", suite="trixie") as cluster:
        yield cluster


@pytest.fixture(scope="module")
def program(pmix_cluster, tmp_path_factory) -> pathlib.Path:
    """mpi_ranks.c built with the root's mpicc (the system OpenMPI), on the login pod."""
    out = tmp_path_factory.mktemp("mpi") / "mpi_ranks"
    built = pmix_cluster.run(["mpicc", "-O2", "-o", str(out), str(SOURCE)])
    assert built.returncode == 0, built.stderr
    return out


def _ranks(result) -> list[tuple]:
    return [m.groups() for m in map(RANK_LINE.match, result.stdout.splitlines()) if m]


def test_srun_lists_pmix(pmix_cluster):
    listed = pmix_cluster.run(["srun", "--mpi=list"])
    text = listed.stdout + listed.stderr
    # 24.11.5 prints the types, then "specific pmix plugin versions available: pmix_v5".
    assert "pmix" in command_output.mpi_types(text), text
    assert re.search(r"^specific pmix plugin versions available: .*\bpmix_v5\b", text, re.M), text


def test_srun_pmix_launches_four_mpi_ranks_on_two_nodes(pmix_cluster, program):
    step = pmix_cluster.run(
        ["srun", "--mpi=pmix", "-N2", "-n4", "--ntasks-per-node=2", str(program)], env=MPI_ENV, timeout=120
    )
    assert step.returncode == 0, step.stdout + step.stderr
    ranks = _ranks(step)
    assert sorted(int(r[0]) for r in ranks) == [0, 1, 2, 3], step.stdout + step.stderr
    assert {r[1] for r in ranks} == {"4"} and {r[3] for r in ranks} == {"6"}  # 0+1+2+3
    assert {r[2] for r in ranks} == set(pmix_cluster.nodes)


def test_slurm_plugin_and_openmpi_load_the_same_libpmix(pmix_cluster, program):
    step = pmix_cluster.run(["srun", "--mpi=pmix", "-N2", "-n2", str(program)], env=MPI_ENV, timeout=120)
    assert step.returncode == 0, step.stdout + step.stderr
    ranks = _ranks(step)
    assert len(ranks) == 2, step.stdout + step.stderr
    for _, _, _, _, mine, stepd in ranks:
        assert mine != "none" and mine == stepd, (mine, stepd)


def test_a_step_without_pmix_is_not_one_world(pmix_cluster, program):
    """Without the plugin each task starts alone (singleton MPI): the rank-count check above fails."""
    step = pmix_cluster.run(["srun", "--mpi=none", "-N2", "-n2", str(program)], env=MPI_ENV, timeout=120)
    assert {r[1] for r in _ranks(step)} != {"2"}, step.stdout + step.stderr


def test_mpi_conf_gives_pmix_steps_and_only_them_the_pmix_settings(pmix_cluster):
    # The release's mpi.conf (model/builders/job_environment.py mpi_conf), served configless; no
    # job environment sets them (cluster.env no longer does).
    names = sorted(PMIX_ENVIRONMENT)
    shown = {}
    for mpi in ("pmix", "none"):
        step = pmix_cluster.run(["srun", f"--mpi={mpi}", "-N1", "-n1", "printenv", *names], timeout=120)
        shown[mpi] = step.stdout.split()
    assert shown == {"pmix": [PMIX_ENVIRONMENT[n] for n in names], "none": []}
