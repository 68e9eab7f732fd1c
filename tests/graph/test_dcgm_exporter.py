"""NVIDIA's DCGM exporter (components/dcgm_exporter.py) in the dev stack: one pinned release, in
its own namespace, exporting the repository's counter list, installed after the GPU nodes and the
NVIDIA device plugin. The chart it renders is specified in tests/charts/test_dcgm_exporter.py."""

import pytest

from devkit.offline_run import run_program
from model.builders import metrics
from model.facts import versions


@pytest.fixture(scope="module")
def release(dev):
    return dev.named("dcgm-release")


def test_the_exporter_is_its_chart_at_its_pin_under_its_fixed_release_name(release):
    inputs = release.inputs
    assert (inputs["chart"], inputs["version"]) == (
        versions.DCGM_EXPORTER.chart,
        versions.DCGM_EXPORTER.version,
    )
    assert (inputs["name"], inputs["namespace"]) == (
        metrics.DCGM_EXPORTER_RELEASE,
        metrics.DCGM_EXPORTER_NAMESPACE,
    )
    assert inputs["createNamespace"] is True


def test_the_exporter_exports_the_repositorys_counter_list(release):
    assert release.inputs["values"]["customMetrics"] == metrics.DCGM_COUNTERS_FILE.read_text()


def test_the_exporter_waits_for_the_gpu_nodes_and_the_nvidia_device_plugin(dev, release):
    assert dev.depends_on(release, dev.named("nodes-gpu"))
    assert dev.depends_on(release, dev.named("devices-nvidia"))


def test_a_stack_without_metrics_has_no_exporter():
    graph = run_program("dev", {"metrics": "false"})
    assert not graph.of_type("slinky-eks:metrics:DcgmExporter")
