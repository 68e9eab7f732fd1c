"""The NVIDIA and EFA device plugins (components/device_plugins.py) in the dev stack: two pinned
releases in kube-system, installed after the GPU nodes (and so deleted before them), with the
model's values over the reviewed bases. Their values are specified in
tests/unit/model/test_device_plugins.py; the rendered plugins in tests/graph/test_cluster_services.py."""

import pytest

from model.builders import device_plugins
from model.facts import versions


@pytest.fixture(scope="module")
def releases(dev):
    return {"nvidia": dev.named("devices-nvidia"), "efa": dev.named("devices-efa")}


def test_each_plugin_is_its_chart_at_its_pin(releases):
    for release, pin in (
        (releases["nvidia"], versions.NVIDIA_DEVICE_PLUGIN),
        (releases["efa"], versions.EFA_DEVICE_PLUGIN),
    ):
        inputs = release.inputs
        assert (inputs["chart"], inputs["version"], inputs["repositoryOpts"]["repo"]) == (
            pin.chart,
            pin.version,
            pin.repository,
        )


def test_both_plugins_run_in_kube_system(releases):
    assert {r.inputs["namespace"] for r in releases.values()} == {"kube-system"}


def test_the_models_values_reach_each_release(releases):
    nvidia, efa = releases["nvidia"].inputs["values"], releases["efa"].inputs["values"]
    assert nvidia["affinity"] == device_plugins.nvidia_values()["affinity"]
    assert efa["tolerations"] == device_plugins.efa_values()["tolerations"]


def test_both_plugins_wait_for_the_gpu_nodes(dev, releases):
    gpu_nodes = dev.named("nodes-gpu")
    assert all(dev.depends_on(release, gpu_nodes) for release in releases.values())
