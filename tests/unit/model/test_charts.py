"""model/builders/charts.py: every chart with reviewed base values has exactly one builder of what
its release gets over them, and each named builder exists."""

import importlib

from model.builders.charts import BUILDERS
from tests.support.paths import REPO


def test_every_chart_with_base_values_has_one_builder_and_no_other_chart_has_one():
    assert sorted(BUILDERS) == sorted(p.stem for p in (REPO / "charts-values").glob("*.yaml"))


def test_every_named_builder_is_a_function_of_model_builders():
    missing = []
    for chart, builder in BUILDERS.items():
        module, _, function = builder.rpartition(".")
        if not callable(getattr(importlib.import_module(f"model.builders.{module}"), function, None)):
            missing.append(f"{chart}: {builder}")
    assert missing == []
