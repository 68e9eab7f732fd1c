"""Pinned upstream chart versions and the Slinky chart <-> Slurm release pairing.

The data lives in charts-values/versions.yaml (reviewed with the base values); this module only
reads it, so a version bump is a one-line change in one file.
"""
from __future__ import annotations

import functools
import pathlib

import yaml

CHARTS_VALUES = pathlib.Path(__file__).resolve().parent.parent / "charts-values"
# libyaml's parser where PyYAML has it (its wheels do): the pure-Python one costs a tenth of a
# second of every preview for these few files.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load(name: str):
    return yaml.load((CHARTS_VALUES / name).read_text(), Loader=_LOADER)


@functools.cache
def versions() -> dict:
    return _load("versions.yaml")


def base_values(chart: str) -> dict:
    """The reviewed base values of one release (charts-values/<chart>.yaml)."""
    return _load(f"{chart}.yaml") or {}


def slurm_release_for_chart(chart_version: str) -> str | None:
    """The Slurm major.minor a Slinky chart version is built for, or None if unpaired."""
    minor = ".".join(chart_version.split(".")[:2])
    return versions()["slinkyPairing"].get(minor)


def slurmd_base_flavour(slurm_version: str) -> str | None:
    """The Slinky slurmd image flavour (e.g. ubuntu24.04) a Slurm release's image builds on."""
    return versions()["slurmdBaseFlavour"].get(".".join(slurm_version.split(".")[:2]))


def slinky_pairing() -> dict[str, str]:
    return dict(versions()["slinkyPairing"])
