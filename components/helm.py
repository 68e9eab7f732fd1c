"""One way to install a pinned upstream chart as a Helm release."""
from __future__ import annotations

from typing import Any, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components.chart_versions import base_values, versions


def merge(base: dict, computed: dict) -> dict:
    """Computed values over the reviewed base values, maps merged key by key."""
    out = dict(base)
    for key, value in computed.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def pinned_release(name: str, chart_key: str, *, namespace: str, values: dict[str, Any],
                   parent: pulumi.Resource, provider: k8s.Provider,
                   depends_on: Sequence[pulumi.Resource], timeout: int = 600) -> k8s.helm.v3.Release:
    """A release of the chart pinned under `chart_key` in charts-values/versions.yaml, with its
    reviewed base values (charts-values/<chart>.yaml) under the values computed in code."""
    pin = versions()[chart_key]
    return k8s.helm.v3.Release(
        name,
        name=pin["chart"],  # fixed release names: object names derive from them
        chart=pin["chart"], version=pin["version"],
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=pin["repository"]),
        namespace=namespace,
        values=merge(base_values(pin["chart"]), values),
        # Helm --wait: DaemonSets and Deployments ready before dependents start; uninstall waits too.
        skip_await=False, timeout=timeout,
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=list(depends_on)))
