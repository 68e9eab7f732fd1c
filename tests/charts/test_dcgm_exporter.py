"""The DCGM exporter release and the slurm chart's metrics values, rendered from the reference charts
(devkit/chart_render.py): the exporter on the GPU nodes only, exporting the chosen counter list, reading
the directory the slurm chart's job-mapping prolog writes, found by the scrape job model/builders/metrics.py
writes; slurmctld's metrics on with no ServiceMonitor; none of it with `metrics: false`."""

import pytest

from devkit.chart_render import render_graph_releases
from devkit.offline_run import run_program
from model.builders import metrics, node_health
from model.builders.dcgm_exporter import COUNTERS_PATH, JOB_MAPPING_ENV, NODE_IP_ENV
from model.builders.node_repair import DCGM_HOST_ENGINE_PORT
from tests.charts.test_rendered_charts import by_name, of_kind, rerender
from tests.support import rendered_checks as rc


@pytest.fixture(scope="module")
def exporter(rendered):
    return rendered["dcgm-exporter"]


@pytest.fixture(scope="module")
def pod(exporter):
    return by_name(exporter, "DaemonSet", metrics.DCGM_EXPORTER_RELEASE)["spec"]["template"]


@pytest.fixture(scope="module")
def container(pod):
    (c,) = pod["spec"]["containers"]
    return c


@pytest.fixture(scope="module")
def gpu_nodes(dev):
    group = dev.named("nodes-gpu").inputs
    (taint,) = group["taints"]
    return group["labels"], {**taint, "effect": rc.EKS_EFFECTS[taint["effect"]]}


def test_exporter_runs_on_the_gpu_nodes_only(exporter, gpu_nodes):
    labels, taint = gpu_nodes
    assert list(rc.pod_specs(exporter))
    assert rc.placement_problems(exporter, labels, taint) == []


def test_placement_check_catches_the_charts_default_tolerations(dev, gpu_nodes):
    labels, taint = gpu_nodes
    objects = rerender(dev, "dcgm-exporter", lambda v: v.pop("tolerations"))
    assert rc.placement_problems(objects, labels, taint) != []


def test_exporter_exports_the_chosen_counter_list(exporter, container, pod):
    config_map = by_name(exporter, "ConfigMap", "exporter-metrics-config-map")
    assert config_map["data"]["metrics"].strip() == metrics.DCGM_COUNTERS_FILE.read_text().strip()
    # ... at the path its arguments read, from that ConfigMap.
    assert container["args"][container["args"].index("-f") + 1] == COUNTERS_PATH
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == COUNTERS_PATH]
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == mount["name"]]
    assert volume["configMap"]["name"] == "exporter-metrics-config-map"


def test_exporter_reads_the_gpus_through_the_node_monitoring_agents_host_engine(container):
    # One DCGM host engine per node: the agent's dcgm-server, on the node's IP (model/builders/node_repair.py).
    args = container["args"]
    assert "-r" in args and args[args.index("-r") + 1] == f"$({NODE_IP_ENV}):{DCGM_HOST_ENGINE_PORT}"
    (node_ip,) = [e for e in container["env"] if e["name"] == NODE_IP_ENV]
    assert node_ip["valueFrom"] == {"fieldRef": {"fieldPath": "status.hostIP"}}


def test_exporter_adds_no_capability(container):
    # With no host engine in the pod there is no profiling module to grant SYS_ADMIN to.
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": []}


def test_exporter_reads_the_directory_the_slurm_prolog_writes(rendered, container, pod):
    # The NodeSet's host directory and the prolog's target, as the slurm chart renders them.
    (nodeset,) = of_kind(rendered["slurm"], "NodeSet")
    # By the chart's name for it (helm/slurm/_vendor/nvidia/dcgm/snippets/nodeset.yaml, slurm 1.2.1): the
    # NodeSet has another host directory, the health check's (model/builders/node_health.py STATE_DIR).
    [slurm_dir] = [
        v["hostPath"]["path"]
        for v in nodeset["spec"]["template"]["spec"]["volumes"]
        if v["name"] == "dcgm-job-mapping"
    ]
    assert slurm_dir != node_health.STATE_DIR
    prolog = next(
        o for o in of_kind(rendered["slurm"], "ConfigMap") if o["metadata"]["name"].endswith("-prolog-dcgm")
    )
    assert f'METRICS_DIR="{slurm_dir}"' in "".join(prolog["data"].values())
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env[JOB_MAPPING_ENV] == slurm_dir
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == slurm_dir]
    assert mount.get("readOnly") is True
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == mount["name"]]
    assert volume["hostPath"]["path"] == slurm_dir


def test_the_controller_runs_the_dcgm_prolog_and_epilog(rendered):
    (controller,) = of_kind(rendered["slurm"], "Controller")
    refs = {
        r["name"] for r in controller["spec"]["prologScriptRefs"] + controller["spec"]["epilogScriptRefs"]
    }
    assert {"slurm-prolog-dcgm", "slurm-epilog-dcgm"} <= refs


def test_the_scrape_job_finds_the_exporter_pods_and_port(pod, container):
    labels = pod["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in metrics.DCGM_JOB.selector.items())
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports[metrics.DCGM_JOB.port_name] == metrics.DCGM_EXPORTER_PORT


def test_no_service_monitor_nor_token(exporter, pod):
    # No Prometheus Operator here: a ServiceMonitor would fail the install.
    assert not of_kind(exporter, "ServiceMonitor")
    assert pod["spec"]["automountServiceAccountToken"] is False


def test_slurmctld_serves_its_metrics_without_a_service_monitor(rendered):
    (controller,) = of_kind(rendered["slurm"], "Controller")
    assert controller["spec"]["metrics"]["enabled"] is True
    assert controller["spec"]["metrics"]["serviceMonitor"]["enabled"] is False
    assert not of_kind(rendered["slurm"], "ServiceMonitor")


def test_metrics_false_installs_no_exporter_and_no_job_mapping():
    rendered = render_graph_releases(run_program("dev", {"metrics": "false"}))
    assert "dcgm-exporter" not in rendered
    (controller,) = of_kind(rendered["slurm"], "Controller")
    assert not controller["spec"].get("metrics", {}).get("enabled")
    assert not [o for o in of_kind(rendered["slurm"], "ConfigMap") if "dcgm" in o["metadata"]["name"]]
