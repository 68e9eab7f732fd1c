"""The reviewed base values of each upstream chart (components/_parts/chart_values.py,
charts-values/<chart>.yaml): one file per chart the program installs, each a map."""

import pytest
import yaml

from components._parts import chart_values
from components._parts.chart_values import CHARTS_VALUES, base_values
from devkit.offline_run import run_program


def test_a_charts_base_is_its_file_read_as_yaml():
    text = (CHARTS_VALUES / "keda.yaml").read_text()
    assert base_values("keda") == (yaml.safe_load(text) or {})


def test_a_file_holding_only_comments_is_an_empty_base(tmp_path, monkeypatch):
    (tmp_path / "quiet.yaml").write_text("# Reviewed: nothing to set.\n")
    monkeypatch.setattr(chart_values, "CHARTS_VALUES", tmp_path)
    assert base_values("quiet") == {}


def test_a_chart_without_its_file_is_refused():
    with pytest.raises(FileNotFoundError):
        base_values("no-such-chart")


def test_every_chart_the_stack_installs_has_its_base_file_and_every_file_a_chart():
    graph = run_program("dev", {"gpuMinNodes": "0", "gpuMaxNodes": "4"})
    charts = {r.inputs["chart"].rsplit("/", 1)[-1] for r in graph.of_type("kubernetes:helm.sh/v3:Release")}
    assert charts == {p.stem for p in CHARTS_VALUES.glob("*.yaml")}


def test_every_base_is_a_map():
    assert all(isinstance(base_values(p.stem), dict) for p in CHARTS_VALUES.glob("*.yaml"))
