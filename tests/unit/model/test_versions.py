"""Every version pin is written once, in model/facts/versions.py: the key table's version defaults
(which Pulumi.yaml's are written from: tests/repo/test_project_docs.py) and image/Dockerfile, which
cannot read it, are checked against it, and image/build-image.sh reads it."""

import ast
import datetime
import os
import pathlib
import re
import shutil
import stat
import subprocess
import sys

import pytest

from devkit import reference_data
from model.checks import config_schema
from model.facts import eks_versions, versions
from model.facts.image_references import dlc_registry, reference_problem
from tests.support.paths import REPO

ROOT = REPO
# Keys whose value is a version or a versioned image reference (buildImageOnPreview is a switch).
_VERSION_KEY = re.compile(r"(Version|Image|ImageTag)$")


def _project_config() -> dict:
    """The key table's project keys as Pulumi.yaml declares them: name -> {type, default}."""
    return {
        k.name: {"type": k.type, "default": k.default}
        for k in config_schema.schema(datetime.date.today())
        if ":" not in k.name
    }


def project_default_problems(config: dict) -> list[str]:
    """Where the key table's declarations disagree with the pins: a version key without a pin, a
    pin without a key, a default that is not the pin."""
    declared = {k for k in config if _VERSION_KEY.search(k)}
    problems = [
        f"{k}: a version key the model has no pin for"
        for k in sorted(declared - set(versions.CONFIG_DEFAULTS))
    ]
    for key, pin in versions.CONFIG_DEFAULTS.items():
        if key not in config:
            problems.append(f"{key}: pinned in the model but not declared")
        elif str(config[key].get("default")) != pin:
            problems.append(f"{key}: default {config[key].get('default')!r}, the model pins {pin!r}")
    return problems


def dockerfile_default_problems(text: str) -> list[str]:
    """Where the Dockerfile's ARG defaults disagree with the model. Its DLC default is the DLC
    reference in us-west-2's DLC registry: a build without --build-arg needs a registry host."""
    args = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.M))
    expected = {
        "DLC_IMAGE": f"{dlc_registry('us-west-2')}/{versions.DLC_IMAGE}",
        "SLURMD_IMAGE": versions.SLURMD_BASE_IMAGE,
        "SLURM_VERSION": versions.SLURM_RELEASE,
        "PYXIS_VERSION": versions.PYXIS_VERSION,
        "PYXIS_COMMIT": versions.PYXIS_COMMIT,
        "ENROOT_VERSION": versions.ENROOT_VERSION,
        "ENROOT_COMMIT": versions.ENROOT_COMMIT,
        "LIBNVIDIA_CONTAINER_VERSION": versions.LIBNVIDIA_CONTAINER_VERSION,
        "LIBNVIDIA_CONTAINER_KEY": versions.LIBNVIDIA_CONTAINER_KEY,
    }
    return [
        f"ARG {name}={args.get(name)!r}, the model pins {value!r}"
        for name, value in expected.items()
        if args.get(name) != value
    ]


def test_every_version_default_of_the_key_table_is_the_models_pin():
    assert project_default_problems(_project_config()) == []


@pytest.mark.parametrize("key", sorted(versions.CONFIG_DEFAULTS))
def test_a_project_default_that_differs_from_the_pin_is_found(key):
    config = _project_config()
    config[key] = {**config[key], "default": "0.0.1"}
    assert project_default_problems(config) == [
        f"{key}: default '0.0.1', the model pins {versions.CONFIG_DEFAULTS[key]!r}"
    ]


def test_a_version_key_without_a_pin_is_found():
    config = {**_project_config(), "pmixVersion": {"type": "string", "default": "5.0.1"}}
    assert project_default_problems(config) == ["pmixVersion: a version key the model has no pin for"]


def test_the_dockerfile_arg_defaults_are_the_models_pins():
    assert dockerfile_default_problems((ROOT / "image/Dockerfile").read_text()) == []


@pytest.mark.parametrize(
    "arg",
    [
        "DLC_IMAGE",
        "SLURMD_IMAGE",
        "SLURM_VERSION",
        "PYXIS_VERSION",
        "PYXIS_COMMIT",
        "ENROOT_VERSION",
        "ENROOT_COMMIT",
        "LIBNVIDIA_CONTAINER_VERSION",
        "LIBNVIDIA_CONTAINER_KEY",
    ],
)
def test_a_dockerfile_default_that_differs_from_the_pin_is_found(arg):
    text = re.sub(rf"^ARG {arg}=.*$", f"ARG {arg}=stale", (ROOT / "image/Dockerfile").read_text(), flags=re.M)
    assert len(dockerfile_default_problems(text)) == 1


def reference_source_problems(readme: str) -> list[str]:
    """Where the commits the image adds pyxis and enroot by are not the ones the reference
    archives (the test root's sources) were made from: ../shared/ref/src/README.md's table row
    `| <name>-v<version>.tar.gz | ... | `v<version>` = `<commit>` | ...`."""
    problems = []
    for name, version, commit in (
        ("pyxis", versions.PYXIS_VERSION, versions.PYXIS_COMMIT),
        ("enroot", versions.ENROOT_VERSION, versions.ENROOT_COMMIT),
    ):
        row = re.search(
            rf"^\| `{name}-v{re.escape(version)}\.tar\.gz` \|.*?`v{re.escape(version)}` = `([0-9a-f]{{40}})`",
            readme,
            re.M,
        )
        if not row:
            problems.append(f"{name} {version}: no archive of that tag in the reference sources")
        elif row.group(1) != commit:
            problems.append(
                f"{name} {version}: the image adds {commit}, the test root's archive is of {row.group(1)}"
            )
    return problems


def test_the_image_adds_pyxis_and_enroot_at_the_commits_the_test_root_builds():
    assert reference_source_problems(reference_data.path("src", "README.md").read_text()) == []


def test_a_commit_other_than_the_test_roots_is_found():
    readme = reference_data.path("src", "README.md").read_text().replace(versions.ENROOT_COMMIT, "0" * 40)
    assert reference_source_problems(readme) == [
        f"enroot {versions.ENROOT_VERSION}: the image adds {versions.ENROOT_COMMIT}, the test root's archive is of {'0' * 40}"
    ]


def test_the_image_tag_and_slurmd_base_carry_the_slurm_release():
    # Written once: the tag and the base are derived from the release, not retyped.
    assert versions.SLURMD_IMAGE_TAG.startswith(versions.SLURM_RELEASE + "-")
    assert versions.SLURMD_BASE_IMAGE.endswith(f":{versions.SLURM_RELEASE}-ubuntu24.04")


def test_the_slurm_release_pairs_with_the_pinned_slinky_chart():
    paired = versions.slurm_release_for_chart(versions.SLINKY_CHART_VERSION)
    assert paired and versions.SLURM_RELEASE.startswith(paired + ".")
    assert versions.slurm_release_for_chart("1.3.0") is None


def slurm_package_problems(text: str) -> list[str]:
    """Where a root's package list (tests/slurm/roots/*.packages: name=<upstream>-<debian revision>)
    pins a Slurm package at another upstream release than the model's."""
    pins = re.findall(r"^((?:slurm|sackd)[\w-]*)=([^\s-]+)-\S+$", text, re.M)
    if not pins:
        return ["no Slurm package is pinned"]
    return [
        f"{name}={release}, the model pins {versions.SLURM_RELEASE}"
        for name, release in pins
        if release != versions.SLURM_RELEASE
    ]


def test_the_sid_test_root_runs_the_models_slurm_release():
    # tests/slurm/test_jobs.py asserts the daemons' own -V against the same pin.
    assert slurm_package_problems((ROOT / "tests/slurm/roots/sid.packages").read_text()) == []


def test_a_test_root_on_another_slurm_release_is_found():
    text = (
        (ROOT / "tests/slurm/roots/sid.packages")
        .read_text()
        .replace(f"slurmd={versions.SLURM_RELEASE}-", "slurmd=26.05.2-")
    )
    assert slurm_package_problems(text) == [f"slurmd=26.05.2, the model pins {versions.SLURM_RELEASE}"]


# The images the program's own pods run, beside the Helm charts' (tests/charts check those).
UTILITY_IMAGES = {
    "SIDECAR_IMAGE": versions.SIDECAR_IMAGE,
    "BUSYBOX_IMAGE": versions.BUSYBOX_IMAGE,
    "PYTHON_IMAGE": versions.PYTHON_IMAGE,
    "PAUSE_IMAGE": versions.PAUSE_IMAGE,
}


def tag_and_digest_problem(reference: str) -> str | None:
    """Why a reference is not name:tag@sha256:<digest> (the tag for people, the digest for the pull)."""
    if problem := reference_problem(reference):
        return problem
    if (
        not re.fullmatch(r"[^@]+:[\w][\w.-]*@sha256:[0-9a-f]{64}", reference)
        or ":" not in reference.split("@")[0].rsplit("/", 1)[-1]
    ):
        return "not name:tag@sha256:<digest>"
    return None


@pytest.mark.parametrize("name", sorted(UTILITY_IMAGES))
def test_every_utility_image_is_pinned_by_tag_and_digest(name):
    assert tag_and_digest_problem(UTILITY_IMAGES[name]) is None


@pytest.mark.parametrize(
    "reference",
    [
        "docker.io/library/alpine:3.23.6",
        "docker.io/library/alpine@sha256:" + "0" * 64,
        "localhost:5000/alpine@sha256:" + "0" * 64,
        "docker.io/library/alpine:3.23.6@sha256:" + "0" * 63,
    ],
)
def test_a_reference_without_both_tag_and_digest_is_found(reference):
    assert tag_and_digest_problem(reference) is not None


def test_the_default_kubernetes_version_is_in_eks_standard_support_today():
    # Today, not a fixed day: this fails the day the default needs a bump.
    assert versions.KUBERNETES_VERSION in eks_versions.in_standard_support(datetime.date.today())


def release_literals(path: pathlib.Path) -> list[int]:
    """Lines of a Python file whose code (not a docstring or comment) spells the Slurm release."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and re.search(rf"(?<![\d.]){re.escape(versions.SLURM_RELEASE)}(?![\d])", node.value)
    ]


def test_the_program_and_tools_spell_the_slurm_release_only_in_the_model():
    # The rest reads model/facts/versions.py (the key table's defaults and the Dockerfile are checked
    # above; image/build-image.sh reads it). Tests and docs may quote it.
    sources = [
        *ROOT.glob("*.py"),
        *(ROOT / "components").glob("*.py"),
        *(ROOT / "model").rglob("*.py"),
        *(ROOT / "tools").glob("*.py"),
    ]
    spelled = {str(p.relative_to(ROOT)) for p in sources if release_literals(p)}
    assert spelled == {"model/facts/versions.py"}


def test_a_retyped_slurm_release_is_found(tmp_path):
    source = tmp_path / "component.py"
    source.write_text(
        f'"""Built on {versions.SLURM_RELEASE}."""\n# {versions.SLURM_RELEASE}\n'
        f'TAG = "{versions.SLURM_RELEASE}-torch"\nOTHER = "1{versions.SLURM_RELEASE}"\n'
    )
    assert release_literals(source) == [3]


def _versions_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "model.facts.versions", *args], cwd=ROOT, capture_output=True, text=True
    )


def test_the_versions_reader_prints_a_keys_default():
    result = _versions_cli("slurmVersion")
    assert (result.returncode, result.stdout) == (0, versions.SLURM_RELEASE + "\n")


@pytest.mark.parametrize("args", [(), ("slurmversion",), ("slurmVersion", "extra")])
def test_the_versions_reader_refuses_a_wrong_key_in_one_line(args):
    result = _versions_cli(*args)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and "slurmVersion" in result.stderr


# Stand-ins for the two commands image/build-image.sh runs, answering as the AWS CLI does for the
# calls it makes: `sts get-caller-identity --query Account --output text` prints the account id
# (https://docs.aws.amazon.com/cli/latest/reference/sts/get-caller-identity.html); `ecr
# get-login-password` prints a token (.../reference/ecr/get-login-password.html);
# `describe-repositories` exits 0 for an existing repository; `describe-images --query
# 'imageDetails[0].imageDigest' --output text` prints the digest (.../reference/ecr/describe-images.html).
# docker records its arguments.
_FAKE_AWS = """#!/bin/sh
case "$1 $2" in
  "sts get-caller-identity") echo 123456789012 ;;
  "ecr get-login-password") echo token ;;
  "ecr describe-images") echo sha256:%s ;;
esac
""" % ("ab" * 32)
_FAKE_DOCKER = """#!/bin/sh
cat >/dev/null
echo "$*" >> "$DOCKER_LOG"
"""


def _build_args(script: pathlib.Path, tmp_path: pathlib.Path, *args: str) -> dict[str, str]:
    """The --build-arg values the script hands `docker buildx build`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("aws", _FAKE_AWS), ("docker", _FAKE_DOCKER)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(stat.S_IRWXU)
    log = tmp_path / "docker.log"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "DOCKER_LOG": str(log)}
    result = subprocess.run(
        ["bash", str(script), "--region", "us-west-2", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    (build,) = [line for line in log.read_text().splitlines() if line.startswith("buildx build")]
    return dict(re.findall(r"--build-arg (\w+)=(\S+)", build))


def build_arg_problems(args: dict[str, str]) -> list[str]:
    expected = {
        "DLC_IMAGE": f"{dlc_registry('us-west-2')}/{versions.DLC_IMAGE}",
        "SLURMD_IMAGE": versions.SLURMD_BASE_IMAGE,
        "SLURM_VERSION": versions.SLURM_RELEASE,
    }
    return [f"{k}={args.get(k)!r}, the model pins {v!r}" for k, v in expected.items() if args.get(k) != v]


def test_the_build_script_builds_the_models_pins(tmp_path):
    assert build_arg_problems(_build_args(ROOT / "image/build-image.sh", tmp_path)) == []


def test_the_build_script_uses_a_dlc_reference_with_a_registry_host_as_given(tmp_path):
    other = f"871362719292.dkr.ecr.ap-east-1.amazonaws.com/{versions.DLC_IMAGE}"
    assert _build_args(ROOT / "image/build-image.sh", tmp_path, "--dlc-image", other)["DLC_IMAGE"] == other


def test_a_build_script_that_retypes_a_pin_is_found(tmp_path):
    # The script as it was before it read the model, with a release the model has moved past.
    script = tmp_path / "image" / "build-image.sh"
    script.parent.mkdir()
    text = (ROOT / "image/build-image.sh").read_text()
    script.write_text(
        text.replace("SLURM_VERSION=$(pin slurmVersion)", 'SLURM_VERSION="26.05.1"').replace(
            "TAG=$(pin slurmdImageTag)", 'TAG="26.05.1-torch2.9-cu130-mpi"'
        )
    )
    shutil.copytree(ROOT / "model", tmp_path / "model")
    assert build_arg_problems(_build_args(script, tmp_path)) == [
        f"SLURM_VERSION='26.05.1', the model pins {versions.SLURM_RELEASE!r}"
    ]
