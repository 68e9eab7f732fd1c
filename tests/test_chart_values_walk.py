"""Every key the program puts into the Slinky values exists in chart 1.2.1, and every block the
chart copies into custom resources is valid there; the walk catches misspelled and misplaced
keys that Helm would silently ignore."""
import copy

import pytest

from chart_walk import copied_block_problems, load_chart, unknown_keys


@pytest.fixture(scope="module")
def values(dev):
    return dev.named("slurm-release").inputs["values"]


@pytest.fixture(scope="module")
def chart():
    return load_chart()


def test_every_generated_key_exists_in_the_chart(values, chart):
    assert unknown_keys(values, chart) == []


def test_copied_blocks_validate_against_the_crds_and_kubernetes(values):
    assert copied_block_problems(values, "1.36") == []


def test_walk_catches_a_misspelled_key(values, chart):
    bad = copy.deepcopy(values)
    bad["nodesets"]["slinky"]["extraConfmap"] = bad["nodesets"]["slinky"].pop("extraConfMap")
    assert unknown_keys(bad, chart) == ["nodesets.slinky.extraConfmap"]


def test_walk_catches_a_misplaced_key(values, chart):
    bad = copy.deepcopy(values)
    bad["nodesets"]["slinky"]["nodeSelector"] = {"role": "gpu"}
    assert unknown_keys(bad, chart) == ["nodesets.slinky.nodeSelector"]


def test_walk_catches_a_misplaced_controller_key(values, chart):
    bad = copy.deepcopy(values)
    bad["controller"]["nodeSelector"] = {"role": "core"}
    assert unknown_keys(bad, chart) == ["controller.nodeSelector"]


def test_walk_catches_service_annotations_in_the_wrong_place(values):
    bad = copy.deepcopy(values)
    bad["loginsets"]["slinky"]["service"]["annotations"] = {"a": "b"}
    assert copied_block_problems(bad, "1.36") == ["loginsets.slinky.service.annotations"]


def test_walk_catches_a_misspelling_inside_a_pod_spec(values):
    bad = copy.deepcopy(values)
    bad["nodesets"]["slinky"]["podSpec"]["tolerations"][0]["operater"] = "Exists"
    problems = copied_block_problems(bad, "1.36")
    assert len(problems) == 1 and problems[0].startswith("nodesets.slinky.podSpec")


def test_walk_catches_a_misspelling_inside_the_slurmd_container(values):
    bad = copy.deepcopy(values)
    bad["nodesets"]["slinky"]["slurmd"]["volumeMount"] = []
    problems = copied_block_problems(bad, "1.36")
    assert len(problems) == 1 and problems[0].startswith("nodesets.slinky.slurmd")


def test_walk_catches_persistence_storage_class_misspelling(values):
    bad = copy.deepcopy(values)
    bad["controller"]["persistence"]["storageClass"] = "gp3"
    assert copied_block_problems(bad, "1.36") == ["controller.persistence.storageClass"]
