"""The reviewed base values of each upstream chart (charts-values/<chart>.yaml); the charts'
versions are pinned in model/facts/versions.py."""

from __future__ import annotations

import pathlib

import yaml

CHARTS_VALUES = pathlib.Path(__file__).resolve().parents[2] / "charts-values"
# libyaml's parser where PyYAML has it (its wheels do): the pure-Python one costs a tenth of a
# second of every preview for these few files.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def base_values(chart: str) -> dict:
    """The reviewed base values of one release (charts-values/<chart>.yaml)."""
    return yaml.load((CHARTS_VALUES / f"{chart}.yaml").read_text(), Loader=_LOADER) or {}
