"""The pods a graph registers and the charts render, named and checked the way
model/builders/pod_hardening.py names its exceptions."""

from __future__ import annotations

from typing import Optional

from model.builders import pod_hardening
from tests.support.rendered_checks import POD_SPEC_PATHS, pod_specs

Finding = tuple[str, Optional[str], str]


def graph_pods(graph) -> dict[str, dict]:
    """Workload name -> pod spec of every pod-carrying Kubernetes resource the program registers."""
    out = {}
    for resource in graph.resources:
        kind = resource.type.rsplit(":", 1)[-1]
        if resource.type.startswith("kubernetes:") and kind in POD_SPEC_PATHS:
            ((_, spec),) = pod_specs([{"kind": kind, **resource.inputs}])
            out[pod_hardening.workload_name(kind, resource.inputs["metadata"]["name"])] = spec
    return out


def chart_pods(rendered: dict[str, list[dict]]) -> dict[str, dict]:
    """Workload name -> pod spec of every rendered pod template the charts themselves set the
    security of (the operator-built Slinky kinds left out: model/builders/pod_hardening.OPERATOR_BUILT)."""
    out = {}
    for release, objects in rendered.items():
        for obj in objects:
            if obj["kind"] in POD_SPEC_PATHS and obj["kind"] not in pod_hardening.OPERATOR_BUILT:
                ((_, spec),) = pod_specs([obj])
                out[pod_hardening.workload_name(obj["kind"], obj["metadata"]["name"], release)] = spec
    return out


def findings(pods: dict[str, dict]) -> set[Finding]:
    return {f for workload, spec in pods.items() for f in pod_hardening.findings(workload, spec)}


def accepted(charts: bool, releases: set[str] | None = None) -> set[Finding]:
    """The accepted exceptions of the charts' workloads (named `<release>:...`) or of the
    program's own. An exception whose workload is gone stays, so it shows as stale; with
    `releases`, only those releases' (a stack installs some charts only where it needs them:
    KEDA and cluster-autoscaler where a pool autoscales)."""
    found = {f for f in pod_hardening.accepted_findings() if (":" in f[0]) == charts}
    return found if releases is None else {f for f in found if f[0].split(":", 1)[0] in releases}
