"""The CodeBuild buildspec that builds the slurmd image in the stack's region
(docs/decisions/image-builder.md), and the content digest of everything that build reads.

The buildspec is data with one home: the CodeBuild project carries BUILDSPEC inline
(components/slurmd_image.py), and the digest covers its text, so a changed buildspec is a new
build. Reference: AWS CodeBuild User Guide, "Build specification reference for CodeBuild",
https://docs.aws.amazon.com/codebuild/latest/userguide/build-spec-ref.html (version 0.2; env
`shell`, `exported-variables`; phases install, pre_build, build, post_build; `on-failure`).

The build's environment variables, set by each run (components/_parts/image_build_run.py passes
them as StartBuild's environmentVariablesOverride): DLC_IMAGE, SLURMD_IMAGE, SLURM_VERSION (the
Dockerfile's build arguments), IMAGE_REPOSITORY (the stack's repository URL,
<account>.dkr.ecr.<region>.amazonaws.com/<name>), IMAGE_TAG (slurmdImageTag) and CONTEXT_DIGEST
(context_digest below, 64 hex digits). It exports IMAGE_DIGEST (sha256:<hex>) and IMAGE_REUSED,
which BatchGetBuilds returns in the build's exportedEnvironmentVariables.

Runs on CodeBuild's curated Amazon Linux 2023 x86_64 standard image with privileged mode on (the
Docker daemon runs only in privileged mode: CodeBuild User Guide, "Docker in custom image sample",
https://docs.aws.amazon.com/codebuild/latest/userguide/sample-docker-custom-image.html). That image
floats (CodeBuild updates standard:5.0 in place): it ships Docker 26 or later with buildx
(aws/aws-codebuild-docker-images al/x86_64/standard/5.0/Dockerfile, DOCKER_VERSION and
DOCKER_BUILDX_VERSION), and the install phase logs the versions a build ran with. It runs on EC2
compute, where a phase's `on-failure` is honoured (not on Lambda compute or reserved capacity:
https://docs.aws.amazon.com/codebuild/latest/userguide/lambda-compute-images.html).

No registry cache, unlike the local build: buildx's default `docker` driver, which CodeBuild's
Docker daemon gives, exports no registry cache ("This cache storage backend is not supported with
the default docker driver": https://docs.docker.com/build/cache/backends/registry/), and the
`docker-container` driver would pull moby/buildkit from Docker Hub, a registry the build's role
has no business with. A build runs only when its inputs change (the content digest), so each one
starts cold; in the region the DLC pull is ECR to CodeBuild, not the deployer's uplink.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
from typing import Any

import yaml

# The variables a run sets and the one the build exports (one home for the names).
DLC_IMAGE = "DLC_IMAGE"
SLURMD_IMAGE = "SLURMD_IMAGE"
SLURM_VERSION = "SLURM_VERSION"
IMAGE_REPOSITORY = "IMAGE_REPOSITORY"
IMAGE_TAG = "IMAGE_TAG"
CONTEXT_DIGEST = "CONTEXT_DIGEST"
RUN_VARIABLES = (DLC_IMAGE, SLURMD_IMAGE, SLURM_VERSION, IMAGE_REPOSITORY, IMAGE_TAG, CONTEXT_DIGEST)
IMAGE_DIGEST = "IMAGE_DIGEST"
# "1" when the build found its context's image already pushed (by another build of the same
# context, one an interrupted `up` left running) and built nothing; "0" when it built and pushed.
IMAGE_REUSED = "IMAGE_REUSED"

# The tag that names an image by the content digest of its build context. ECR tags are at most
# 128 characters of [A-Za-z0-9_.-] (ECR API Reference, ImageIdentifier imageTag); "ctx-" and 64
# hex digits are 68.
CONTEXT_TAG_PREFIX = "ctx-"


def build_variables(
    *, dlc_image: Any, slurmd_image: Any, slurm_version: Any, image_tag: Any, repository_url: Any
) -> dict[str, Any]:
    """A run's variables but CONTEXT_DIGEST (which the run sets from its context digest), each
    value a str or the Output of one; pass context_digest the same four build inputs."""
    return {
        DLC_IMAGE: dlc_image,
        SLURMD_IMAGE: slurmd_image,
        SLURM_VERSION: slurm_version,
        IMAGE_REPOSITORY: repository_url,
        IMAGE_TAG: image_tag,
    }


def context_tag(digest: str) -> str:
    """The tag an image built from context `digest` (64 hex digits) carries."""
    return f"{CONTEXT_TAG_PREFIX}{digest}"


# Logs in to each ECR registry among the bases and the stack's repository (ECR tokens are per
# registry and region: ECR User Guide, "Private registry authentication",
# https://docs.aws.amazon.com/AmazonECR/latest/userguide/registry_auth.html); any other registry
# (ghcr.io's slurmd base) is pulled anonymously. The host pattern is model/facts/image_references.py's.
_LOGIN = r"""for ref in "$DLC_IMAGE" "$SLURMD_IMAGE" "$IMAGE_REPOSITORY"; do
  host=${ref%%/*}
  if [[ $host =~ ^[0-9]{12}\.dkr\.ecr(-fips)?\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$ ]]; then
    password=$(aws ecr get-login-password --region "${BASH_REMATCH[2]}") || exit 1
    docker login --username AWS --password-stdin "$host" <<<"$password" || exit 1
  fi
done"""

_CHECK_DIGEST = r"""if [[ ! $CONTEXT_DIGEST =~ ^[0-9a-f]{64}$ ]]; then
  echo "CONTEXT_DIGEST must be 64 lower-case hex digits, got '$CONTEXT_DIGEST'"
  exit 1
fi"""

# The digest ECR holds under this context's tag (ECR API Reference, DescribeImages,
# imageDetails[].imageDigest), in the build's own region and account (the repository's); empty
# when there is none.
_DESCRIBE_CONTEXT_IMAGE = (
    "aws ecr describe-images"
    ' --repository-name "${IMAGE_REPOSITORY#*/}"'
    f' --image-ids imageTag="{CONTEXT_TAG_PREFIX}$CONTEXT_DIGEST"'
    " --query 'imageDetails[0].imageDigest' --output text"
)

# A build of a context whose image is already pushed (the ctx- tag goes last, so it names a
# whole image) builds and pushes nothing: it exports that digest. Two builds of one context (an
# `up` interrupted and run again) then push it once.
_FIND_PUSHED = (
    f'IMAGE_DIGEST=$({_DESCRIBE_CONTEXT_IMAGE} 2>/dev/null) || IMAGE_DIGEST=""\n'
    "if [[ $IMAGE_DIGEST =~ ^sha256:[0-9a-f]{64}$ ]]; then\n"
    "  IMAGE_REUSED=1\n"
    f'  echo "$IMAGE_REPOSITORY:{CONTEXT_TAG_PREFIX}$CONTEXT_DIGEST is pushed already ($IMAGE_DIGEST): nothing to build"\n'
    "else\n"
    "  IMAGE_REUSED=0\n"
    "fi\n"
    "export IMAGE_REUSED"
)

# The image/ context (the source zip's root) with today's Dockerfile. Its last RUN runs
# image/assert-image.sh and image/assert-toolchain.sh, so a failed assertion fails this command,
# and so the build phase, before anything is pushed (the pushes are post_build's). Nothing is
# built when pre_build found the context's image pushed already.
_BUILD = (
    'if [ "$IMAGE_REUSED" != 1 ]; then\n  '
    + "\\\n    ".join(
        (
            "docker buildx build --platform linux/amd64 --load ",
            '--build-arg DLC_IMAGE="$DLC_IMAGE" ',
            '--build-arg SLURMD_IMAGE="$SLURMD_IMAGE" ',
            '--build-arg SLURM_VERSION="$SLURM_VERSION" ',
            '--tag "$IMAGE_REPOSITORY:$IMAGE_TAG" ',
            f'--tag "$IMAGE_REPOSITORY:{CONTEXT_TAG_PREFIX}$CONTEXT_DIGEST" ',
            "--file Dockerfile .",
        )
    )
    + "\nfi"
)

# post_build runs after a failed build phase unless that phase aborts (the reference's
# `on-failure`); the build phase aborts, and this guard keeps the push behind a successful build
# even so (CODEBUILD_BUILD_SUCCEEDING: CodeBuild User Guide, "Environment variables in build
# environments", https://docs.aws.amazon.com/codebuild/latest/userguide/build-env-ref-env-vars.html).
_ONLY_AFTER_SUCCESS = r"""if [ "${CODEBUILD_BUILD_SUCCEEDING:-0}" != 1 ]; then
  echo "the build phase failed: nothing is pushed"
  exit 1
fi"""

# The ctx- tag last: its presence in the repository means the image is wholly pushed, which is
# what the runner's reuse of an earlier build relies on.
_PUSH = (
    '[ "$IMAGE_REUSED" = 1 ] || docker push "$IMAGE_REPOSITORY:$IMAGE_TAG"',
    f'[ "$IMAGE_REUSED" = 1 ] || docker push "$IMAGE_REPOSITORY:{CONTEXT_TAG_PREFIX}$CONTEXT_DIGEST"',
)

# The pushed manifest's digest as the registry holds it.
_EXPORT_DIGEST = (
    f"IMAGE_DIGEST=$({_DESCRIBE_CONTEXT_IMAGE}) || exit 1\n"
    "if [[ ! $IMAGE_DIGEST =~ ^sha256:[0-9a-f]{64}$ ]]; then\n"
    "  echo \"ECR gave no digest for the pushed image: '$IMAGE_DIGEST'\"\n"
    "  exit 1\n"
    "fi\n"
    "export IMAGE_DIGEST\n"
    'echo "the image: $IMAGE_REPOSITORY@$IMAGE_DIGEST"'
)


def buildspec_document() -> dict[str, Any]:
    """The buildspec as data (the reference's keys)."""
    return {
        "version": 0.2,
        "env": {
            # bash for [[ =~ ]] and <<< (the reference's env/shell).
            "shell": "bash",
            "exported-variables": [IMAGE_DIGEST, IMAGE_REUSED],
        },
        "phases": {
            # The tools' versions head the log: what a failure report is read against.
            "install": {"commands": ["docker version", "docker buildx version"]},
            "pre_build": {"commands": [_CHECK_DIGEST, _LOGIN, _FIND_PUSHED]},
            "build": {"on-failure": "ABORT", "commands": [_BUILD]},
            "post_build": {"commands": [_ONLY_AFTER_SUCCESS, *_PUSH, _EXPORT_DIGEST]},
        },
    }


class _BlockDumper(yaml.SafeDumper):
    """Multi-line commands as YAML literal blocks, so the buildspec reads as shell."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _represent_str)


def buildspec() -> str:
    """The buildspec text the CodeBuild project carries inline (source.buildspec)."""
    return yaml.dump(buildspec_document(), Dumper=_BlockDumper, sort_keys=False, width=120)


BUILDSPEC = buildspec()


# The Dockerfile's name in the context (the zip's root, where the buildspec builds).
DOCKERFILE = "Dockerfile"


def dockerfile_instructions(dockerfile: str) -> list[tuple[str, list[str]]]:
    """(INSTRUCTION, its words) of each instruction, backslash continuations joined, comment lines
    (within a continuation too, as Docker drops them) and the parser directive left out."""
    instructions, current = [], ""
    for line in dockerfile.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        words = (current + line).split()
        current = ""
        instructions.append((words[0].upper(), words[1:]))
    return instructions


# What makes an ADD source remote rather than a path in the context: "Any relative or local path
# that doesn't begin with a http://, https://, or git@ protocol prefix is considered a local file
# path" (Dockerfile reference, ADD, "Adding files from the build context":
# https://docs.docker.com/reference/dockerfile/#adding-files-from-the-build-context). COPY has no
# remote sources: every COPY source is a context path.
REMOTE_PREFIXES = ("http://", "https://", "git@")


def copied_sources(dockerfile: str) -> list[str]:
    """The context paths the Dockerfile's COPY and ADD instructions read (not those that copy
    from a stage, --from, nor ADD's remote sources), in the order written. The shell form only:
    the exec (JSON) form is refused, so no source goes unread."""
    sources = []
    for instruction, words in dockerfile_instructions(dockerfile):
        if instruction not in ("COPY", "ADD"):
            continue
        if words and words[0].startswith("["):
            raise ValueError(f"{DOCKERFILE}: {instruction} {' '.join(words)}: write it in the shell form")
        if any(w.startswith("--from=") for w in words):
            continue
        paths = [w for w in words if not w.startswith("--")]
        # A remote source (ADD of a URL or a Git repository) is fetched by the builder, not sent
        # in the context: the Dockerfile's own text, which the context digest covers, names it.
        sources.extend(p for p in paths[:-1] if not (instruction == "ADD" and p.startswith(REMOTE_PREFIXES)))
    return sources


def context_files(context: pathlib.Path) -> list[str]:
    """The files of `context` a build reads: the Dockerfile and what its COPY/ADD lines name
    (a directory as every file under it), relative paths, sorted. The one list both the context
    digest and the uploaded zip (components/slurmd_image.py) take, so a file the build never
    reads (image/README.md, build-image.sh, local clutter) neither starts a build nor is sent."""
    files = {DOCKERFILE}
    for source in copied_sources((context / DOCKERFILE).read_text()):
        matched = sorted(context.glob(source))
        if not matched:
            raise ValueError(f"{DOCKERFILE} copies {source!r}, which {context} does not hold")
        for path in matched:
            found = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
            files.update(p.relative_to(context).as_posix() for p in found)
    return sorted(files)


def _context_hashes(context: pathlib.Path) -> list[list[str]]:
    """[relative path, sha256 of the bytes] of each file a build reads. No mode: the zip CodeBuild
    gets carries none (pulumi sdk/go/common/resource/archive/archive.go addNextFileToZIP writes
    names and bytes only), so the Dockerfile's COPY --chmod, which the digest covers, sets them."""
    return [
        [name, hashlib.sha256((context / name).read_bytes()).hexdigest()] for name in context_files(context)
    ]


def context_digest(
    context: pathlib.Path,
    *,
    dlc_image: str,
    slurmd_image: str,
    slurm_version: str,
    image_tag: str,
    buildspec_text: str = BUILDSPEC,
) -> str:
    """The sha256 (64 hex digits) of a build's inputs: the files the build reads (context_files:
    relative paths and bytes; no modes, no times, no absolute path), the build arguments, the tag
    and the buildspec. Equal digests build equal images; the runner builds only on a new one."""
    inputs = {
        "files": _context_hashes(context),
        "args": {
            DLC_IMAGE: dlc_image,
            SLURMD_IMAGE: slurmd_image,
            SLURM_VERSION: slurm_version,
            IMAGE_TAG: image_tag,
        },
        "buildspec": buildspec_text,
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
