"""components/_parts/image_build_run.py: the run of the in-region image build, against botocore's
Stubber. Stubber checks every request against the service's model and every answer is shaped as
the API reference shows it:
- CodeBuild StartBuild https://docs.aws.amazon.com/codebuild/latest/APIReference/API_StartBuild.html
- CodeBuild BatchGetBuilds https://docs.aws.amazon.com/codebuild/latest/APIReference/API_BatchGetBuilds.html
  with Build (API_Build.html), BuildPhase (API_BuildPhase.html), PhaseContext (API_PhaseContext.html),
  LogsLocation (API_LogsLocation.html), ExportedEnvironmentVariable (API_ExportedEnvironmentVariable.html)
- CloudWatch Logs GetLogEvents
  https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_GetLogEvents.html
- CodeBuild ListBuildsForProject
  https://docs.aws.amazon.com/codebuild/latest/APIReference/API_ListBuildsForProject.html, and a
  build's environment (ProjectEnvironment, API_ProjectEnvironment.html; EnvironmentVariable,
  API_EnvironmentVariable.html)
- ECR DescribeImages https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_DescribeImages.html,
  BatchGetImage (API_BatchGetImage.html), PutImage (API_PutImage.html)
A call the test did not expect fails the test (Stubber answers it with an error)."""

from __future__ import annotations

import base64
import datetime
import json
import shutil
import subprocess
import sys

import boto3
import dill
import pytest
from botocore.stub import Stubber
from pulumi.dynamic.dynamic import serialize_provider

from components._parts import image_build_run
from components._parts.image_build_run import (
    BuildClients,
    ImageBuildFailed,
    ImageBuildRunProvider,
)
from devkit.offline_run import run_function
from model.builders.image_buildspec import context_digest
from tests.support.paths import REPO

REGION = "us-west-2"
PROJECT = "slinky-slurmd-image"
DIGEST = "ab" * 32
PUSHED = "sha256:" + "cd" * 32
REPOSITORY = "123456789012.dkr.ecr.us-west-2.amazonaws.com/slinky/slurmd"
BUILD_ID = f"{PROJECT}:0f2a9c14-4b0e-4c7e-9a57-5d8e3c1b2a61"
GROUP = "/aws/codebuild/slinky-slurmd-image"
STREAM = "0f2a9c14-4b0e-4c7e-9a57-5d8e3c1b2a61"
# The console link BatchGetBuilds gives (LogsLocation.deepLink).
LINK = (
    f"https://console.aws.amazon.com/cloudwatch/home?region=us-west-2#logEvent:group={GROUP};stream={STREAM}"
)
ENVIRONMENT = {
    "DLC_IMAGE": "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.13.0-gpu",
    "SLURMD_IMAGE": "ghcr.io/slinkyproject/slurmd:26.05.5-ubuntu24.04",
    "SLURM_VERSION": "26.05.5",
    "IMAGE_REPOSITORY": REPOSITORY,
    "IMAGE_TAG": "26.05.5-1",
}
T0 = datetime.datetime(2026, 12, 4, 22, 0, tzinfo=datetime.timezone.utc)


def _props(**changes) -> dict:
    props = {
        "project_name": PROJECT,
        "region": REGION,
        "source_location": f"slinky-image-sources/context/{DIGEST}.zip",
        "context_digest": DIGEST,
        "environment": {**ENVIRONMENT, "CONTEXT_DIGEST": DIGEST},
        "log_group_name": GROUP,
        "profile": None,
        "__provider": "serialized-provider",
    }
    return {**props, **changes}


def _phase(kind: str, status: str, *contexts: dict) -> dict:
    return {
        "phaseType": kind,
        "phaseStatus": status,
        "startTime": T0,
        "endTime": T0,
        "durationInSeconds": 1,
        "contexts": list(contexts),
    }


def _build(status: str, complete: bool, phases: list[dict], exported: list[dict] | None = None) -> dict:
    build = {
        "id": BUILD_ID,
        "arn": f"arn:aws:codebuild:us-west-2:123456789012:build/{BUILD_ID}",
        "buildNumber": 7,
        "startTime": T0,
        "currentPhase": phases[-1]["phaseType"] if phases else "SUBMITTED",
        "buildStatus": status,
        "projectName": PROJECT,
        "phases": phases,
        "logs": {
            "groupName": GROUP,
            "streamName": STREAM,
            "deepLink": LINK,
            "cloudWatchLogsArn": f"arn:aws:logs:us-west-2:123456789012:log-group:{GROUP}:log-stream:{STREAM}",
            "cloudWatchLogs": {"status": "ENABLED", "groupName": GROUP},
        },
        "timeoutInMinutes": 90,
        "queuedTimeoutInMinutes": 480,
        "buildComplete": complete,
        "initiator": "deployer",
    }
    if exported is not None:
        build["exportedEnvironmentVariables"] = exported
    return build


_DONE = [
    _phase(p, "SUCCEEDED") for p in ("SUBMITTED", "QUEUED", "PROVISIONING", "DOWNLOAD_SOURCE", "INSTALL")
]
SUCCEEDED = _build(
    "SUCCEEDED",
    True,
    [
        *_DONE,
        *(_phase(p, "SUCCEEDED") for p in ("PRE_BUILD", "BUILD", "POST_BUILD", "FINALIZING")),
        _phase("COMPLETED", ""),
    ],
    [{"name": "IMAGE_DIGEST", "value": PUSHED}],
)
RUNNING = _build(
    "IN_PROGRESS", False, [*_DONE, _phase("PRE_BUILD", "SUCCEEDED"), _phase("BUILD", "IN_PROGRESS")]
)
FAILED = _build(
    "FAILED",
    True,
    [
        *_DONE,
        _phase("PRE_BUILD", "SUCCEEDED"),
        _phase(
            "BUILD",
            "FAILED",
            {
                "statusCode": "COMMAND_EXECUTION_ERROR",
                "message": "Error while executing command: docker buildx build --platform linux/amd64 --load "
                "... Reason: exit status 1",
            },
        ),
        _phase("POST_BUILD", "SUCCEEDED"),
        _phase("FINALIZING", "SUCCEEDED"),
        _phase("COMPLETED", ""),
    ],
    [{"name": "IMAGE_DIGEST", "value": ""}],
)
LOG_LINES = [f"#23 {n} assert-image: line {n}\n" for n in range(30)]
MANIFEST_TYPE = "application/vnd.docker.distribution.manifest.v2+json"
MANIFEST = json.dumps({"schemaVersion": 2, "mediaType": MANIFEST_TYPE, "layers": []})
# A build StartBuild could not run because the role's permissions had not reached CodeBuild yet
# (PhaseContext of a PROVISIONING phase, as CodeBuild words it).
DENIED = _build(
    "FAILED",
    True,
    [
        *_DONE[:2],
        _phase(
            "PROVISIONING",
            "FAILED",
            {
                "statusCode": "ACCESS_DENIED",
                "message": "Service role arn:aws:iam::123456789012:role/slurmd-builder-role does not "
                "allow AWS CodeBuild to create Amazon CloudWatch Logs log streams for build. "
                "Error message: User is not authorized to perform: logs:CreateLogStream",
            },
        ),
        _phase("COMPLETED", ""),
    ],
)


def _running(build_id: str, digest: str) -> dict:
    """A build of the project still running, started for context `digest`."""
    build = {**RUNNING, "id": build_id}
    build["environment"] = {
        "type": "LINUX_CONTAINER",
        "image": "aws/codebuild/amazonlinux-x86_64-standard:5.0",
        "computeType": "BUILD_GENERAL1_LARGE",
        "privilegedMode": True,
        "imagePullCredentialsType": "CODEBUILD",
        "environmentVariables": [
            {"name": k, "value": v, "type": "PLAINTEXT"}
            for k, v in sorted({**ENVIRONMENT, "CONTEXT_DIGEST": digest}.items())
        ],
    }
    return build


class Services:
    """Stubbed clients of the region; `expect_*` queue an answer with the request it must get."""

    def __init__(self):
        session = boto3.Session(
            aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret", region_name=REGION
        )
        self.clients = BuildClients(
            session.client("codebuild"), session.client("logs"), session.client("ecr")
        )
        self.stubs = [Stubber(c) for c in (self.clients.codebuild, self.clients.logs, self.clients.ecr)]
        self.slept: list[float] = []

    def expect_no_image(self, digest: str = DIGEST, builds: list[dict] | None = None):
        """No image of the context in the repository; the project's newest builds are `builds`
        (none by default), which the run reads for a running build of the context."""
        self.stubs[0].add_response(
            "list_builds_for_project",
            # BuildIds has at least one member: a project without builds gives no `ids`.
            {"ids": [b["id"] for b in builds]} if builds else {},
            {"projectName": PROJECT},
        )
        if builds:
            self.stubs[0].add_response(
                "batch_get_builds", {"builds": builds}, {"ids": [b["id"] for b in builds]}
            )
        self.stubs[2].add_client_error(
            "describe_images",
            service_error_code="ImageNotFoundException",
            service_message=f"The image with imageId {{imageTag:'ctx-{digest}'}} does not exist within the repository",
            http_status_code=400,
            expected_params={
                "registryId": "123456789012",
                "repositoryName": "slinky/slurmd",
                "imageIds": [{"imageTag": f"ctx-{digest}"}],
            },
        )

    def expect_image(self, tags: tuple[str, ...] = ("26.05.5-1", f"ctx-{DIGEST}")):
        self.stubs[2].add_response(
            "describe_images",
            {
                "imageDetails": [
                    {
                        "registryId": "123456789012",
                        "repositoryName": "slinky/slurmd",
                        "imageDigest": PUSHED,
                        "imageTags": list(tags),
                        "imageSizeInBytes": 9_500_000_000,
                        "imagePushedAt": T0,
                        "imageManifestMediaType": "application/vnd.docker.distribution.manifest.v2+json",
                    }
                ]
            },
            {
                "registryId": "123456789012",
                "repositoryName": "slinky/slurmd",
                "imageIds": [{"imageTag": f"ctx-{DIGEST}"}],
            },
        )

    def expect_tagging(self, already: bool = False):
        """BatchGetImage of the context's image, then PutImage of its manifest under the stack's
        tag; `already`: ECR answers that the tag is on that image."""
        self.stubs[2].add_response(
            "batch_get_image",
            {
                "images": [
                    {
                        "registryId": "123456789012",
                        "repositoryName": "slinky/slurmd",
                        "imageId": {"imageDigest": PUSHED, "imageTag": f"ctx-{DIGEST}"},
                        "imageManifest": MANIFEST,
                        "imageManifestMediaType": MANIFEST_TYPE,
                    }
                ],
                "failures": [],
            },
            {
                "registryId": "123456789012",
                "repositoryName": "slinky/slurmd",
                "imageIds": [{"imageTag": f"ctx-{DIGEST}"}],
                "acceptedMediaTypes": list(image_build_run._MANIFEST_TYPES),
            },
        )
        put = {
            "registryId": "123456789012",
            "repositoryName": "slinky/slurmd",
            "imageManifest": MANIFEST,
            "imageManifestMediaType": MANIFEST_TYPE,
            "imageTag": "26.05.5-1",
            "imageDigest": PUSHED,
        }
        if already:
            self.stubs[2].add_client_error(
                "put_image",
                service_error_code="ImageAlreadyExistsException",
                service_message="Image with digest and tag '26.05.5-1' already exists",
                http_status_code=400,
                expected_params=put,
            )
        else:
            self.stubs[2].add_response(
                "put_image",
                {
                    "image": {
                        "registryId": "123456789012",
                        "repositoryName": "slinky/slurmd",
                        "imageId": {"imageDigest": PUSHED, "imageTag": "26.05.5-1"},
                        "imageManifest": MANIFEST,
                        "imageManifestMediaType": MANIFEST_TYPE,
                    }
                },
                put,
            )

    def expect_start(self, digest: str = DIGEST):
        variables = {**ENVIRONMENT, "CONTEXT_DIGEST": digest}
        self.stubs[0].add_response(
            "start_build",
            {"build": _build("IN_PROGRESS", False, [_phase("SUBMITTED", "SUCCEEDED")])},
            {
                "projectName": PROJECT,
                "sourceLocationOverride": f"slinky-image-sources/context/{digest}.zip",
                "environmentVariablesOverride": [
                    {"name": k, "value": variables[k], "type": "PLAINTEXT"} for k in sorted(variables)
                ],
            },
        )

    def expect_poll(self, build: dict):
        self.stubs[0].add_response("batch_get_builds", {"builds": [build]}, {"ids": [BUILD_ID]})

    def expect_log(self):
        self.stubs[1].add_response(
            "get_log_events",
            {
                "events": [
                    {"timestamp": 1764885600000 + n, "message": line, "ingestionTime": 1764885600500 + n}
                    for n, line in enumerate(LOG_LINES)
                ],
                "nextForwardToken": "f/3900",
                "nextBackwardToken": "b/3870",
            },
            {"logGroupName": GROUP, "logStreamName": STREAM, "limit": 30, "startFromHead": False},
        )

    def provider(self) -> ImageBuildRunProvider:
        services = self

        class Stubbed(ImageBuildRunProvider):
            def clients(self, props):
                assert props["region"] == REGION
                return services.clients

            def sleep(self, seconds):
                services.slept.append(seconds)

        return Stubbed()

    def __enter__(self):
        for stub in self.stubs:
            stub.activate()
        return self

    def __exit__(self, *failure):
        for stub in self.stubs:
            stub.deactivate()
        if failure[0] is None:
            for stub in self.stubs:
                stub.assert_no_pending_responses()


def test_a_successful_build_yields_the_digest_it_exported_its_id_and_log_link():
    with Services() as aws:
        aws.expect_no_image()
        aws.expect_start()
        aws.expect_poll(SUCCEEDED)
        result = aws.provider().create(_props())
    assert (result.outs["digest"], result.outs["build_id"], result.outs["log_url"]) == (
        PUSHED,
        BUILD_ID,
        LINK,
    )
    assert result.id == BUILD_ID


def test_the_run_polls_until_the_build_is_complete():
    with Services() as aws:
        aws.expect_no_image()
        aws.expect_start()
        aws.expect_poll(RUNNING)
        aws.expect_poll(RUNNING)
        aws.expect_poll(SUCCEEDED)
        result = aws.provider().create(_props())
    assert result.outs["digest"] == PUSHED
    assert aws.slept == [image_build_run.POLL_SECONDS] * 2


def test_a_failed_build_names_the_failed_phase_and_why_the_logs_last_lines_and_the_link():
    with Services() as aws:
        aws.expect_no_image()
        aws.expect_start()
        aws.expect_poll(FAILED)
        aws.expect_log()
        with pytest.raises(ImageBuildFailed) as failure:
            aws.provider().create(_props())
    message = str(failure.value)
    assert f"the image build {BUILD_ID} ended FAILED" in message
    assert (
        "phase BUILD FAILED: COMMAND_EXECUTION_ERROR: Error while executing command: docker buildx build"
        in message
    )
    assert "phase POST_BUILD" not in message
    assert "the log's last 30 lines:\n  #23 0 assert-image: line 0\n" in message
    assert "  #23 29 assert-image: line 29\n" in message
    assert message.endswith(f"the whole log: {LINK}")


def test_a_log_that_cannot_be_read_still_leaves_the_phase_and_the_link():
    with Services() as aws:
        aws.expect_no_image()
        aws.expect_start()
        aws.expect_poll(FAILED)
        aws.stubs[1].add_client_error(
            "get_log_events",
            service_error_code="ResourceNotFoundException",
            service_message="The specified log stream does not exist.",
        )
        with pytest.raises(ImageBuildFailed) as failure:
            aws.provider().create(_props())
    message = str(failure.value)
    assert "phase BUILD FAILED" in message
    assert f"(the log {GROUP}/{STREAM} could not be read:" in message
    assert message.endswith(f"the whole log: {LINK}")


def test_a_build_that_timed_out_names_its_phase():
    timed_out = _build(
        "TIMED_OUT",
        True,
        [
            *_DONE,
            _phase("PRE_BUILD", "SUCCEEDED"),
            _phase(
                "BUILD", "TIMED_OUT", {"statusCode": "BUILD_TIMED_OUT", "message": "Build has timed out. "}
            ),
        ],
    )
    with Services() as aws:
        aws.expect_no_image()
        aws.expect_start()
        aws.expect_poll(timed_out)
        aws.expect_log()
        with pytest.raises(
            ImageBuildFailed,
            match="ended TIMED_OUT\nphase BUILD TIMED_OUT: BUILD_TIMED_OUT: Build has timed out",
        ):
            aws.provider().create(_props())


def test_a_succeeded_build_that_exported_no_digest_fails_the_run():
    no_digest = {**SUCCEEDED, "exportedEnvironmentVariables": [{"name": "IMAGE_DIGEST", "value": ""}]}
    with Services() as aws:
        aws.expect_no_image()
        aws.expect_start()
        aws.expect_poll(no_digest)
        with pytest.raises(ImageBuildFailed, match="succeeded but exported IMAGE_DIGEST=''"):
            aws.provider().create(_props())


def test_the_image_of_the_same_context_in_the_repository_is_used_without_a_build():
    # A lost state or a re-created stack: the ctx-<digest> tag is there, so nothing is started
    # (Stubber fails any StartBuild, which no answer was queued for).
    with Services() as aws:
        aws.expect_image()
        result = aws.provider().create(_props())
    assert (result.outs["digest"], result.outs["build_id"], result.outs["log_url"]) == (PUSHED, "", "")
    assert result.id == f"ctx-{DIGEST}"


def test_an_image_of_the_same_context_without_the_stacks_tag_is_given_it():
    # A return to earlier inputs: slurmdImageTag moves back onto the image the nodes will run.
    with Services() as aws:
        aws.expect_image(tags=(f"ctx-{DIGEST}", "26.05.5-0"))
        aws.expect_tagging()
        result = aws.provider().create(_props())
    assert result.outs["digest"] == PUSHED


def test_a_tag_ecr_says_is_on_the_image_already_is_no_failure():
    with Services() as aws:
        aws.expect_image(tags=(f"ctx-{DIGEST}",))
        aws.expect_tagging(already=True)
        assert aws.provider().create(_props()).outs["digest"] == PUSHED


def test_a_running_build_of_the_same_context_is_waited_on_not_started_again():
    # An `up` interrupted while it waited, run again: no second build of the same context.
    other = f"{PROJECT}:11111111-2222-3333-4444-555555555555"
    with Services() as aws:
        aws.expect_no_image(builds=[_running(other, "ef" * 32), _running(BUILD_ID, DIGEST)])
        aws.expect_poll(SUCCEEDED)
        result = aws.provider().create(_props())
    assert (result.outs["digest"], result.outs["build_id"]) == (PUSHED, BUILD_ID)


def test_a_running_build_known_by_its_source_object_is_waited_on():
    # Should BatchGetBuilds not carry the variables' overrides, the source key names the context.
    running = {**RUNNING, "source": {"type": "S3", "location": f"slurmd-sources/image-context/{DIGEST}.zip"}}
    with Services() as aws:
        aws.expect_no_image(builds=[running])
        aws.expect_poll(SUCCEEDED)
        assert aws.provider().create(_props()).outs["build_id"] == BUILD_ID


def test_a_running_build_of_another_context_or_a_finished_one_of_this_context_starts_a_build():
    finished = {**_running(f"{PROJECT}:99999999-2222-3333-4444-555555555555", DIGEST), **FAILED}
    finished["id"] = f"{PROJECT}:99999999-2222-3333-4444-555555555555"
    with Services() as aws:
        aws.expect_no_image(builds=[_running(f"{PROJECT}:1-2-3", "ef" * 32), finished])
        aws.expect_start()
        aws.expect_poll(SUCCEEDED)
        assert aws.provider().create(_props()).outs["build_id"] == BUILD_ID


def test_a_build_that_found_its_image_pushed_meanwhile_gives_it_the_stacks_tag():
    reused = {
        **SUCCEEDED,
        "exportedEnvironmentVariables": [
            {"name": "IMAGE_DIGEST", "value": PUSHED},
            {"name": "IMAGE_REUSED", "value": "1"},
        ],
    }
    with Services() as aws:
        aws.expect_no_image()
        aws.expect_start()
        aws.expect_poll(reused)
        aws.expect_tagging()
        assert aws.provider().create(_props()).outs["digest"] == PUSHED


def test_a_build_denied_access_while_it_provisions_is_started_once_more_after_a_pause():
    # A role made moments before: IAM's changes take a while to reach CodeBuild.
    with Services() as aws:
        aws.expect_no_image()
        aws.expect_start()
        aws.expect_poll(DENIED)
        aws.expect_start()
        aws.expect_poll(SUCCEEDED)
        result = aws.provider().create(_props())
    assert result.outs["digest"] == PUSHED
    assert aws.slept == [image_build_run.RETRY_SECONDS]


def test_a_build_denied_access_twice_fails_the_run_with_the_phase():
    with Services() as aws:
        aws.expect_no_image()
        aws.expect_start()
        aws.expect_poll(DENIED)
        aws.expect_start()
        aws.expect_poll(DENIED)
        aws.expect_log()
        with pytest.raises(ImageBuildFailed, match="phase PROVISIONING FAILED: ACCESS_DENIED"):
            aws.provider().create(_props())


def _outputs_after_a_build() -> dict:
    with Services() as aws:
        aws.expect_no_image()
        aws.expect_start()
        aws.expect_poll(SUCCEEDED)
        return aws.provider().create(_props()).outs


def test_the_outputs_carry_the_inputs_the_next_diff_compares():
    # The engine hands Diff the last outputs as olds.
    outs = _outputs_after_a_build()
    assert {k: outs[k] for k in ("project_name", "region", "context_digest", "environment")} == {
        k: _props()[k] for k in ("project_name", "region", "context_digest", "environment")
    }


def test_nothing_changed_is_no_diff_whatever_the_serialized_provider():
    olds = {**_outputs_after_a_build(), "__provider": "pickled-by-an-older-sdk"}
    diff = ImageBuildRunProvider().diff(BUILD_ID, olds, _props(__provider="pickled-now"))
    assert diff.changes is False


def test_the_source_objects_name_and_the_log_group_are_no_diff():
    olds = _outputs_after_a_build()
    news = _props(source_location="other-bucket/other.zip", log_group_name="/other", profile="ops")
    assert ImageBuildRunProvider().diff(BUILD_ID, olds, news).changes is False


@pytest.mark.parametrize(
    "change",
    [
        {"context_digest": "ef" * 32},
        {"project_name": "other-project"},
        {"region": "us-east-1"},
        {
            "environment": {
                **ENVIRONMENT,
                "IMAGE_REPOSITORY": "123456789012.dkr.ecr.us-west-2.amazonaws.com/other",
            }
        },
    ],
    ids=["context", "project", "region", "repository"],
)
def test_a_change_of_what_is_built_or_where_it_goes_is_an_update_not_a_replacement(change):
    diff = ImageBuildRunProvider().diff(BUILD_ID, _outputs_after_a_build(), _props(**change))
    assert (diff.changes, diff.replaces) == (True, [])


def test_a_value_preview_does_not_know_yet_is_a_diff():
    # Preview passes an unknown as this sentinel (pulumi.runtime.rpc.UNKNOWN).
    from pulumi.runtime.rpc import UNKNOWN

    environment = {**ENVIRONMENT, "IMAGE_REPOSITORY": UNKNOWN}
    assert (
        ImageBuildRunProvider()
        .diff(BUILD_ID, _outputs_after_a_build(), _props(environment=environment))
        .changes
    )


def test_a_changed_file_of_the_context_is_a_new_build_and_an_unchanged_one_none(tmp_path):
    context = tmp_path / "image"
    shutil.copytree(REPO / "image", context)
    args = {
        "dlc_image": ENVIRONMENT["DLC_IMAGE"],
        "slurmd_image": ENVIRONMENT["SLURMD_IMAGE"],
        "slurm_version": "26.05.5",
        "image_tag": "26.05.5-1",
    }
    first = context_digest(context, **args)
    olds = {**_props(), "context_digest": first, "digest": PUSHED}
    provider = ImageBuildRunProvider()
    assert (
        provider.diff(BUILD_ID, olds, _props(context_digest=context_digest(context, **args))).changes is False
    )
    (context / "loader.sh").write_text((context / "loader.sh").read_text() + "# changed\n")
    changed = context_digest(context, **args)
    assert provider.diff(BUILD_ID, olds, _props(context_digest=changed)).changes is True
    source = f"slinky-image-sources/context/{changed}.zip"
    with Services() as aws:
        aws.expect_no_image(changed)
        aws.expect_start(changed)
        aws.expect_poll(SUCCEEDED)
        news = _props(
            context_digest=changed,
            source_location=source,
            environment={**ENVIRONMENT, "CONTEXT_DIGEST": changed},
        )
        result = aws.provider().update(BUILD_ID, olds, news)
    assert (result.outs["digest"], result.outs["context_digest"]) == (PUSHED, changed)


def test_delete_calls_no_service():
    with Services() as aws:
        aws.provider().delete(BUILD_ID, _props())


def test_check_refuses_a_context_digest_that_is_not_64_hex_digits():
    failures = ImageBuildRunProvider().check({}, _props(context_digest="latest")).failures
    assert [(f.property, f.reason) for f in failures] == [
        ("context_digest", "'latest' is not 64 lower-case hex digits")
    ]


def test_the_provider_is_pickled_by_reference_and_the_same_on_every_run():
    first, second = serialize_provider(ImageBuildRunProvider()), serialize_provider(ImageBuildRunProvider())
    assert first == second
    pickled = base64.b64decode(first)
    # A reference (module and class name, under a hundred bytes), not the class's code by value.
    assert b"components._parts.image_build_run" in pickled and len(pickled) < 200


def test_the_provider_process_started_in_the_project_directory_unpickles_it():
    # What `python -m pulumi.dynamic` does with the state's __provider (pulumi 3.272.0
    # sdk/python/lib/pulumi/dynamic/__main__.py get_provider: dill.loads of the base64 text); the
    # engine starts it in the project directory, which is then first on sys.path.
    serialized = serialize_provider(ImageBuildRunProvider())
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import base64, sys, dill; p = dill.loads(base64.b64decode(sys.argv[1])); "
            "print(type(p).__module__, type(p).__name__)",
            serialized,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert loaded.stdout.strip() == "components._parts.image_build_run ImageBuildRunProvider", loaded.stderr


def test_a_build_codebuild_does_not_know_fails_the_run():
    with Services() as aws:
        aws.expect_no_image()
        aws.expect_start()
        aws.stubs[0].add_response(
            "batch_get_builds", {"builds": [], "buildsNotFound": [BUILD_ID]}, {"ids": [BUILD_ID]}
        )
        with pytest.raises(ImageBuildFailed, match=f"CodeBuild does not know build {BUILD_ID}"):
            aws.provider().create(_props())


def test_the_resource_registers_its_inputs_with_the_context_digest_among_the_build_variables():
    def program():
        image_build_run.ImageBuildRun(
            "slurmd-image-run",
            project_name=PROJECT,
            region=REGION,
            source_location=f"slinky-image-sources/context/{DIGEST}.zip",
            context_digest=DIGEST,
            environment=ENVIRONMENT,
            log_group_name=GROUP,
        )

    run = run_function(program).named("slurmd-image-run")
    assert run.type == "pulumi-python:dynamic:Resource"
    assert run.inputs["environment"] == {**ENVIRONMENT, "CONTEXT_DIGEST": DIGEST}
    assert (run.inputs["context_digest"], run.inputs["project_name"], run.inputs["region"]) == (
        DIGEST,
        PROJECT,
        REGION,
    )
    # The pickled provider is kept as a secret (serialize_as_secret_always).
    assert "__provider" in run.secret_inputs


def _served_diff(olds: dict, news: dict) -> dict:
    asked = json.dumps({"olds": olds, "news": news})
    answer = subprocess.run(
        [sys.executable, "-m", "tests.support.dynamic_servicer"],
        input=asked,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert answer.returncode == 0, answer.stderr
    return json.loads(answer.stdout)


def test_through_pulumis_dynamic_provider_server_a_second_up_with_nothing_changed_is_no_diff():
    # The state's outputs as the last run left them, its provider pickled then (here by an older
    # pickle protocol, so the text differs); the program's inputs now, pickled again: the server
    # unpickles the new one and asks it.
    pickled_then = base64.b64encode(dill.dumps(ImageBuildRunProvider(), protocol=2)).decode()
    pickled_now = serialize_provider(ImageBuildRunProvider())
    assert pickled_then != pickled_now
    olds = {**_outputs_after_a_build(), "__provider": pickled_then}
    news = {**_props(), "__provider": pickled_now}
    assert _served_diff(olds, news) == {"changes": "none", "replaces": []}


def test_through_pulumis_dynamic_provider_server_a_new_context_is_an_update():
    pickled = serialize_provider(ImageBuildRunProvider())
    olds = {**_outputs_after_a_build(), "__provider": pickled}
    news = {**_props(context_digest="ef" * 32), "__provider": pickled}
    assert _served_diff(olds, news) == {"changes": "some", "replaces": []}
