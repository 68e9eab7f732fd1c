"""The in-region build's buildspec and the content digest of its inputs
(model/builders/image_buildspec.py). The buildspec is read as CodeBuild reads it (its YAML text),
checked against the reference's keys, shellchecked, and its commands run here in bash against
stand-ins for `docker` and `aws` that record what they were asked."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import stat
import subprocess

import jsonschema
import pytest
import yaml

from model.builders import image_buildspec
from model.builders.image_buildspec import BUILDSPEC, context_digest, context_tag
from model.facts.image_references import ecr_registry
from tests.support.paths import REPO

DIGEST = "ab" * 32
PUSHED = "sha256:" + "cd" * 32
REPOSITORY = "123456789012.dkr.ecr.us-west-2.amazonaws.com/slinky/slurmd"
DLC = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.13.0-gpu-py312-cu133-ubuntu24.04-ec2"
SLURMD = "ghcr.io/slinkyproject/slurmd:26.05.5-ubuntu24.04"

# The buildspec's syntax as the reference gives it (AWS CodeBuild User Guide, "Build specification
# reference for CodeBuild", "Buildspec syntax":
# https://docs.aws.amazon.com/codebuild/latest/userguide/build-spec-ref.html): the keys each level
# allows, version 0.2, the four phases, a phase's on-failure ABORT or CONTINUE.
_PHASE = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "run-as": {"type": "string"},
        "on-failure": {"enum": ["ABORT", "CONTINUE"]},
        "runtime-versions": {"type": "object"},
        "commands": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "finally": {"type": "array", "items": {"type": "string"}},
    },
}
BUILDSPEC_SCHEMA = {
    "type": "object",
    "required": ["version", "phases"],
    "additionalProperties": False,
    "properties": {
        "version": {"const": 0.2},
        "run-as": {"type": "string"},
        "env": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "shell": {"enum": ["bash", "/bin/sh"]},
                "variables": {"type": "object"},
                "parameter-store": {"type": "object"},
                "exported-variables": {"type": "array", "items": {"type": "string"}},
                "secrets-manager": {"type": "object"},
                "git-credential-helper": {"enum": ["yes", "no"]},
            },
        },
        "proxy": {"type": "object"},
        "batch": {"type": "object"},
        "phases": {
            "type": "object",
            "additionalProperties": False,
            "properties": {name: _PHASE for name in ("install", "pre_build", "build", "post_build")},
        },
        "reports": {"type": "object"},
        "artifacts": {"type": "object"},
        "cache": {"type": "object"},
    },
}


def _document() -> dict:
    return yaml.safe_load(BUILDSPEC)


def _commands(*phases: str) -> list[str]:
    document = _document()
    return [command for phase in phases for command in document["phases"][phase]["commands"]]


def test_the_buildspec_text_is_valid_against_the_references_syntax():
    jsonschema.validate(_document(), BUILDSPEC_SCHEMA)


def test_the_text_says_what_the_document_says():
    assert _document() == image_buildspec.buildspec_document()


def test_the_build_exports_the_pushed_digest_and_whether_it_built():
    # BatchGetBuilds returns these as exportedEnvironmentVariables (API Reference, Build).
    assert _document()["env"]["exported-variables"] == ["IMAGE_DIGEST", "IMAGE_REUSED"]


def test_a_failed_build_phase_aborts_the_build_before_post_build_pushes():
    phases = _document()["phases"]
    assert phases["build"]["on-failure"] == "ABORT"
    assert not any(
        "docker push" in c for p in ("install", "pre_build", "build") for c in phases[p]["commands"]
    )


def test_the_build_runs_buildkit_which_the_dockerfiles_git_sources_need():
    # ADD of a Git repository (pyxis and enroot by commit) is BuildKit's; buildx always builds
    # with BuildKit (https://docs.docker.com/reference/cli/docker/buildx/build/).
    assert "docker buildx build " in " ".join(_commands("build"))


def test_every_command_passes_shellcheck(tmp_path):
    # The commands run in one bash session, phase after phase (env shell: bash), so they are
    # checked as one bash script.
    script = tmp_path / "buildspec.sh"
    script.write_text(
        "#!/usr/bin/env bash\n" + "\n".join(_commands("install", "pre_build", "build", "post_build")) + "\n"
    )
    result = subprocess.run(
        [str(REPO / ".venv/bin/shellcheck"), "-s", "bash", str(script)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout


# Stand-ins for the build image's tools: each records its arguments in $CALLS, one line a call.
_DOCKER = """#!/usr/bin/env bash
echo "docker $*" >>"$CALLS"
if [ "$1" = login ]; then echo "stdin $(cat)" >>"$CALLS"; fi
if [ "$1 $2" = "buildx build" ] && [ -n "${BUILD_FAILS:-}" ]; then exit 1; fi
exit 0
"""
_AWS = """#!/usr/bin/env bash
echo "aws $*" >>"$CALLS"
case "$2" in
  get-login-password) echo "token-for-$4" ;;
  describe-images)
    # ECR holds the context's image once it is pushed (here, or before the build: PUSHED_BEFORE);
    # else the CLI fails as for ImageNotFoundException.
    if [ -n "${PUSHED_BEFORE:-}" ] || grep -q "^docker push .*:ctx-" "$CALLS"; then echo "$ECR_DIGEST"
    else echo "An error occurred (ImageNotFoundException) when calling the DescribeImages operation" >&2; exit 254
    fi ;;
esac
"""


def _run(tmp_path: pathlib.Path, phases: tuple[str, ...], **env: str) -> tuple[int, list[str], str]:
    """Runs the phases' commands in one bash session as CodeBuild does, stopping at the first
    command that fails; (exit status, the recorded calls, the output)."""
    tools = tmp_path / "bin"
    tools.mkdir(exist_ok=True)
    for name, text in (("docker", _DOCKER), ("aws", _AWS)):
        (tools / name).write_text(text)
        (tools / name).chmod(0o755)
    calls = tmp_path / "calls"
    calls.write_text("")
    checked = [f"{command}\nstatus=$?; [ $status -eq 0 ] || exit $status" for command in _commands(*phases)]
    script = (
        "\n".join(checked)
        + '\necho "exported IMAGE_DIGEST=${IMAGE_DIGEST:-} IMAGE_REUSED=${IMAGE_REUSED:-}"\n'
    )
    variables = {
        "PATH": f"{tools}:{os.environ['PATH']}",
        "CALLS": str(calls),
        "DLC_IMAGE": DLC,
        "SLURMD_IMAGE": SLURMD,
        "SLURM_VERSION": "26.05.5",
        "IMAGE_REPOSITORY": REPOSITORY,
        "IMAGE_TAG": "26.05.5-1",
        "CONTEXT_DIGEST": DIGEST,
        "ECR_DIGEST": PUSHED,
        "CODEBUILD_BUILD_SUCCEEDING": "1",
        **env,
    }
    result = subprocess.run(["bash", "-c", script], env=variables, capture_output=True, text=True)
    return result.returncode, calls.read_text().splitlines(), result.stdout + result.stderr


def test_a_build_logs_in_to_each_ecr_registry_in_its_region_and_not_to_ghcr(tmp_path):
    status, calls, output = _run(tmp_path, ("pre_build",))
    assert status == 0, output
    assert [c for c in calls if c.startswith(("aws ecr get-login-password", "docker login"))] == [
        "aws ecr get-login-password --region us-west-2",
        "docker login --username AWS --password-stdin 763104351884.dkr.ecr.us-west-2.amazonaws.com",
        "aws ecr get-login-password --region us-west-2",
        "docker login --username AWS --password-stdin 123456789012.dkr.ecr.us-west-2.amazonaws.com",
    ]
    assert "stdin token-for-us-west-2" in calls


def test_a_dlc_registry_in_another_region_gets_that_regions_token(tmp_path):
    status, calls, output = _run(
        tmp_path, ("pre_build",), DLC_IMAGE="871362719292.dkr.ecr.ap-east-1.amazonaws.com/pytorch-training:x"
    )
    assert status == 0, output
    assert calls[:2] == [
        "aws ecr get-login-password --region ap-east-1",
        "docker login --username AWS --password-stdin 871362719292.dkr.ecr.ap-east-1.amazonaws.com",
    ]


@pytest.mark.parametrize(
    "host",
    [
        "871362719292.dkr.ecr.ap-east-1.amazonaws.com",
        "123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com",
        "123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn",
        "public.ecr.aws",
        "ghcr.io",
        "12345.dkr.ecr.us-west-2.amazonaws.com",
    ],
)
def test_the_build_logs_in_to_exactly_the_hosts_the_program_counts_as_ecr(tmp_path, host):
    # The shell's host pattern and model/facts/image_references.py's agree: one rule, two languages.
    status, calls, output = _run(tmp_path, ("pre_build",), SLURMD_IMAGE=f"{host}/slurmd:26.05.5")
    assert status == 0, output
    registry = ecr_registry(host)
    expected = (
        [
            f"aws ecr get-login-password --region {registry[1]}",
            f"docker login --username AWS --password-stdin {host}",
        ]
        if registry
        else []
    )
    # Between the DLC's login and the repository's (the order of the loop), with no token lines.
    logins = [c for c in calls if c.startswith(("aws ecr get-login-password", "docker login"))]
    assert logins[2:-2] == expected


def test_a_context_digest_that_is_not_64_hex_digits_stops_the_build_before_any_login(tmp_path):
    status, calls, output = _run(tmp_path, ("pre_build",), CONTEXT_DIGEST="latest")
    assert status != 0 and calls == []
    assert "CONTEXT_DIGEST must be 64 lower-case hex digits, got 'latest'" in output


def test_a_whole_build_builds_the_context_then_pushes_both_tags_and_exports_the_registrys_digest(tmp_path):
    status, calls, output = _run(tmp_path, ("install", "pre_build", "build", "post_build"))
    assert status == 0, output
    build = next(i for i, c in enumerate(calls) if c.startswith("docker buildx build"))
    pushes = [i for i, c in enumerate(calls) if c.startswith("docker push")]
    assert calls[build] == (
        "docker buildx build --platform linux/amd64 --load "
        f"--build-arg DLC_IMAGE={DLC} --build-arg SLURMD_IMAGE={SLURMD} --build-arg SLURM_VERSION=26.05.5 "
        f"--tag {REPOSITORY}:26.05.5-1 --tag {REPOSITORY}:ctx-{DIGEST} --file Dockerfile ."
    )
    # The ctx- tag last: its presence means the image is wholly pushed.
    assert [calls[i] for i in pushes] == [
        f"docker push {REPOSITORY}:26.05.5-1",
        f"docker push {REPOSITORY}:ctx-{DIGEST}",
    ]
    assert build < pushes[0]
    assert calls[-1] == (
        f"aws ecr describe-images --repository-name slinky/slurmd --image-ids imageTag=ctx-{DIGEST} "
        "--query imageDetails[0].imageDigest --output text"
    )
    assert f"exported IMAGE_DIGEST={PUSHED} IMAGE_REUSED=0" in output


def test_a_build_of_a_context_already_pushed_builds_and_pushes_nothing_and_exports_its_digest(tmp_path):
    # Another build of the same context (an interrupted `up` run again) pushed it meanwhile.
    status, calls, output = _run(tmp_path, ("install", "pre_build", "build", "post_build"), PUSHED_BEFORE="1")
    assert status == 0, output
    assert not [c for c in calls if c.startswith(("docker buildx build", "docker push"))]
    assert f"exported IMAGE_DIGEST={PUSHED} IMAGE_REUSED=1" in output


def test_post_build_after_a_failed_build_phase_pushes_nothing(tmp_path):
    status, calls, output = _run(tmp_path, ("post_build",), CODEBUILD_BUILD_SUCCEEDING="0")
    assert status != 0 and calls == []
    assert "the build phase failed: nothing is pushed" in output


def test_a_failed_image_build_ends_the_phase_before_anything_is_pushed(tmp_path):
    # Where the assertions fail: a RUN of the Dockerfile, so `docker buildx build` exits non-zero.
    status, calls, _ = _run(tmp_path, ("pre_build", "build", "post_build"), BUILD_FAILS="1")
    assert status != 0
    assert not [c for c in calls if c.startswith("docker push")]


def test_an_answer_from_ecr_that_is_not_a_digest_fails_the_build_and_exports_nothing(tmp_path):
    status, _, output = _run(tmp_path, ("post_build",), ECR_DIGEST="None")
    assert status != 0
    assert "ECR gave no digest for the pushed image: 'None'" in output


def test_the_dockerfile_runs_the_image_assertions_in_the_build():
    # The buildspec relies on this: the assertions fail `docker buildx build`, so nothing is pushed.
    dockerfile = (REPO / "image/Dockerfile").read_text()
    assert re.search(r"^RUN .*\n(?:.*\\\n)*.*assert-image\.sh", dockerfile, re.M)
    assert "assert-toolchain.sh" in dockerfile


def test_the_context_tag_is_an_ecr_tag_named_by_the_digest():
    tag = context_tag(DIGEST)
    assert tag == f"ctx-{DIGEST}"
    # ECR API Reference, ImageIdentifier: imageTag of 1-300 characters; Docker tags are at most
    # 128 of [A-Za-z0-9_.-], the first not . or - (distribution/reference's tag grammar).
    assert re.fullmatch(r"[\w][\w.-]{0,127}", tag)


# The content digest.

ARGS = {"dlc_image": DLC, "slurmd_image": SLURMD, "slurm_version": "26.05.5", "image_tag": "26.05.5-1"}


@pytest.fixture
def context(tmp_path) -> pathlib.Path:
    copy = tmp_path / "checkout-a" / "image"
    shutil.copytree(REPO / "image", copy)
    return copy


def test_the_same_inputs_give_the_same_digest(context):
    assert context_digest(context, **ARGS) == context_digest(context, **ARGS)
    assert re.fullmatch(r"[0-9a-f]{64}", context_digest(context, **ARGS))


def test_one_byte_of_one_file_changes_the_digest(context):
    before = context_digest(context, **ARGS)
    script = context / "assert-toolchain.sh"
    script.write_bytes(script.read_bytes() + b"\n")
    assert context_digest(context, **ARGS) != before


def test_a_new_file_the_dockerfile_copies_changes_the_digest(context):
    before = context_digest(context, **ARGS)
    (context / "extra.txt").write_text("")
    dockerfile = context / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "COPY extra.txt /etc/extra.txt\n")
    assert context_digest(context, **ARGS) != before


@pytest.mark.parametrize("name", ["README.md", "build-image.sh", "notes.txt", ".DS_Store"])
def test_a_file_the_build_does_not_read_does_not_change_the_digest(context, name):
    # A doc edit in image/README.md, the local build script or clutter start no build.
    before = context_digest(context, **ARGS)
    (context / name).write_text("edited\n")
    assert context_digest(context, **ARGS) == before


def test_the_build_reads_the_dockerfile_and_the_files_it_copies_and_nothing_else():
    assert image_buildspec.context_files(REPO / "image") == [
        "Dockerfile",
        "assert-containers.sh",
        "assert-image.sh",
        "assert-toolchain.sh",
        "container-runtime.sh",
        "ecr-password.sh",
        "enroot-hooks/60-aws-efa.sh",
        "finetune-requirements.txt",
        "loader.sh",
        "register-libraries.sh",
        "repository-key.sh",
    ]


def test_copies_from_a_stage_read_nothing_of_the_context():
    dockerfile = "FROM a AS s\nCOPY --from=s /x /x\nCOPY --chmod=0755 \\\n  a.sh b.sh /bin/\n# COPY c /c\n"
    assert image_buildspec.copied_sources(dockerfile) == ["a.sh", "b.sh"]


@pytest.mark.parametrize(
    "source",
    [
        "https://nvidia.github.io/libnvidia-container/gpgkey",
        "http://example.com/archive.tar.gz",
        "https://github.com/NVIDIA/pyxis.git#107519944221822ea1dace4db8e7234b2eaa4cd5",
        "git@github.com:moby/buildkit.git#v0.14.1:docs",
    ],
)
def test_an_add_of_a_url_or_a_git_repository_reads_nothing_of_the_context(source):
    # The reference's remote prefixes: http://, https://, git@ (an SSH address has no "://").
    assert image_buildspec.copied_sources(f"FROM a\nADD {source} /src\nCOPY a.sh /bin/\n") == ["a.sh"]


def test_a_copy_source_is_a_context_path_whatever_it_looks_like(context):
    # COPY fetches nothing: a URL there names a context path, which this context lacks.
    dockerfile = context / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "COPY https://example.com/x.sh /x.sh\n")
    assert "https://example.com/x.sh" in image_buildspec.copied_sources(dockerfile.read_text())
    with pytest.raises(ValueError, match="'https://example.com/x.sh'"):
        image_buildspec.context_files(context)


def test_a_copy_in_the_exec_form_is_refused_rather_than_left_unread():
    with pytest.raises(ValueError, match="shell form"):
        image_buildspec.copied_sources('FROM a\nCOPY ["a.sh", "/bin/"]\n')


def test_a_copied_file_the_context_lacks_is_refused(context):
    (context / "loader.sh").unlink()
    with pytest.raises(ValueError, match="'loader.sh'"):
        image_buildspec.context_files(context)


def test_file_modes_do_not_change_the_digest(context):
    # The zip CodeBuild gets carries no modes; the Dockerfile's COPY --chmod sets them.
    before = context_digest(context, **ARGS)
    loader = context / "loader.sh"
    loader.chmod(loader.stat().st_mode ^ stat.S_IXUSR)
    assert context_digest(context, **ARGS) == before


@pytest.mark.parametrize("arg", sorted(ARGS))
def test_each_build_argument_changes_the_digest(context, arg):
    assert context_digest(context, **{**ARGS, arg: ARGS[arg] + "x"}) != context_digest(context, **ARGS)


def test_the_buildspec_changes_the_digest(context):
    assert context_digest(context, **ARGS, buildspec_text=BUILDSPEC + "# x\n") != context_digest(
        context, **ARGS
    )


def test_another_checkout_path_and_other_file_times_give_the_same_digest(context, tmp_path):
    other = tmp_path / "elsewhere" / "deeper" / "image"
    shutil.copytree(context, other)
    for path in other.rglob("*"):
        os.utime(path, (0, 0))
    assert context_digest(other, **ARGS) == context_digest(context, **ARGS)


def test_the_build_variables_are_the_runs_but_the_context_digest_which_the_run_sets():
    variables = image_buildspec.build_variables(
        dlc_image=DLC,
        slurmd_image=SLURMD,
        slurm_version="26.05.5",
        image_tag="26.05.5-1",
        repository_url=REPOSITORY,
    )
    assert set(variables) == set(image_buildspec.RUN_VARIABLES) - {"CONTEXT_DIGEST"}
    assert (variables["DLC_IMAGE"], variables["IMAGE_REPOSITORY"]) == (DLC, REPOSITORY)
