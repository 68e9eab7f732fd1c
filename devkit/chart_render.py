"""Render the charts the program installs, offline, with Helm's own Go library (PyPI
helm-python-sdk: Helm v4 built as a C library), from the upstream chart directories at the pinned
versions (devkit/reference_data.py). The program still installs from the registries; rendering is
what tests and the offline plan look at: the objects `pulumi up` makes Helm create.

What Helm install does and this reproduces:
- values: the release's values over the chart's defaults, subcharts enabled by their conditions;
- templates: split into documents the way Helm splits them (helm pkg/release/util
  SplitManifests), `kind: List` flattened into its items, NOTES.txt left out, hooks kept
  (install runs them);
- CRDs: crds/ of the chart and of every enabled subchart (Helm installs them before anything else
  unless --skip-crds);
- Capabilities.KubeVersion: the cluster's Kubernetes version. `lookup` finds nothing, as on a
  first install: charts that then generate keys or certificates generate fresh ones each render.

A chart staged as its release branch (reference_data.RELEASE_BRANCHES) is rendered as its release
would be: the branch's charts with their Chart.yaml bumped the way the Slinky release commit bumps
them, and packaged the way `make build-chart` packages them (SlinkyProject/slurm-operator
d9715f02 "chore: prepare release v1.2.1": each chart's `version`, slurm-operator's `appVersion`
and its slurm-operator-crds dependency; Makefile build-chart: `helm package --dependency-update`,
the file:// dependency packed into charts/). The operator's and webhook's image tags default to
the chart's version (values.yaml `tag: null`; templates/operator/deployment.yaml and
webhook/deployment.yaml pass .Chart.Version to slurm.format-image), so they render at the
release's version too.
"""

from __future__ import annotations

import functools
import json
import pathlib
import re
import shutil
import tempfile
from typing import Any

import helm_python
import yaml
from helm_python import _native

from devkit import reference_data
from model.facts import versions

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
EKS_CLUSTER_TYPE = "eks:index:Cluster"
# The program's default EKS version, as Helm's --kube-version spells it.
DEFAULT_KUBE_VERSION = f"v{versions.KUBERNETES_VERSION}.0"
# Helm's document separator (pkg/release/util/manifest.go, sep): a `---` may be followed directly by
# a comment (cert-manager's rbac.yaml), which PyYAML's multi-document loader rejects.
_SEPARATOR = re.compile(r"(?:^|\s*\n)---\s*")


class ChartRenderError(RuntimeError):
    """A release could not be rendered: no reference chart, or the chart refused the values."""


def _documents(text: str) -> list[dict]:
    objects = []
    for doc in _SEPARATOR.split(text):
        obj = yaml.safe_load(doc) if doc.strip() else None
        if not isinstance(obj, dict) or "kind" not in obj:
            continue  # comments only, or a template that rendered nothing
        objects.extend((obj.get("items") or []) if obj["kind"] == "List" else [obj])
    return objects


def _enabled_crds(chart: helm_python.Chart, rendered: dict[str, str]) -> list[tuple[str, str]]:
    """(file, text) of the crds/ files Helm installs: the chart's own and those of enabled subcharts.
    A disabled subchart renders no template at all; an aliased one renders under its alias."""
    name = chart.name
    alias = {d["name"]: d.get("alias") or d["name"] for d in chart.metadata.get("dependencies") or []}
    rendered_dirs = {path.split("/templates/", 1)[0] for path in rendered}
    out = []
    for crd in chart.crds:
        owner = crd["filename"].rsplit("/crds/", 1)[0]
        if owner != name:
            sub = owner.split("/")[2]  # "<chart>/charts/<subchart>"
            if f"{name}/charts/{alias.get(sub, sub)}" not in rendered_dirs:
                continue
        out.append((crd["filename"], crd["data"]))
    return sorted(out)


def _bumped(chart_yaml: str, carries: str, version: str) -> str:
    """Chart.yaml with every `version:`/`appVersion:` equal to the branch's set to the release's;
    the slurm chart's appVersion (its Slurm release) stays."""
    return re.sub(
        rf'^([ \t]*(?:version|appVersion): "?){re.escape(carries)}("?)[ \t]*$',
        rf"\g<1>{version}\g<2>",
        chart_yaml,
        flags=re.MULTILINE,
    )


@functools.cache
def _released(chart: str, version: str) -> bytes:
    """The archive of `chart` at `version` cut from its staged release branch (module docstring)."""
    branch = reference_data.release_branch(chart, version)
    with tempfile.TemporaryDirectory() as work:
        copy = pathlib.Path(work) / chart
        shutil.copytree(reference_data.chart_dir(chart, version), copy)
        (copy / "Chart.yaml").write_text(_bumped((copy / "Chart.yaml").read_text(), branch.carries, version))
        dependencies = yaml.safe_load((copy / "Chart.yaml").read_text()).get("dependencies") or []
        for dependency in dependencies:
            (copy / "charts").mkdir(exist_ok=True)
            (copy / "charts" / f"{dependency['name']}-{version}.tgz").write_bytes(
                _released(dependency["name"], version)
            )
        archive = helm_python.package(copy, destination=work)
        return pathlib.Path(archive).read_bytes()


def load(chart: str, version: str) -> helm_python.Chart:
    """The chart as Helm would pull it at `version`: the staged directory, or the release cut from
    a staged release branch."""
    if reference_data.release_branch(chart, version) is not None:
        return helm_python.Chart.load_archive(_released(chart, version))
    return helm_python.Chart.load(reference_data.chart_dir(chart, version))


def render_sources(
    chart: str,
    version: str,
    values: dict,
    release_name: str,
    namespace: str,
    kube_version: str = DEFAULT_KUBE_VERSION,
) -> list[tuple[str, dict]]:
    """(source file, object) of everything Helm would install for this release, CRDs first, then
    the templates in path order."""
    options = {"name": release_name, "namespace": namespace, "kube_version": kube_version}
    try:
        with load(chart, version) as loaded:
            # Chart.render() has no kube_version; the native call it wraps takes one.
            rendered = json.loads(
                _native.call_string("helm_render", loaded._raw(), json.dumps(values), json.dumps(options))
            )
            crds = _enabled_crds(loaded, rendered)
    except helm_python.HelmError as e:
        raise ChartRenderError(f"{chart} {version} (release {release_name}): {e}") from None
    out = [(source, obj) for source, text in crds for obj in _documents(text)]
    for source in sorted(rendered):
        if not source.endswith("NOTES.txt"):
            out.extend((source, obj) for obj in _documents(rendered[source]))
    return out


def render(
    chart: str,
    version: str,
    values: dict,
    release_name: str,
    namespace: str,
    kube_version: str = DEFAULT_KUBE_VERSION,
) -> list[dict]:
    """The objects Helm would install for a release of `chart` at `version`."""
    return [obj for _, obj in render_sources(chart, version, values, release_name, namespace, kube_version)]


def kube_version(graph) -> str:
    """The Kubernetes version of the graph's EKS cluster, as Helm's Capabilities want it."""
    clusters = graph.of_type(EKS_CLUSTER_TYPE)
    if not clusters or not clusters[0].inputs.get("version"):
        return DEFAULT_KUBE_VERSION
    return f"v{clusters[0].inputs['version']}.0"


def release_request(resource) -> dict[str, Any]:
    """What a registered helm Release asks Helm for: chart (the name, without the repository or
    oci:// path), version, release name, namespace and values (base values merged with the
    computed ones, as the program passes them; secrets already unwrapped by devkit/offline_run.py)."""
    inputs = resource.inputs
    if inputs.get("skipCrds"):
        raise ChartRenderError(f"{resource.name}: skipCrds is set; rendering assumes Helm installs crds/")
    values = inputs.get("values", {})
    if not isinstance(values, dict):  # an unknown (preview) value arrives as a sentinel string
        raise ChartRenderError(
            f"{resource.name}: its values are not known yet (preview); render an update run"
        )
    return {
        "chart": inputs["chart"].rsplit("/", 1)[-1],
        "version": inputs["version"],
        "release_name": inputs.get("name") or resource.name,
        "namespace": inputs.get("namespace", "default"),
        "values": values,
    }


def render_graph_release_sources(graph) -> dict[str, list[tuple[str, dict]]]:
    """render_sources() of every helm Release in an offline run's Graph (devkit/offline_run.py), keyed by Helm release name."""
    version = kube_version(graph)
    out: dict[str, list[tuple[str, dict]]] = {}
    for resource in graph.of_type(RELEASE_TYPE):
        request = release_request(resource)
        name = request["release_name"]
        if name in out:
            raise ChartRenderError(f"two helm Releases are named {name!r}")
        out[name] = render_sources(
            request["chart"], request["version"], request["values"], name, request["namespace"], version
        )
    return out


def render_graph_releases(graph) -> dict[str, list[dict]]:
    """The objects of every helm Release registered in an offline run's Graph (devkit/offline_run.py), keyed by release name."""
    return {
        name: [obj for _, obj in sources] for name, sources in render_graph_release_sources(graph).items()
    }
