"""model/builders/metrics.py: the scrape configuration the AMP managed scraper gets, checked by Debian's
promtool 3.5.3, held to what the scraper accepts and to the upstream names it selects by."""

from __future__ import annotations

import pytest
import yaml

from model.builders import metrics
from tests.support.local_prometheus import promtool
from tests.support.local_slurm import RootMissing


def _config() -> dict:
    return yaml.safe_load(metrics.scrape_configuration())


@pytest.mark.slurm_root
def test_the_scrape_configuration_passes_promtool_check_config(tmp_path):
    (tmp_path / "scrape.yaml").write_text(metrics.scrape_configuration())
    try:
        result = promtool("check", "config", str(tmp_path / "scrape.yaml"))
    except RootMissing as e:
        pytest.fail(str(e))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_scrape_configuration_has_only_what_the_amp_scraper_takes():
    config = _config()
    assert set(config) == {"global", "scrape_configs"}
    assert config["global"]["scrape_interval"] == metrics.SCRAPE_INTERVAL
    for job in config["scrape_configs"]:
        discovery = [k for k in job if k.endswith("_sd_configs") or k == "static_configs"]
        assert discovery == ["kubernetes_sd_configs"], job["job_name"]
        for sd in job["kubernetes_sd_configs"]:
            assert sd["role"] in ("endpoints", "pod") and not {"api_server", "kubeconfig_file"} & set(sd)


def test_no_job_is_scraped_more_often_than_the_amp_scraper_allows():
    # AMP's managed scraper refuses an interval under 30 s: the scraper would not be created.
    config = _config()
    intervals = [config["global"]["scrape_interval"]] + [
        j["scrape_interval"] for j in config["scrape_configs"] if "scrape_interval" in j
    ]
    assert all(int(i.removesuffix("s")) >= metrics.MIN_SCRAPE_INTERVAL_SECONDS for i in intervals), intervals


def test_slurmctld_is_scraped_at_the_paths_the_operators_servicemonitor_lists(shared_ref):
    values = yaml.safe_load((shared_ref / "charts/slurm-1.2.1/values.yaml").read_text())
    endpoints = [e["path"] for e in values["controller"]["metrics"]["serviceMonitor"]["endpoints"]]
    scraped = [
        j["metrics_path"] for j in _config()["scrape_configs"] if j["job_name"].startswith("slurmctld-")
    ]
    assert scraped == endpoints == list(metrics.SLURM_METRICS_PATHS)


def test_slurmctld_jobs_keep_only_the_controller_services_slurmctld_port():
    (keep, *_) = metrics.SLURMCTLD_JOBS[0].relabel_configs()
    assert keep["action"] == "keep"
    assert dict(zip(keep["source_labels"], keep["regex"].split(";"), strict=True)) == {
        "__meta_kubernetes_service_label_app_kubernetes_io_component": "controller",
        "__meta_kubernetes_service_label_app_kubernetes_io_instance": "slurm",
        "__meta_kubernetes_service_label_app_kubernetes_io_name": "slurmctld",
        "__meta_kubernetes_endpoint_port_name": "slurmctld",
    }


def test_the_dcgm_job_selects_the_pods_and_port_the_exporter_chart_renders():
    from devkit.chart_render import render

    # The chart staged in the reference data (charts/dcgm-exporter-4.8.2: chart 4.8.2, image
    # 4.5.3-4.8.2); its pin in model/facts/versions.py comes with the exporter release (metrics-store).
    objects = render(
        "dcgm-exporter", "4.8.2", {}, metrics.DCGM_EXPORTER_RELEASE, metrics.DCGM_EXPORTER_NAMESPACE
    )
    (daemonset,) = [o for o in objects if o["kind"] == "DaemonSet"]
    pod = daemonset["spec"]["template"]
    assert metrics.DCGM_JOB.selector.items() <= pod["metadata"]["labels"].items()
    ports = {p["name"]: p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports", [])}
    assert ports[metrics.DCGM_EXPORTER_PORT_NAME] == metrics.DCGM_EXPORTER_PORT


def test_no_target_label_takes_a_name_the_exporters_use_themselves():
    """slurmctld labels node series with node=, the DCGM exporter GPU series with pod= and
    namespace= of the GPU's workload: a target label of that name would rename theirs."""
    written = {
        rule["target_label"]
        for job in metrics.SCRAPE_JOBS
        for rule in job.relabel_configs()
        if "target_label" in rule
    }
    assert written and not written & {"node", "pod", "namespace", "container", "job", "instance", "partition"}


def test_the_static_stand_in_carries_every_label_the_relabelling_reads():
    for job in metrics.SCRAPE_JOBS:
        read = {label for rule in job.relabel_configs() for label in rule["source_labels"]}
        assert read <= set(job.discovered_labels(pod="p", node="n")), job.name
