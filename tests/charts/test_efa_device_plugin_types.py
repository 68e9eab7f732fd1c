"""The EFA device plugin runs on every instance type of the catalog. Its DaemonSet's node affinity
admits only the instance types the chart lists (aws/eks-charts stable/aws-efa-k8s-device-plugin
v0.5.30: values.yaml supportedInstanceLabels, one nodeSelectorTerm per key in
templates/daemonset.yaml), so a catalog type missing there would get no vpc.amazonaws.com/efa
devices and its slurmd pods, which request them, would never start."""

import yaml

from devkit import reference_data
from model.facts import catalog, versions

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
KEY = "supportedInstanceLabels"


def unlisted_types(types, supported: dict) -> list[str]:
    """The instance types a supportedInstanceLabels value does not let the plugin run on."""
    if INSTANCE_TYPE_LABEL not in supported.get("keys", []):
        return sorted(types)
    return sorted(set(types) - set(supported.get("values", [])))


def _chart_supported() -> dict:
    chart = versions.EFA_DEVICE_PLUGIN
    values = reference_data.chart_dir(chart.chart, chart.version) / "values.yaml"
    return yaml.safe_load(values.read_text())[KEY]


def _efa_catalog_types() -> list[str]:
    return [t.name for t in catalog.CATALOG.values() if t.efa_interfaces > 0]


def test_every_efa_catalog_type_is_one_the_efa_device_plugin_runs_on(dev):
    releases = dev.of_type("kubernetes:helm.sh/v3:Release")
    (release,) = [r for r in releases if r.inputs["chart"] == versions.EFA_DEVICE_PLUGIN.chart]
    # The release's own values, where it sets any, replace the chart's.
    supported = {**_chart_supported(), **release.inputs["values"].get(KEY, {})}
    assert _efa_catalog_types() and unlisted_types(_efa_catalog_types(), supported) == []


def test_a_catalog_type_the_chart_does_not_list_is_found():
    supported = _chart_supported()
    without_p5 = {**supported, "values": [t for t in supported["values"] if t != "p5.48xlarge"]}
    assert unlisted_types(_efa_catalog_types(), without_p5) == ["p5.48xlarge"]


def test_a_list_keyed_on_another_label_admits_no_catalog_type():
    other_label = {**_chart_supported(), "keys": ["node.kubernetes.io/instance-family"]}
    assert unlisted_types(["g6e.12xlarge", "p5.48xlarge"], other_label) == ["g6e.12xlarge", "p5.48xlarge"]
