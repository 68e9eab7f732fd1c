"""Where the upstream reference data lives: the charts at their pinned versions, the CRDs, the
upstream IAM policy, the nccl-tests source. Tests and the offline plan read it in place; none of it
is part of this repository.

Looked up, in order:
1. `$SLINKY_EKS_REF`, a directory laid out like `../shared/ref` (charts/<chart>-<version>/, ...);
2. `../shared/ref` beside this checkout;
3. the copy `python -m devkit.reference_fetch` (`make reference-data`) fetched from upstream, pinned
   and digest-checked, into the cache: `$SLINKY_EKS_CACHE/ref` (default ~/.cache/slinky-eks/ref).
A missing directory is an error that names where it looked, never a silent skip.
"""

from __future__ import annotations

import os
import pathlib
from dataclasses import dataclass

ENV = "SLINKY_EKS_REF"
ROOT = pathlib.Path(__file__).resolve().parent.parent
BESIDE = ROOT.parent / "shared" / "ref"
FETCHED = (
    pathlib.Path(
        os.environ.get("SLINKY_EKS_CACHE")
        or pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "slinky-eks"
    )
    / "ref"
)


# The three Slinky charts, released together at one version (SlinkyProject/slurm-operator helm/).
SLINKY_CHARTS = ("slurm-operator-crds", "slurm-operator", "slurm")


@dataclass(frozen=True)
class ReleaseBranch:
    """Charts of a release whose published archives are not in the reference data, staged as the
    release branch they are cut from: charts/<directory>/<chart>, whose Chart.yaml files still
    carry the previous release's version (`carries`) until the release commit bumps it."""

    directory: str
    carries: str


# Slinky 1.2.2 as the newest stored state of its branch, release-1.2 at b98cad3f (2026-08-21;
# charts/README.md): the token-refresh fix is on it, no tag after v1.2.1 is stored, and pkg.go.dev
# lists v1.2.2 on 2026-09-02. What that does and does not confirm: docs/extending.md, "Slinky
# 1.2.2: what was and was not confirmed".
RELEASE_BRANCHES = {"1.2.2": ReleaseBranch("slinky-release-1.2-b98cad3f", "1.2.1")}


def release_branch(chart: str, version: str) -> ReleaseBranch | None:
    """The staged branch a chart at `version` is cut from, or None where the chart itself is staged."""
    return RELEASE_BRANCHES.get(version) if chart in SLINKY_CHARTS else None


class ReferenceDataMissing(RuntimeError):
    """The reference data (or one file of it) is not where it was looked for."""


def ref_root() -> pathlib.Path:
    """The reference data directory, and which rule found it."""
    explicit = os.environ.get(ENV)
    if explicit:
        if not pathlib.Path(explicit).is_dir():
            raise ReferenceDataMissing(f"reference data not found at ${ENV}={explicit}")
        return pathlib.Path(explicit)
    for where in (BESIDE, FETCHED):
        if where.is_dir():
            return where
    raise ReferenceDataMissing(
        f"reference data not found at {BESIDE} nor at {FETCHED} (set ${ENV} to use another place, "
        "or fetch it: make reference-data)"
    )


def source() -> str:
    """A line saying which reference data is in use, for test and plan logs."""
    root = ref_root()
    how = "$" + ENV if os.environ.get(ENV) else "beside the checkout" if root == BESIDE else "fetched"
    return f"reference data: {root} ({how})"


def path(*parts: str) -> pathlib.Path:
    """A file or directory inside the reference data; missing is an error naming it."""
    p = ref_root().joinpath(*parts)
    if not p.exists():
        raise ReferenceDataMissing(f"{p} is missing from the reference data")
    return p


def chart_dir(chart: str, version: str) -> pathlib.Path:
    """The upstream chart directory of `chart` at `version` (charts/<chart>-<version>), or of the
    release branch it is cut from (charts/<branch directory>/<chart>: its Chart.yaml says the
    branch's version, devkit/chart_render.py bumps it as the release does)."""
    branch = release_branch(chart, version)
    try:
        if branch is not None:
            return path("charts", branch.directory, chart)
        return path("charts", f"{chart}-{version}")
    except ReferenceDataMissing as e:
        raise ReferenceDataMissing(
            f"no reference chart for {chart} {version}: {e} (the pinned version has no upstream copy "
            "to render; add charts/<chart>-<version> to the reference data)"
        ) from None
