"""image/assert-toolchain.sh: nvcc (PyPI's CUDA 13.3 wheels here) compiles and links a CUDA
program against torch's NCCL and the program finds that NCCL; one broken fixture per way it fails."""

import pytest

from tests.support.fake_root import SITE, assert_toolchain, remove, shared_library, toolchain_root


@pytest.fixture
def root(tmp_path):
    return toolchain_root(tmp_path / "root")


def test_nvcc_builds_and_runs_a_program_against_torchs_nccl(root):
    result = assert_toolchain(root)
    assert result.returncode == 0, result.stderr
    assert "nvcc 13.3 builds against torch's NCCL" in result.stdout and "NCCL 22907" in result.stdout


def test_missing_nvcc_fails(root):
    remove(root / "usr/local/cuda")
    result = assert_toolchain(root)
    assert result.returncode == 1 and "nvcc missing (/usr/local/cuda/bin/nvcc)" in result.stderr


def test_nccl_without_its_header_fails(root):
    remove(root / SITE / "nvidia/nccl/include")
    result = assert_toolchain(root)
    assert result.returncode == 1 and "no nccl.h beside torch's NCCL" in result.stderr


def test_a_program_finding_another_nccl_than_torchs_fails(root):
    other = root / "usr/local/lib/libnccl.so.2"
    shared_library(other)
    conf = root / "etc/ld.so.conf.d/00-slinky-eks.conf"
    conf.write_text("/usr/local/lib\n" + conf.read_text())
    result = assert_toolchain(root)
    assert result.returncode == 1
    assert f"loads {other}" in result.stderr and "but torch loads" in result.stderr
