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


def test_the_build_timeouts_are_within_what_codebuild_accepts():
    assert 5 <= image_builder.BUILD_TIMEOUT_MINUTES <= 2160
    assert 5 <= image_builder.QUEUED_TIMEOUT_MINUTES <= 2160
