"""Image references and the registries they name (model/facts/image_references.py)."""

import pytest

from model.facts.image_references import (
    dlc_reference,
    dlc_registry,
    ecr_registry,
    ecr_repository_arn,
    reference_problem,
    registry_host,
)

DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    "reference",
    ["ubuntu", "ubuntu:24.04", f"ghcr.io/org/image@{DIGEST}", f"localhost:5000/x:1@{DIGEST}"],
)
def test_a_reference_in_the_distribution_grammar_is_accepted(reference):
    assert reference_problem(reference) is None


def test_an_upper_case_repository_is_refused_naming_the_grammar():
    assert "distribution/reference grammar" in reference_problem("Ubuntu:24.04")


def test_a_name_over_255_characters_is_refused():
    assert "at most 255 characters" in reference_problem("a" * 256)


def test_a_digest_of_the_wrong_length_is_refused():
    assert "64 lower-case hex digits" in reference_problem("ubuntu@sha256:" + "a" * 63)


def test_the_first_path_element_is_a_host_only_with_a_dot_a_colon_or_as_localhost():
    hosts = [registry_host(r) for r in ("ghcr.io/x", "localhost/x", "reg:5000/x", "library/ubuntu", "ubuntu")]
    assert hosts == ["ghcr.io", "localhost", "reg:5000", None, None]


def test_an_ecr_host_gives_its_account_and_region_and_any_other_host_none():
    assert ecr_registry("123456789012.dkr.ecr.us-west-2.amazonaws.com") == ("123456789012", "us-west-2")
    assert ecr_registry("ghcr.io") is None and ecr_registry(None) is None


def test_a_dlc_without_a_host_lives_in_the_regions_dlc_registry():
    assert (
        dlc_reference("pytorch-training:2.8", "us-west-2")
        == f"{dlc_registry('us-west-2')}/pytorch-training:2.8"
    )
    assert dlc_reference("ghcr.io/x:1", "us-west-2") == "ghcr.io/x:1"


def test_a_china_regions_dlc_registry_is_under_amazonaws_com_cn():
    assert dlc_registry("cn-northwest-1").endswith(".amazonaws.com.cn")


def test_a_region_without_a_known_dlc_registry_is_refused_by_name():
    assert dlc_registry("xx-nowhere-1") is None
    with pytest.raises(ValueError, match="xx-nowhere-1"):
        dlc_reference("pytorch-training:2.8", "xx-nowhere-1")


def test_an_ecr_reference_names_its_repository_arn_without_tag_or_digest():
    digest = "sha256:" + "cd" * 32
    reference = f"763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.9.0-gpu@{digest}"
    assert ecr_repository_arn(reference) == "arn:aws:ecr:us-west-2:763104351884:repository/pytorch-training"


def test_a_china_regions_repository_arn_is_in_the_aws_cn_partition():
    reference = "727897471807.dkr.ecr.cn-north-1.amazonaws.com.cn/team/pytorch:1"
    assert ecr_repository_arn(reference) == "arn:aws-cn:ecr:cn-north-1:727897471807:repository/team/pytorch"


def test_a_reference_on_another_registry_names_no_ecr_repository():
    assert ecr_repository_arn("ghcr.io/slinkyproject/slurmd:26.05.5-ubuntu24.04") is None
