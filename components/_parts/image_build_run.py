"""ImageBuildRun: one run of the stack's CodeBuild project that builds the slurmd image in the region
(docs/decisions/image-builder.md), as a Pulumi dynamic resource whose output is the pushed
image's digest.

- create/update: if the repository already holds the image of this context (its ctx-<digest>
  tag, ECR DescribeImages), that image, given the stack's tag too (BatchGetImage, PutImage), so
  slurmdImageTag names what the nodes run. Else, if a build of this context is still running
  (an `up` interrupted while it waited: ListBuildsForProject, BatchGetBuilds, the build's
  CONTEXT_DIGEST), wait on it; else StartBuild, then BatchGetBuilds until the build is complete.
  A build that fails in PROVISIONING or DOWNLOAD_SOURCE for want of access is started once more
  after a pause (a new role's permissions take a while to reach every service). On SUCCEEDED the
  digest is the build's exported IMAGE_DIGEST (model/builders/image_buildspec.py); on anything
  else the error names the failed phase, carries the log's last lines (CloudWatch Logs
  GetLogEvents) and the console link to the rest.
- diff: a new build only when what the image is built from or where it goes changes: the context
  digest, the project, the region, the repository. Nothing else (the serialized provider, the
  source object's name, the log group) is a change, so a second `up` is a no-op.
- delete: nothing. The image belongs to the repository, which the stack deletes with its images
  (force_delete); a build that ran cannot be undone, and the repository's lifecycle policy ages
  out images no run uses.

The provider is pickled by reference (dill keeps a class of an importable module as its module
and name, pulumi 3.272.0 sdk/python/lib/pulumi/dynamic/dynamic.py serialize_provider), and the
dynamic provider process (`python -m pulumi.dynamic`, which the engine starts in the program's
directory: pulumi pkg/resource/plugin/plugin.go execPlugin, `cmd.Dir = pwd`; so the project's
packages are first on its sys.path) unpickles it by importing this module. Holding no
state, it serializes to the same string on every run.

API references (the shapes the code reads):
- StartBuild https://docs.aws.amazon.com/codebuild/latest/APIReference/API_StartBuild.html
- BatchGetBuilds https://docs.aws.amazon.com/codebuild/latest/APIReference/API_BatchGetBuilds.html,
  Build https://docs.aws.amazon.com/codebuild/latest/APIReference/API_Build.html (buildStatus,
  buildComplete, phases, logs, exportedEnvironmentVariables), BuildPhase
  https://docs.aws.amazon.com/codebuild/latest/APIReference/API_BuildPhase.html, PhaseContext
  https://docs.aws.amazon.com/codebuild/latest/APIReference/API_PhaseContext.html, LogsLocation
  https://docs.aws.amazon.com/codebuild/latest/APIReference/API_LogsLocation.html
- GetLogEvents https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_GetLogEvents.html
- ListBuildsForProject https://docs.aws.amazon.com/codebuild/latest/APIReference/API_ListBuildsForProject.html
  (build ids, newest first by default); Build.environment is the build's ProjectEnvironment, whose
  environmentVariables carry StartBuild's environmentVariablesOverride (botocore's codebuild
  2016-10-06 service model: Build.environment "Information about the build environment for this
  build")
- DescribeImages https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_DescribeImages.html,
  BatchGetImage https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_BatchGetImage.html,
  PutImage https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_PutImage.html
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

import boto3
import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ResourceProvider, UpdateResult

from model.builders.image_buildspec import (
    CONTEXT_DIGEST,
    IMAGE_DIGEST,
    IMAGE_REPOSITORY,
    IMAGE_REUSED,
    IMAGE_TAG,
    context_tag,
)
from model.facts.image_builder import source_key

# Between two BatchGetBuilds: a build takes tens of minutes (the DLC pull alone is 15-21 GB).
POLL_SECONDS = 15.0
# The lines of a failed build's log a failure shows; the link leads to the rest.
LOG_TAIL_LINES = 30
# Before the one new start of a build that failed for want of access: IAM is eventually
# consistent, and a role made moments before may not yet be honoured everywhere (IAM User Guide,
# "Changes that I make are not always immediately visible":
# https://docs.aws.amazon.com/IAM/latest/UserGuide/troubleshoot_general.html#troubleshoot_general_eventual-consistency).
RETRY_SECONDS = 60.0
# The phases in which a build fails for a permission of its role (assuming it, reading the
# source), and how their contexts' messages say so.
_ACCESS_PHASES = ("PROVISIONING", "DOWNLOAD_SOURCE")
_ACCESS_DENIED = re.compile(r"access ?denied|not authorized|unable to assume", re.IGNORECASE)
# The manifests BatchGetImage may return for re-tagging (ECR API Reference, BatchGetImage
# acceptedMediaTypes): what docker push and buildx push.
_MANIFEST_TYPES = (
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.oci.image.index.v1+json",
)
# Phase statuses that end a build unsuccessfully (BuildPhase.phaseStatus).
_FAILED_PHASE = ("FAILED", "FAULT", "TIMED_OUT", "STOPPED")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_CONTEXT_DIGEST = re.compile(r"^[0-9a-f]{64}$")
# <account>.dkr.ecr.<region>.amazonaws.com/<name>: the repository URL ECR gives.
_REPOSITORY_URL = re.compile(r"^(?P<account>\d{12})\.dkr\.ecr[^/]*/(?P<name>.+)$")
# The inputs whose change is a new build (diff).
_BUILD_INPUTS = ("project_name", "region", "context_digest")


class ImageBuildFailed(Exception):
    """A build ended other than SUCCEEDED, or succeeded without the digest; the message is what
    the deployer reads in `pulumi up`'s output."""


@dataclass(frozen=True)
class BuildClients:
    """The three services a run talks to, each a botocore client of the stack's region."""

    codebuild: Any
    logs: Any
    ecr: Any


def session_clients(region: str, profile: Optional[str]) -> BuildClients:
    """Clients from the deployer's credentials: the stack's aws:profile if it sets one, else
    boto3's default chain (the same the Pulumi AWS provider reads)."""
    session = boto3.Session(profile_name=profile or None, region_name=region)
    return BuildClients(session.client("codebuild"), session.client("logs"), session.client("ecr"))


def repository_of(url: str) -> tuple[str, str]:
    """(registry id, repository name) of a repository URL."""
    match = _REPOSITORY_URL.match(url)
    if not match:
        raise ValueError(f"{IMAGE_REPOSITORY} {url!r} is not an ECR repository URL")
    return match["account"], match["name"]


def existing_image(ecr: Any, repository_url: str, context_digest: str) -> Optional[dict]:
    """The repository's image under this context's tag (DescribeImages imageDetails: its
    imageDigest and imageTags), or None."""
    registry_id, name = repository_of(repository_url)
    try:
        found = ecr.describe_images(
            registryId=registry_id, repositoryName=name, imageIds=[{"imageTag": context_tag(context_digest)}]
        )
    except (ecr.exceptions.ImageNotFoundException, ecr.exceptions.RepositoryNotFoundException):
        return None
    details = found.get("imageDetails", [])
    return details[0] if details else None


def tag_image(ecr: Any, repository_url: str, context_digest: str, tag: str) -> None:
    """Puts `tag` on the image of this context's tag: its manifest put again under the new tag
    (ECR User Guide, "Retagging an image"), so slurmdImageTag names the image the nodes run and the
    repository's lifecycle policy keeps it (components/slurmd_image.py)."""
    registry_id, name = repository_of(repository_url)
    got = ecr.batch_get_image(
        registryId=registry_id,
        repositoryName=name,
        imageIds=[{"imageTag": context_tag(context_digest)}],
        acceptedMediaTypes=list(_MANIFEST_TYPES),
    )
    if not got.get("images"):
        raise ImageBuildFailed(
            f"ECR holds no image under {context_tag(context_digest)} in {repository_url} to tag {tag}: "
            + "; ".join(f"{f.get('failureCode')}: {f.get('failureReason')}" for f in got.get("failures", []))
        )
    image = got["images"][0]
    put = {
        "registryId": registry_id,
        "repositoryName": name,
        "imageManifest": image["imageManifest"],
        "imageTag": tag,
        "imageDigest": image["imageId"]["imageDigest"],
    }
    if image.get("imageManifestMediaType"):
        put["imageManifestMediaType"] = image["imageManifestMediaType"]
    try:
        ecr.put_image(**put)
    except ecr.exceptions.ImageAlreadyExistsException:
        return  # the tag is on this image already


def running_build(codebuild: Any, project_name: str, context_digest: str) -> Optional[str]:
    """The id of a build of the project still running for this context, or None: its
    CONTEXT_DIGEST variable, or its source (Build.source.location, "<bucket>/<key>"), whose key is
    named by the digest (image_builder.source_key): either says it, should one not carry the
    override. One page, the newest builds (ListBuildsForProject's default order): a running build
    is among them."""
    ids = codebuild.list_builds_for_project(projectName=project_name).get("ids", [])[:100]
    if not ids:
        return None
    for build in codebuild.batch_get_builds(ids=ids).get("builds", []):
        if build.get("buildComplete") or build.get("buildStatus") != "IN_PROGRESS":
            continue
        variables = (build.get("environment") or {}).get("environmentVariables", [])
        location = (build.get("source") or {}).get("location", "")
        if location.endswith(f"/{source_key(context_digest)}") or any(
            v.get("name") == CONTEXT_DIGEST and v.get("value") == context_digest for v in variables
        ):
            return build["id"]
    return None


def start_build(
    codebuild: Any, project_name: str, source_location: str, environment: Mapping[str, str]
) -> str:
    """StartBuild of the project on this run's source object and variables; the build's id."""
    started = codebuild.start_build(
        projectName=project_name,
        # "<bucket>/<key>" of the zip: StartBuild's sourceLocationOverride for an S3 source.
        sourceLocationOverride=source_location,
        environmentVariablesOverride=[
            {"name": name, "value": value, "type": "PLAINTEXT"} for name, value in sorted(environment.items())
        ],
    )
    return started["build"]["id"]


def wait_for_build(
    codebuild: Any, build_id: str, sleep: Callable[[float], None], interval: float = POLL_SECONDS
) -> dict:
    """The build once CodeBuild says it is complete (buildComplete), polled every `interval` s.
    CodeBuild ends every build by the project's timeouts, so the wait ends."""
    while True:
        answer = codebuild.batch_get_builds(ids=[build_id])
        if not answer.get("builds"):
            raise ImageBuildFailed(
                f"CodeBuild does not know build {build_id} (BatchGetBuilds: buildsNotFound)"
            )
        build = answer["builds"][0]
        if build.get("buildComplete"):
            return build
        sleep(interval)


def log_tail(logs: Any, build: dict, log_group_name: str, lines: int = LOG_TAIL_LINES) -> list[str]:
    """The last `lines` lines of the build's CloudWatch log, oldest first; a line saying why when
    the log cannot be read (the deep link still leads to it). The group is the build's, else the
    project's (`log_group_name`); the stream is the build's own."""
    location = build.get("logs") or {}
    group, stream = location.get("groupName") or log_group_name, location.get("streamName")
    if not (group and stream):
        return ["(the build wrote no CloudWatch log)"]
    try:
        answer = logs.get_log_events(
            logGroupName=group, logStreamName=stream, limit=lines, startFromHead=False
        )
    except Exception as error:  # noqa: BLE001 - any reason to not read the log is reported, not raised
        return [f"(the log {group}/{stream} could not be read: {error})"]
    return [event["message"].rstrip("\n") for event in answer.get("events", [])]


def failure_report(build: dict, tail: list[str]) -> str:
    """What a failed build tells the deployer: its status, each failed phase with its contexts'
    messages, the log's last lines and where to read the rest."""
    failed = [p for p in build.get("phases", []) if p.get("phaseStatus") in _FAILED_PHASE]
    lines = [f"the image build {build['id']} ended {build.get('buildStatus')}"]
    if failed:
        for phase in failed:
            reasons = "; ".join(
                f"{c.get('statusCode', '')}: {c.get('message', '')}".strip(": ")
                for c in phase.get("contexts", [])
            )
            lines.append(
                f"phase {phase['phaseType']} {phase['phaseStatus']}" + (f": {reasons}" if reasons else "")
            )
    else:
        lines.append("no phase reports a failure")
    lines.append(f"the log's last {len(tail)} lines:")
    lines.extend(f"  {line}" for line in tail)
    lines.append(
        f"the whole log: {(build.get('logs') or {}).get('deepLink', '(no link: the build wrote no log)')}"
    )
    return "\n".join(lines)


def denied_access(build: dict) -> bool:
    """Whether the build failed before its commands ran for want of access (its role's
    permissions not yet visible to CodeBuild, or to S3 reading the source)."""
    return any(
        phase.get("phaseType") in _ACCESS_PHASES
        and phase.get("phaseStatus") in _FAILED_PHASE
        and any(_ACCESS_DENIED.search(c.get("message", "")) for c in phase.get("contexts", []))
        for phase in build.get("phases", [])
    )


def build_image(
    clients: BuildClients,
    inputs: Mapping[str, Any],
    sleep: Callable[[float], None] = time.sleep,
    interval: float = POLL_SECONDS,
) -> dict[str, str]:
    """The run: the digest (and the build's id and log link) of the image of `inputs`'
    context, built unless the repository already holds it or a build of it is running."""
    digest = inputs["context_digest"]
    environment = {**inputs["environment"], CONTEXT_DIGEST: digest}
    repository, tag = environment[IMAGE_REPOSITORY], environment[IMAGE_TAG]
    reused = existing_image(clients.ecr, repository, digest)
    if reused:
        # A lost state, a re-created stack or a return to earlier inputs finds the image of the
        # same inputs: no build, and the stack's tag moves onto it.
        if tag not in reused.get("imageTags", []):
            tag_image(clients.ecr, repository, digest, tag)
        return {"digest": reused["imageDigest"], "build_id": "", "log_url": ""}
    build_id = running_build(clients.codebuild, inputs["project_name"], digest)
    for attempt in (1, 2):
        if not build_id:
            build_id = start_build(
                clients.codebuild, inputs["project_name"], inputs["source_location"], environment
            )
        build = wait_for_build(clients.codebuild, build_id, sleep, interval)
        if attempt == 1 and build.get("buildStatus") != "SUCCEEDED" and denied_access(build):
            sleep(RETRY_SECONDS)
            build_id = ""
            continue
        break
    link = (build.get("logs") or {}).get("deepLink", "")
    if build.get("buildStatus") != "SUCCEEDED":
        raise ImageBuildFailed(failure_report(build, log_tail(clients.logs, build, inputs["log_group_name"])))
    exported = {v.get("name"): v.get("value") for v in build.get("exportedEnvironmentVariables", [])}
    pushed = exported.get(IMAGE_DIGEST) or ""
    if not _DIGEST.match(pushed):
        raise ImageBuildFailed(
            f"the image build {build_id} succeeded but exported {IMAGE_DIGEST}={pushed!r}, not a "
            f"sha256 digest; the log: {link}"
        )
    if exported.get(IMAGE_REUSED) == "1":
        # The build found the image another build of this context had pushed meanwhile, and
        # built and pushed nothing: the stack's tag moves onto that image.
        tag_image(clients.ecr, repository, digest, tag)
    return {"digest": pushed, "build_id": build_id, "log_url": link}


def build_changes(olds: Mapping[str, Any], news: Mapping[str, Any]) -> list[str]:
    """The inputs whose change makes a new build: the context digest, the project, the region and
    the repository the image goes to. `olds` are the last run's outputs, which carry its inputs."""

    def repository(props: Mapping[str, Any]) -> Any:
        environment = props.get("environment")
        return environment.get(IMAGE_REPOSITORY) if isinstance(environment, Mapping) else environment

    changed = [key for key in _BUILD_INPUTS if olds.get(key) != news.get(key)]
    if repository(olds) != repository(news):
        changed.append(f"environment.{IMAGE_REPOSITORY}")
    return changed


def _inputs(props: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in props.items() if k != "__provider"}


class ImageBuildRunProvider(ResourceProvider):
    """The dynamic provider: stateless, so its pickle is the same on every run."""

    def clients(self, props: Mapping[str, Any]) -> BuildClients:
        return session_clients(props["region"], props.get("profile"))

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures = []
        digest = news.get("context_digest")
        if isinstance(digest, str) and not _CONTEXT_DIGEST.match(digest):
            failures.append(CheckFailure("context_digest", f"{digest!r} is not 64 lower-case hex digits"))
        return CheckResult(news, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = build_changes(olds, news)
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def _run(self, props: dict[str, Any]) -> dict[str, Any]:
        inputs = _inputs(props)
        return {**inputs, **build_image(self.clients(inputs), inputs, self.sleep)}

    def create(self, props: dict[str, Any]) -> CreateResult:
        outs = self._run(props)
        # The id of the run that made the resource; later runs (updates) keep it.
        return CreateResult(outs["build_id"] or context_tag(outs["context_digest"]), outs)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(self._run(news))

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing: see the module's docstring."""


class ImageBuildRun(pulumi.dynamic.Resource):
    """One build of the slurmd image in CodeBuild, waited for; `digest` is what nodes run."""

    digest: pulumi.Output[str]  # sha256:<hex> of the pushed image
    build_id: pulumi.Output[str]  # the CodeBuild build's id; "" when an earlier build's image was reused
    log_url: pulumi.Output[str]  # the build log's console link (BatchGetBuilds logs.deepLink); "" when reused

    def __init__(
        self,
        name: str,
        *,
        project_name: pulumi.Input[str],
        region: str,
        source_location: pulumi.Input[str],
        context_digest: str,
        environment: Mapping[str, pulumi.Input[str]],
        log_group_name: pulumi.Input[str],
        profile: Optional[str] = None,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        """project_name: the CodeBuild project; region: the stack's (aws:region); source_location:
        "<bucket>/<key>" of the context's zip; context_digest: image_buildspec.context_digest;
        environment: the buildspec's run variables (image_buildspec.RUN_VARIABLES; CONTEXT_DIGEST
        is set from context_digest); log_group_name: the project's log group; profile: the stack's
        aws:profile, if any."""
        super().__init__(
            ImageBuildRunProvider(),
            name,
            {
                "project_name": project_name,
                "region": region,
                "source_location": source_location,
                "context_digest": context_digest,
                "environment": {**environment, CONTEXT_DIGEST: context_digest},
                "log_group_name": log_group_name,
                "profile": profile,
                "digest": None,
                "build_id": None,
                "log_url": None,
            },
            opts,
        )
