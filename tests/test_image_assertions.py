"""image/assert-image.sh fails the build, naming what is missing, for each broken rule; and
passes a good image."""
import subprocess

import pytest

from fake_root import SITE, assert_image, good_root, remove, script, shared_library


@pytest.fixture
def root(tmp_path):
    return good_root(tmp_path / "root")


def _fails_with(root, *expected):
    result = assert_image(root)
    assert result.returncode == 1, result.stdout + result.stderr
    for text in expected:
        assert text in result.stderr, result.stderr
    return result


def test_good_image_passes(root):
    result = assert_image(root)
    assert result.returncode == 0, result.stderr
    assert "all checks passed" in result.stdout


def test_registration_lists_torch_nccl_efa_and_plugin_dirs(root):
    dirs = (root / "etc/ld.so.conf.d/00-slinky-eks.conf").read_text().split()
    assert dirs[:3] == [f"/{SITE}/nvidia/nccl/lib", "/opt/amazon/efa/lib", "/opt/amazon/ofi-nccl/lib"]
    assert "/opt/amazon/openmpi/lib" not in dirs


def test_registration_finds_the_plugin_in_the_older_arch_directory(tmp_path):
    root = tmp_path / "root"
    good = good_root(root)
    remove(good / "opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so")
    shared_library(good / "opt/amazon/ofi-nccl/lib/x86_64-linux-gnu/libnccl-net.so", [good / "opt/amazon/efa/lib/libfabric.so.1"])
    subprocess.run(["bash", "image/register-libraries.sh", "--root", str(good)], check=True, capture_output=True)
    assert assert_image(good).returncode == 0


def test_missing_libfabric_fails(root):
    remove(root / "opt/amazon/efa/lib/libfabric.so.1")
    _fails_with(root, "libfabric.so.1 does not resolve")


def test_libfabric_without_efa_provider_fails(root):
    script(root / "opt/amazon/efa/bin/fi_info", 'printf "tcp:\\nudp:\\n"\n')
    _fails_with(root, "libfabric has no efa provider")


def test_missing_fi_info_fails(root):
    remove(root / "opt/amazon/efa/bin/fi_info")
    _fails_with(root, "fi_info missing")


def test_missing_ofi_plugin_fails(root):
    remove(root / "opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so")
    _fails_with(root, "aws-ofi-nccl plugin (libnccl-net-ofi.so / libnccl-net.so) not found")


def test_ofi_plugin_with_unresolved_libraries_fails(root, tmp_path):
    # A plugin linked against a libfabric that is not on the loader path.
    elsewhere = tmp_path / "elsewhere" / "libfabric-old.so.1"
    shared_library(elsewhere)
    shared_library(root / "opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so", [elsewhere])
    _fails_with(root, "has unresolved libraries: libfabric-old.so.1")


def test_unpinned_nccl_network_fails(root):
    (root / "etc/nccl.conf").write_text("NCCL_DEBUG=INFO\n")
    _fails_with(root, "does not pin NCCL_NET")


def test_libnccl_not_on_the_loader_path_fails(root):
    remove(root / SITE / "nvidia/nccl/lib/libnccl.so.2")
    _fails_with(root, "libnccl.so.2 does not resolve")


def test_libnccl_other_than_torchs_fails(root):
    other = root / "usr/local/lib/libnccl.so.2"
    shared_library(other)
    conf = root / "etc/ld.so.conf.d/00-slinky-eks.conf"
    conf.write_text("/usr/local/lib\n" + conf.read_text())
    _fails_with(root, "libnccl.so.2 resolves to", "but torch loads")


@pytest.mark.parametrize("module", ["torch", "transformers", "peft", "trl"])
def test_python_module_that_does_not_import_fails(root, module):
    (root / "broken-modules").write_text(module + "\n")
    _fails_with(root, f"python module {module} does not import")


def test_wrong_slurm_version_fails(root):
    result = assert_image(root, "25.11.1")
    assert result.returncode == 1 and "slurmd is Slurm '26.05.2', expected 25.11.1" in result.stderr


def test_missing_slurmd_fails(root):
    remove(root / "usr/sbin/slurmd")
    _fails_with(root, "slurmd missing")


def test_missing_libpmix_fails(root):
    remove(root / "usr/lib/x86_64-linux-gnu/libpmix.so.2")
    _fails_with(root, "libpmix.so.2 does not resolve")


def test_missing_slurm_pmix_plugin_fails(root):
    remove(root / "usr/lib/x86_64-linux-gnu/slurm/mpi_pmix_v5.so")
    _fails_with(root, "mpi/pmix plugin (mpi_pmix*.so) not found")


def test_every_failure_is_reported_not_only_the_first(root):
    remove(root / "opt/amazon/efa/bin/fi_info")
    remove(root / "usr/sbin/slurmd")
    result = _fails_with(root, "fi_info missing", "slurmd missing")
    assert "2 check(s) failed" in result.stderr
