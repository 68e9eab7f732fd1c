"""image/assert-image.sh fails the build, naming what is missing, for each broken rule; and
passes a good image."""

import subprocess

import pytest

from tests.support.fake_root import (
    EFA_LIB,
    MULTIARCH,
    OFI_LIB,
    OMPI_PMIX_COMPONENT,
    PMIX_PLUGIN,
    SITE,
    VENV,
    assert_image,
    good_root,
    needing_version,
    pmix,
    remove,
    script,
    shared_library,
)


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
    assert dirs[:3] == [f"/{SITE}/nvidia/nccl/lib", "/opt/amazon/efa/lib64", "/opt/amazon/ofi-nccl/lib64"]
    assert not any(d.startswith("/opt/amazon/openmpi") for d in dirs)


def _register(root):
    return subprocess.run(
        ["bash", "image/register-libraries.sh", "--root", str(root)], capture_output=True, text=True
    )


def test_registration_finds_the_plugin_in_the_older_arch_directory(tmp_path):
    good = good_root(tmp_path / "root")
    remove(good / OFI_LIB)
    shared_library(
        good / "opt/amazon/ofi-nccl/lib/x86_64-linux-gnu/libnccl-net-ofi.so",
        [good / EFA_LIB / "libfabric.so.1"],
    )
    assert _register(good).returncode == 0
    assert assert_image(good).returncode == 0


def test_registration_finds_libfabric_where_the_installer_puts_debs(tmp_path):
    # The EFA installer's Ubuntu packages install libfabric in lib, its RPMs in lib64.
    good = good_root(tmp_path / "root")
    remove(good / EFA_LIB)
    fabric = good / "opt/amazon/efa/lib/libfabric.so.1"
    shared_library(fabric)
    shared_library(good / OFI_LIB / "libnccl-net-ofi.so", [fabric])
    assert _register(good).returncode == 0
    assert "/opt/amazon/efa/lib\n" in (good / "etc/ld.so.conf.d/00-slinky-eks.conf").read_text()
    assert assert_image(good).returncode == 0


def test_registration_without_torchs_nccl_in_the_venv_fails(root):
    remove(root / SITE / "nvidia/nccl/lib/libnccl.so.2")
    result = _register(root)
    assert result.returncode == 1 and "torch's libnccl.so.2 not found (/opt/venv/" in result.stderr


def test_registration_names_the_plugin_file_for_nccl(root):
    conf = (root / "etc/nccl.conf").read_text().splitlines()
    assert "NCCL_NET_PLUGIN=ofi" in conf and "NCCL_NET=Libfabric" in conf and "NCCL_DEBUG=INFO" in conf


def test_missing_libfabric_fails(root):
    remove(root / EFA_LIB / "libfabric.so.1")
    _fails_with(root, "libfabric.so.1 does not resolve")


def test_libfabric_without_efa_provider_fails(root):
    script(root / "opt/amazon/efa/bin/fi_info", 'printf "tcp:\\nudp:\\n"\n')
    _fails_with(root, "libfabric has no efa provider")


def test_missing_fi_info_fails(root):
    remove(root / "opt/amazon/efa/bin/fi_info")
    _fails_with(root, "fi_info missing")


def test_missing_ofi_plugin_fails(root):
    remove(root / OFI_LIB / "libnccl-net-ofi.so")
    _fails_with(root, "NCCL's network plugin does not open: none of ofi libnccl-net-ofi.so resolves")


def test_plugin_reached_only_through_the_default_symlink_fails(root):
    # aws-ofi-nccl 1.16: NCCL's default name libnccl-net.so is a symlink ldconfig does not cache.
    conf = root / "etc/nccl.conf"
    conf.write_text(
        "".join(
            line
            for line in conf.read_text().splitlines(keepends=True)
            if not line.startswith("NCCL_NET_PLUGIN=")
        )
    )
    _fails_with(root, "none of libnccl-net.so resolves", "NCCL_NET_PLUGIN=unset")


def test_plugin_file_named_libnccl_net_opens_by_default(root):
    # aws-ofi-nccl 1.17 builds libnccl-net.so as a library of its own (soname libnccl-net.so).
    remove(root / OFI_LIB / "libnccl-net.so")
    shared_library(root / OFI_LIB / "libnccl-net.so", [root / EFA_LIB / "libfabric.so.1"])
    conf = root / "etc/nccl.conf"
    conf.write_text(conf.read_text().replace("NCCL_NET_PLUGIN=ofi\n", ""))
    result = assert_image(root)
    assert result.returncode == 0, result.stderr
    assert "plugin opens as libnccl-net.so" in result.stdout


def test_ofi_plugin_with_unresolved_libraries_fails(root, tmp_path):
    # A plugin linked against a libfabric that is not on the loader path.
    elsewhere = tmp_path / "elsewhere" / "libfabric-old.so.1"
    shared_library(elsewhere)
    shared_library(root / OFI_LIB / "libnccl-net-ofi.so", [elsewhere])
    _fails_with(root, "has unresolved libraries: libfabric-old.so.1")


def test_libfabric_needing_a_newer_glibc_than_the_image_has_fails(root):
    # Built on a distribution with a newer glibc than the final stage's: ld.so refuses it.
    needing_version(root / EFA_LIB / "libfabric.so.1", "GLIBC_2.99")
    _fails_with(root, "does not load: symbol versions not defined here: GLIBC_2.99 from libc.so.6")


def test_libfabric_with_a_library_the_image_lacks_fails(root, tmp_path):
    # A dependency only the DLC's distribution has (an Amazon Linux soname, say).
    elsewhere = tmp_path / "elsewhere" / "libnl-amzn.so.1"
    shared_library(elsewhere)
    shared_library(root / EFA_LIB / "libfabric.so.1", [elsewhere])
    _fails_with(root, "does not load: unresolved libraries: libnl-amzn.so.1")


def test_plugin_needing_a_newer_glibc_than_the_image_has_fails(root):
    needing_version(root / OFI_LIB / "libnccl-net-ofi.so", "GLIBC_2.99")
    _fails_with(root, "aws-ofi-nccl plugin", "symbol versions not defined here: GLIBC_2.99 from libc.so.6")


def test_missing_venv_fails(root):
    remove(root / VENV / "pyvenv.cfg")
    _fails_with(root, "the DLC's venv is missing (/opt/venv/pyvenv.cfg)")


def test_venv_without_an_interpreter_of_its_minor_fails(root):
    # The venv names /usr/bin/python3.12: the final stage must install Ubuntu's python3.12.
    remove(root / "usr/bin/python3.12")
    _fails_with(root, "the venv's interpreter /usr/bin/python3.12 (Python 3.12, pyvenv.cfg) is missing")


def test_venv_of_another_minor_than_the_interpreter_fails(root):
    cfg = root / VENV / "pyvenv.cfg"
    cfg.write_text(cfg.read_text().replace("version = 3.12.12", "version = 3.13.1"))
    _fails_with(root, "/usr/bin/python3.13 (Python 3.13, pyvenv.cfg) is missing")


def test_venv_made_by_uv_names_its_version_as_version_info(root):
    cfg = root / VENV / "pyvenv.cfg"
    cfg.write_text(cfg.read_text().replace("version = 3.12.12", "version_info = 3.12.12"))
    result = assert_image(root)
    assert result.returncode == 0, result.stderr
    assert "venv interpreter: /usr/bin/python3.12" in result.stdout


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
    remove(root / MULTIARCH / "pmix2")
    _fails_with(
        root,
        "libpmix.so.2 that Slurm's",
        "dlopens does not exist",
        "mca_pmix_ext3x.so cannot resolve libpmix.so.2",
    )


def test_missing_slurm_pmix_plugin_fails(root):
    remove(root / PMIX_PLUGIN)
    _fails_with(root, "mpi/pmix plugin (mpi_pmix*.so) not found")


def test_slurm_dlopening_another_libpmix_than_openmpi_fails(root):
    # A plugin whose run path reaches another PMIx, e.g. the EFA installer's under /opt/amazon.
    pmix(root, "opt/amazon/pmix/lib")
    shared_library(root / PMIX_PLUGIN, runpath="/opt/amazon/pmix/lib")
    _fails_with(
        root,
        "Slurm's mpi/pmix loads",
        "/opt/amazon/pmix/lib/libpmix.so.2",
        "but the system OpenMPI loads",
        "cannot launch MPI",
    )


def test_plugin_with_a_compiled_in_pmix_directory_passes(root):
    # Built --without-rpath: PMIXP_LIBPATH is a string in the plugin, dlopened as DIR/libpmix.so.2.
    shared_library(root / PMIX_PLUGIN, strings=(f"/{MULTIARCH}/pmix2/lib",))
    result = assert_image(root)
    assert result.returncode == 0, result.stderr


def test_plugin_with_a_compiled_in_directory_of_another_pmix_fails(root):
    pmix(root, "opt/amazon/pmix/lib")
    shared_library(root / PMIX_PLUGIN, strings=("/opt/amazon/pmix/lib",))
    _fails_with(root, "Slurm's mpi/pmix loads", "/opt/amazon/pmix/lib/libpmix.so.2")


def test_missing_system_openmpi_fails(root):
    remove(root / MULTIARCH / "openmpi")
    _fails_with(root, "the system OpenMPI (/usr/lib/x86_64-linux-gnu/openmpi/lib) is missing")


def test_system_openmpi_without_pmix_fails(root):
    shared_library(root / OMPI_PMIX_COMPONENT)
    _fails_with(root, "the system OpenMPI links no libpmix.so.2")


def test_every_failure_is_reported_not_only_the_first(root):
    remove(root / "opt/amazon/efa/bin/fi_info")
    remove(root / "usr/sbin/slurmd")
    result = _fails_with(root, "fi_info missing", "slurmd missing")
    assert "2 check(s) failed" in result.stderr
