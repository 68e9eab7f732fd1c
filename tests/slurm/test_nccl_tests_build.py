"""nccl-tests-build.sbatch on a real Slurm cluster: nccl-tests v2.17.9 from the pinned source
tarball, compiled and linked (MPI=1 against the system OpenMPI, NCCL from torch's wheel) with
PyPI's CUDA 13.3 nvcc (the DLC's). The binaries are not run: this machine has no GPU.

The cluster runs in the trixie root (glibc 2.41, gcc 14, OpenMPI 5), not the sid root of the job
tests: CUDA 13.0's nvcc failed on glibc >= 2.42 headers (13.2 added the guard) and sid has glibc
2.43; trixie stays the root nearest the image's final stage (ubuntu24.04, glibc 2.39: image/README.md)."""

from __future__ import annotations

import shutil

import pytest

from devkit import reference_data
from tests.support.fake_root import cuda_wheels, shared_library
from tests.support.slurm_cluster import running_cluster

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def toolchain_cluster(tmp_path_factory, rendered):
    with running_cluster(tmp_path_factory, rendered, "the nccl-tests build tests", suite="trixie") as cluster:
        yield cluster


@pytest.fixture(scope="module")
def nccl_tests_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("shared-nccl") / "nccl-tests"


def _build_env(cpu_mode, nccl_tests_dir, torch_nccl):
    """The CPU cluster's stand-ins for the image: PyPI's CUDA 13.3 wheels as CUDA_HOME and as
    torch's NCCL (a CPU torch loads none); the source from the pinned tarball; one GPU
    architecture and the static CUDA runtime (the wheels have no unversioned libcudart.so)."""
    wheels = cuda_wheels()
    # The pods see the checkout and the test's temporary directories, not the reference data.
    source = nccl_tests_dir.parent / "nccl-tests-v2.17.9.tar.gz"
    if not source.exists():
        shutil.copyfile(reference_data.path("nccl-tests", "nccl-tests-v2.17.9.tar.gz"), source)
    return {
        **cpu_mode,
        "NCCL_TESTS_DIR": str(nccl_tests_dir),
        "NCCL_TESTS_SOURCE": str(source),
        "CUDA_HOME": str(wheels / "cu13"),
        "CUDARTLIB": "cudart_static",
        "NVCC_GENCODE": "-gencode=arch=compute_90,code=sm_90",
        "TORCH_NCCL": str(torch_nccl),
        # Where the image's loader cache has torch's NCCL (register-libraries.sh).
        "LD_LIBRARY_PATH": str(wheels / "nccl/lib"),
    }


def test_nccl_tests_build_compiles_and_links_from_the_tarball(
    toolchain_cluster, staged, cpu_mode, tmp_path, nccl_tests_dir
):
    torch_nccl = cuda_wheels() / "nccl/lib/libnccl.so.2"
    env = _build_env(cpu_mode, nccl_tests_dir, torch_nccl)
    state, code, out = toolchain_cluster.sbatch(
        staged / "nccl-tests-build.sbatch", tmp_path, env, timeout=900
    )
    assert (state, code) == ("COMPLETED", "0:0"), out[-3000:]
    for binary in ("all_reduce_perf", "all_gather_perf"):
        assert f"{binary}: libnccl.so.2 => {torch_nccl}, libmpi.so.40 => " in out
        assert (nccl_tests_dir / "build" / binary).stat().st_size > 0
    assert "BUILD OK" in out


def test_nccl_tests_build_fails_when_the_binaries_load_another_nccl_than_torchs(
    toolchain_cluster, staged, cpu_mode, tmp_path, nccl_tests_dir
):
    # Runs after the build above: make finds the binaries up to date, the check runs again.
    if not (nccl_tests_dir / "build/all_reduce_perf").exists():
        pytest.fail("needs test_nccl_tests_build_compiles_and_links_from_the_tarball to have built")
    other = tmp_path / "torch/nvidia/nccl/lib/libnccl.so.2"
    shared_library(other)
    (other.parent.parent / "include").symlink_to(cuda_wheels() / "nccl/include")
    env = _build_env(cpu_mode, nccl_tests_dir, other)
    state, _, out = toolchain_cluster.sbatch(staged / "nccl-tests-build.sbatch", tmp_path, env)
    assert state == "FAILED", out[-3000:]
    assert f"loads libnccl.so.2 from {cuda_wheels() / 'nccl/lib/libnccl.so.2'}, not torch's {other}" in out
    assert "BUILD OK" not in out
