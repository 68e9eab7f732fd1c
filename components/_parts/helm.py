"""One way to install a pinned upstream chart as a Helm release."""

from __future__ import annotations

from typing import Any, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components._parts.chart_values import base_values
from model.facts.versions import Chart


def merge(base: dict, computed: dict) -> dict:
    """Computed values over the reviewed base values, maps merged key by key."""
    out = dict(base)
    for key, value in computed.items():
        out[key] = (
            merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


def chart_release(
    name: str,
    chart: str,
    version: str,
    repository: str,
    *,
    namespace: str,
    values: pulumi.Input[dict[str, Any]],
    parent: pulumi.Resource,
    provider: k8s.Provider,
    depends_on: Sequence[pulumi.Resource],
    timeout: int = 600,
    release_name: str | None = None,
    create_namespace: bool = False,
) -> k8s.helm.v3.Release:
    """A Helm release of `chart` at `version` from `repository` (an https chart repository or an
    oci:// registry path), with its reviewed base values (charts-values/<chart>.yaml) under the
    values computed in code."""
    oci = repository.startswith("oci://")
    return k8s.helm.v3.Release(
        name,
        name=release_name or chart,  # fixed release names: object names derive from them
        chart=f"{repository}/{chart}" if oci else chart,
        version=version,
        repository_opts=None if oci else k8s.helm.v3.RepositoryOptsArgs(repo=repository),
        namespace=namespace,
        create_namespace=create_namespace,
        values=pulumi.Output.from_input(values).apply(lambda v: merge(base_values(chart), v)),
        # Helm --wait: DaemonSets and Deployments (the webhooks' among them) Ready before
        # dependents start; uninstall waits too.
        skip_await=False,
        timeout=timeout,
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=list(depends_on)),
    )


def pinned_release(name: str, pin: Chart, **kwargs) -> k8s.helm.v3.Release:
    """A release of a chart at its pin (model/facts/versions.py)."""
    return chart_release(name, pin.chart, pin.version, pin.repository, **kwargs)
