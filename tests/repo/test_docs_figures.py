"""The figures the docs quote are the model's: docs/capacity-and-cost.md's hourly prices of the dev
stack are what model/facts/cost.py's table and the offline plan's test account give for Pulumi.dev.yaml's
nodes, so a repriced table or a resized dev stack makes this fail instead of leaving a stale
figure."""

import re

import yaml

from devkit import offline_account
from model.facts.cost import LIST_PRICES
from tests.support.paths import REPO

PAGE = (REPO / "docs/capacity-and-cost.md").read_text()
DEV = yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text())["config"]


def _dev(key: str):
    return DEV[f"slinky-eks:{key}"]


def _per_hour(gpu_price: float) -> float:
    core = _dev("coreNodeCount") * LIST_PRICES[_dev("coreInstanceType")]
    return _dev("gpuNodeCount") * gpu_price + core


def _quoted(sentence_start: str) -> list[str]:
    """The dollar figures of the paragraph that starts with sentence_start."""
    start = PAGE.index(sentence_start)
    end = PAGE.find("\n\n", start)
    return re.findall(r"\$(\d+\.\d+)", PAGE[start : end if end > 0 else None])


def test_the_dev_stacks_hour_at_the_tables_prices_and_at_min_nodes_are_the_models():
    at_table, at_min, *_ = _quoted("The dev stack (")
    assert float(at_table) == round(_per_hour(LIST_PRICES[_dev("gpuInstanceType")]), 2)
    assert float(at_min) == round(_dev("coreNodeCount") * LIST_PRICES[_dev("coreInstanceType")], 2)


def test_the_offline_plans_figure_is_the_test_accounts_made_up_price():
    figures = _quoted("The dev stack (")
    made_up = offline_account.DEV.prices[(DEV["aws:region"], _dev("gpuInstanceType"))]
    assert float(figures[2]) == round(_per_hour(made_up), 2) and float(figures[3]) == made_up
