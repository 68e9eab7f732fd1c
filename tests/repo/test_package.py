"""The slinky-eks package (pyproject.toml): its wheel holds the layer's packages and every file they
read at run time, found beside them once installed; its version is the release's and its
dependencies are requirements.txt's pins, each with one home. The wheel is built here from a copy
of what pyproject.toml names (setuptools from the test environment, no index), and unpacked as an
installer lays a pure wheel into site-packages."""

from __future__ import annotations

import email.parser
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

from model.facts import release
from tests.support.paths import REPO

# What the layer imports and reads at run time: the packages, and the directories of files beside
# them (chart values, the image's build context, the jobs, the alerts, dashboards and counters).
SHIPPED = (
    "components",
    "model",
    "stack",
    "cluster_programs",
    "charts-values",
    "image",
    "jobs",
    "observability",
)
BUILD_INPUTS = ("pyproject.toml", "README.md", "requirements.txt", *SHIPPED)


def _files(root: pathlib.Path, top: str) -> set[str]:
    return {
        p.relative_to(root).as_posix()
        for p in (root / top).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> pathlib.Path:
    source = tmp_path_factory.mktemp("source")
    for name in BUILD_INPUTS:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(REPO / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index"]
        + ["--wheel-dir", str(out), str(source)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("slinky_eks-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> pathlib.Path:
    site = tmp_path_factory.mktemp("site-packages")
    zipfile.ZipFile(wheel).extractall(site)
    return site


def _metadata(wheel: pathlib.Path):
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(z.read(name).decode())


def test_the_wheel_holds_every_file_the_layer_reads_at_run_time(installed):
    missing = {top: _files(REPO, top) - _files(installed, top) for top in SHIPPED}
    assert {top: files for top, files in missing.items() if files} == {}


def test_the_wheel_holds_the_layer_and_nothing_of_the_program_the_devkit_or_the_tests(installed):
    tops = {p.name for p in installed.iterdir() if not p.name.endswith(".dist-info")}
    assert tops == set(SHIPPED)


def test_the_package_version_is_the_release(wheel):
    assert _metadata(wheel)["Version"] == release.VERSION


def test_the_package_requires_exactly_the_pins_of_requirements_txt(wheel):
    pins = [
        line.strip()
        for line in (REPO / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert _metadata(wheel).get_all("Requires-Dist") == pins


def test_the_installed_layer_finds_its_files_beside_its_packages(installed, tmp_path):
    # A program of its own, in a directory of its own, with the package on its path: every file
    # the layer reads lies in the installed copy, the image's context named from the program's
    # directory (components/slurmd_image.py).
    probe = (
        "import os, pathlib;"
        "from components._parts import chart_values, program_code;"
        "from components import job_staging, slurmd_image;"
        "from model.builders import dashboards, metrics;"
        "paths = [chart_values.CHARTS_VALUES, program_code.PROGRAMS, job_staging.JOBS_DIR,"
        " metrics.ALERTS_DIR, metrics.DCGM_COUNTERS_FILE, dashboards.DASHBOARDS_DIR,"
        " pathlib.Path(slurmd_image.CONTEXT).resolve() / 'Dockerfile'];"
        "print('\\n'.join(f'{p.exists()} {p}' for p in paths))"
    )
    program = tmp_path / "program"
    program.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=program,
        env={"PYTHONPATH": str(installed), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    found = [line.split(" ", 1) for line in result.stdout.splitlines()]
    assert len(found) == 7
    assert all(exists == "True" and path.startswith(str(installed.resolve())) for exists, path in found)
