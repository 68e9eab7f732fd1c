"""image/assert-containers.sh fails the image build, naming what is wrong, when pyxis, enroot or
nvidia-container-cli is not what the pins say; and passes a root laid out as
image/container-runtime.sh and the Dockerfile install them."""

import os
import re

import pytest

from model.builders.containers import PYXIS_PLUGIN
from model.builders.image_buildspec import dockerfile_instructions
from tests.support.fake_root import (
    CONTAINER_PINS,
    HELPER_CAPABILITIES,
    IMAGE,
    assert_containers,
    container_root,
    grant,
    pyxis_plugin,
    remove,
    script,
)
from tests.support.fake_root import PYXIS_PLUGIN as STAND_IN_PLUGIN

# setcap needs root, as the image build has it.
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="file capabilities are set as root")


@pytest.fixture
def root(tmp_path):
    return container_root(tmp_path / "root")


def _fails_with(root, *expected, **pins):
    result = assert_containers(root, **pins)
    assert result.returncode == 1, result.stdout + result.stderr
    for text in expected:
        assert text in result.stderr, result.stderr
    return result


def test_a_root_as_the_recipe_installs_it_passes(root):
    result = assert_containers(root)
    assert result.returncode == 0, result.stderr
    assert "all checks passed" in result.stdout


def test_the_plugin_checked_is_the_one_plugstack_conf_names():
    text = (IMAGE / "assert-containers.sh").read_text()
    assert re.search(r"^PYXIS_PLUGIN=(\S+)$", text, re.M).group(1) == PYXIS_PLUGIN == f"/{STAND_IN_PLUGIN}"


def test_a_missing_plugin_fails(root):
    remove(root / STAND_IN_PLUGIN)
    _fails_with(root, f"pyxis's plugin is missing ({PYXIS_PLUGIN}")


def test_a_plugin_of_another_pyxis_release_fails(root):
    _fails_with(root, "is not pyxis 0.25.0", pyxis="0.25.0")


def test_a_plugin_built_for_another_slurm_fails_naming_both(root):
    pyxis_plugin(root / STAND_IN_PLUGIN, version=CONTAINER_PINS["pyxis"], slurm_version="25.11.4")
    _fails_with(root, f"was built for Slurm 25.11.4, this image runs {CONTAINER_PINS['slurm']}")


def test_a_plugin_needing_a_symbol_slurm_does_not_define_fails_naming_it(root):
    pyxis_plugin(
        root / STAND_IN_PLUGIN,
        version=CONTAINER_PINS["pyxis"],
        slurm_version=CONTAINER_PINS["slurm"],
        symbols=("spank_getenv", "spank_from_a_newer_slurm"),
    )
    _fails_with(root, "does not define: spank_from_a_newer_slurm")


def test_a_root_without_slurms_library_fails(root):
    remove(root / "usr/lib/x86_64-linux-gnu/slurm/libslurmfull.so")
    _fails_with(root, "libslurmfull.so is missing")


def test_enroot_at_another_release_fails(root):
    script(root / "usr/bin/enroot", 'echo "4.0.1"\n')
    _fails_with(root, "enroot version says '4.0.1', the pin is 4.1.2")


@pytest.mark.parametrize("helper", sorted(HELPER_CAPABILITIES))
def test_a_helper_without_its_capabilities_fails_naming_it(root, helper):
    grant(root / helper, "-r")
    _fails_with(root, f"/{helper} has capabilities 'none'")


def test_the_layer_converting_helper_needs_mknod_too(root):
    grant(root / "usr/bin/enroot-aufs2ovlfs", "cap_sys_admin+ep")
    _fails_with(root, "/usr/bin/enroot-aufs2ovlfs has capabilities 'cap_sys_admin=ep'")


def test_a_disabled_gpu_hook_fails(root):
    remove(root / "etc/enroot/hooks.d/98-nvidia.sh")
    _fails_with(root, "enroot's GPU hook is not enabled")


def test_a_missing_nvidia_container_cli_fails(root):
    remove(root / "usr/bin/nvidia-container-cli")
    _fails_with(root, "nvidia-container-cli is missing")


def test_nvidia_container_cli_at_another_release_fails(root):
    _fails_with(
        root, "nvidia-container-cli is not 1.17.9: cli-version: 1.17.8", **{"nvidia-container-cli": "1.17.9"}
    )


def test_every_failure_is_reported_at_once(root):
    remove(root / "usr/bin/nvidia-container-cli")
    script(root / "usr/bin/enroot", 'echo "4.0.1"\n')
    assert "2 check(s) failed" in _fails_with(root).stderr


def test_the_image_build_runs_the_assertions_with_the_dockerfiles_pins():
    runs = [
        " ".join(words)
        for instruction, words in dockerfile_instructions((IMAGE / "Dockerfile").read_text())
        if instruction == "RUN" and "assert-containers.sh" in " ".join(words)
    ]
    assert len(runs) == 1
    for flag, arg in (
        ("--slurm-version", "SLURM_VERSION"),
        ("--pyxis-version", "PYXIS_VERSION"),
        ("--enroot-version", "ENROOT_VERSION"),
        ("--nvidia-container-cli-version", "LIBNVIDIA_CONTAINER_VERSION%-*"),
    ):
        assert f'{flag} "${{{arg}}}"' in runs[0]
