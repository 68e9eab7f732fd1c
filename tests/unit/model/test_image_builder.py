"""Where the slurmd image is built and the in-region builder's settings
(model/facts/image_builder.py)."""

from model.facts import audit_logs, image_builder


def test_the_in_region_builder_is_the_default():
    assert image_builder.DEFAULT_IMAGE_BUILDER == image_builder.CODEBUILD
    assert image_builder.IMAGE_BUILDERS == ("codebuild", "local")


def test_the_source_key_changes_with_the_context_digest_only():
    a, b = "a" * 64, "b" * 64
    assert image_builder.source_key(a) == image_builder.source_key(a)
    assert image_builder.source_key(a) != image_builder.source_key(b)
    assert image_builder.source_key(a).startswith(image_builder.SOURCE_PREFIX)


def test_the_project_is_named_after_the_repository_in_the_characters_codebuild_allows():
    import re

    name = image_builder.project_name("slinky-eks-dev/slurmd")
    assert name == "slinky-eks-dev-slurmd"
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9\-_]{1,254}", name)


def test_the_build_logs_are_kept_for_a_retention_cloudwatch_accepts():
    assert image_builder.BUILD_LOG_RETENTION_DAYS in audit_logs.RETENTION_DAYS
    assert image_builder.build_log_group("p") == "/aws/codebuild/p"


def _codebuild_range(shape: str) -> tuple[int, int]:
    """(min, max) of an integer shape of CodeBuild's service model, as botocore ships it."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("codebuild")
    return model.shape_for(shape).metadata["min"], model.shape_for(shape).metadata["max"]


def test_the_build_timeout_is_within_what_codebuild_accepts():
    low, high = _codebuild_range("BuildTimeOut")  # CreateProject timeoutInMinutes
    assert low <= image_builder.BUILD_TIMEOUT_MINUTES <= high


def test_the_queued_timeout_is_within_what_codebuild_accepts():
    # 5 to 480, not the build timeout's 5 to 2160.
    low, high = _codebuild_range("TimeOut")  # CreateProject queuedTimeoutInMinutes
    assert (low, high) == (5, 480)
    assert low <= image_builder.QUEUED_TIMEOUT_MINUTES <= high
