"""Every key the program puts into the Slinky values exists in chart 1.2.1: the walk catches
misspelled and misplaced keys that Helm would silently ignore (what the chart copies into the
custom resources is checked on the render: test_rendered_charts.py)."""

import copy

import pytest

from tests.support.chart_walk import load_chart, unknown_keys


@pytest.fixture(scope="module")
def values(dev):
    return dev.named("slurm-release").inputs["values"]


@pytest.fixture(scope="module")
def chart():
    return load_chart()


def test_every_generated_key_exists_in_the_chart(values, chart):
    assert unknown_keys(values, chart) == []


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
