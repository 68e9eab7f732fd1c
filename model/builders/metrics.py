"""Every scrape setting of the stack's metrics, as data, and the one scrape configuration the
Amazon Managed Service for Prometheus (AMP) managed scraper gets (aws.amp.Scraper
scrape_configuration). The local CI Prometheus (tests/support/local_prometheus.py) scrapes the real
slurmctld with the same jobs, their discovery swapped for a static target.

Two kinds of target:
- slurmctld's own metrics. Chart slurm 1.2.1's `controller.metrics.enabled` sets the Controller's
  spec.metrics.enabled, and the operator then writes `MetricsType=metrics/openmetrics` into
  slurm.conf (SlinkyProject/slurm-operator v1.2.1, internal/builder/controllerbuilder/
  controller_config.go buildSlurmConf). slurmctld serves the OpenMetrics text on its own port
  under four paths, the ones the operator's ServiceMonitor lists by default
  (controller_servicemonitor.go BuildControllerServiceMonitor: /metrics/jobs, /nodes, /partitions,
  /scheduler; https://slurm.schedmd.com/metrics.html). The ServiceMonitor needs the Prometheus
  Operator's CRDs, which this stack does not run, so it stays off and these jobs do its work.
  The target is the controller Service: named <controller>-controller (api/v1beta1/
  controller_keys.go Key/ServiceKey), one port named `slurmctld` (controller_service.go, the
  container port of the same name in controller_app.go, 6817), labels app.kubernetes.io/name=
  slurmctld and app.kubernetes.io/instance=<controller> (internal/builder/labels/labels.go
  WithControllerSelectorLabels), app.kubernetes.io/component=controller (WithControllerLabels).
- NVIDIA's DCGM exporter, one pod per GPU node (chart dcgm-exporter 4.5.3-4.8.2): its pods carry
  app.kubernetes.io/name=<chart name> and app.kubernetes.io/instance=<release> (templates/
  _helpers.tpl dcgm-exporter.selectorLabels) and serve /metrics on the container port named
  `metrics`, 9400 (templates/daemonset.yaml, values.yaml service.port).

What the AMP scraper accepts (Amazon Managed Service for Prometheus User Guide, "Scraper
configuration", https://docs.aws.amazon.com/prometheus/latest/userguide/AMP-collector-how-to.html#AMP-collector-configuration,
and the aws.amp.Scraper example of the Pulumi AWS provider): a Prometheus configuration with only
`global` and `scrape_configs`; targets found by `kubernetes_sd_configs` inside the cluster the
scraper is attached to (no api_server, no kubeconfig: the scraper talks to the EKS API itself);
`relabel_configs` and `metric_relabel_configs`; no remote_write, rule_files or alerting (the
scraper writes to its workspace; rules live in the workspace's rule groups). The roles used here
are the two the guide's examples use: `endpoints` (Service endpoints, what a ServiceMonitor
selects) and `pod`.
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass, field

import yaml

from model.facts.contract import RELEASE, SLURM_NAMESPACE

REPO = pathlib.Path(__file__).resolve().parents[2]

# -- the files of dashboards and alerts (owner: this module's task) ---------------------------
OBSERVABILITY_DIR = REPO / "observability"
DASHBOARDS_DIR = OBSERVABILITY_DIR / "dashboards"
ALERTS_DIR = OBSERVABILITY_DIR / "alerts"
DCGM_COUNTERS_FILE = OBSERVABILITY_DIR / "dcgm-counters.csv"

# The Grafana datasource every dashboard panel names (the AMP workspace, provisioned by the
# Grafana component with this uid).
DATASOURCE_UID = "amp"

# -- intervals --------------------------------------------------------------------------------
# The slurm chart's ServiceMonitor defaults (slurm-1.2.1 values.yaml controller.metrics.
# serviceMonitor: interval 30s, scrapeTimeout 25s), kept for the jobs that replace it: each
# scrape of /metrics/jobs walks slurmctld's job list under its locks, so not more often.
SCRAPE_INTERVAL = "30s"
SCRAPE_TIMEOUT = "25s"
# Not the DCGM chart's 15 s (dcgm-exporter-4.8.2 values.yaml serviceMonitor.interval): AMP's managed
# scraper refuses a scrape interval under 30 s (Amazon Managed Service for Prometheus User Guide,
# "Scraper configuration": https://docs.aws.amazon.com/prometheus/latest/userguide/AMP-collector-how-to.html).
MIN_SCRAPE_INTERVAL_SECONDS = 30
DCGM_SCRAPE_INTERVAL = "30s"
DCGM_SCRAPE_TIMEOUT = "10s"

# -- slurmctld -------------------------------------------------------------------------------
SLURMCTLD_APP = "slurmctld"  # labels.go ControllerApp: the app label and the port name
SLURMCTLD_COMPONENT = "controller"  # labels.go ControllerComp
SLURMCTLD_PORT = 6817  # common/const.go SlurmctldPort
# The Controller is named after the release (chart slurm 1.2.1 templates/controller: slurm.name).
CONTROLLER_NAME = RELEASE
CONTROLLER_SERVICE = f"{CONTROLLER_NAME}-controller"
SLURM_METRICS_PATHS = ("/metrics/jobs", "/metrics/nodes", "/metrics/partitions", "/metrics/scheduler")

# The chart values that turn slurmctld's metrics on (controller.metrics): the ServiceMonitor off,
# as there is no Prometheus Operator; the scrape jobs below take its place.
CONTROLLER_METRICS_VALUES = {"enabled": True, "serviceMonitor": {"enabled": False}}

# -- DCGM exporter ----------------------------------------------------------------------------
DCGM_EXPORTER_CHART_NAME = "dcgm-exporter"  # Chart.yaml name: the app.kubernetes.io/name label
DCGM_EXPORTER_RELEASE = "dcgm-exporter"
DCGM_EXPORTER_NAMESPACE = "dcgm-exporter"
DCGM_EXPORTER_PORT_NAME = "metrics"
DCGM_EXPORTER_PORT = 9400
# Where the slurm chart's vendor.nvidia.dcgm prolog writes one file per GPU holding the job id
# (slurm-1.2.1 _vendor/nvidia/dcgm/scripts/prolog/dcgm.sh, values.yaml vendor.nvidia.dcgm.
# jobMappingDir), which the exporter reads with --hpc-job-mapping-dir / DCGM_HPC_JOB_MAPPING_DIR
# (NVIDIA/dcgm-exporter 4.5.3-4.8.2 pkg/cmd/app.go).
DCGM_JOB_MAPPING_DIR = "/var/lib/dcgm-exporter/job-mapping"
# The label the exporter adds to each series of a GPU a job holds: the Slurm job id
# (internal/pkg/transformation/const.go hpcJobAttribute, hpc.go).
DCGM_JOB_LABEL = "hpc_job"
# The exporter's own per-GPU labels (internal/pkg/rendermetrics/render_metrics.go): Hostname is the
# Kubernetes node name (the chart's NODE_NAME env, spec.nodeName).
DCGM_NODE_LABEL = "Hostname"


def _meta_label(name: str) -> str:
    """A Kubernetes label name as Prometheus's discovery spells it in a meta label (every
    character outside [a-zA-Z0-9_] becomes _)."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


@dataclass(frozen=True)
class ScrapeJob:
    """One scrape job: what Kubernetes discovery finds (role, namespace, the object's labels and
    port name it keeps), how often, at which path, and the target labels it writes."""

    name: str
    path: str
    role: str  # "endpoints" (a Service's) or "pod"
    namespace: str
    selector: dict[str, str]  # labels of the Service (endpoints) or pod that must match
    port_name: str
    interval: str
    timeout: str
    kept: dict[str, str] = field(default_factory=dict)  # target label <- discovery meta label

    @property
    def _object(self) -> str:
        return "service" if self.role == "endpoints" else "pod"

    @property
    def _port_label(self) -> str:
        return (
            "__meta_kubernetes_endpoint_port_name"
            if self.role == "endpoints"
            else "__meta_kubernetes_pod_container_port_name"
        )

    def relabel_configs(self) -> list[dict]:
        """Keep only the selected objects' named port, then copy the kept meta labels."""
        keys = sorted(self.selector)
        sources = [f"__meta_kubernetes_{self._object}_label_{_meta_label(k)}" for k in keys]
        rules: list[dict] = [
            {
                "action": "keep",
                "source_labels": [*sources, self._port_label],
                "regex": ";".join([*(self.selector[k] for k in keys), self.port_name]),
            }
        ]
        rules += [
            {"action": "replace", "source_labels": [meta], "target_label": target}
            for target, meta in sorted(self.kept.items())
        ]
        return rules

    def discovered_labels(self, pod: str, node: str) -> dict[str, str]:
        """The meta labels Kubernetes discovery gives this job's target (the ones its relabelling
        reads): what a static stand-in for the discovery must carry."""
        labels = {
            f"__meta_kubernetes_{self._object}_label_{_meta_label(k)}": v for k, v in self.selector.items()
        }
        labels[self._port_label] = self.port_name
        labels["__meta_kubernetes_namespace"] = self.namespace
        labels["__meta_kubernetes_pod_name"] = pod
        labels["__meta_kubernetes_pod_node_name"] = node
        if self.role == "endpoints":
            labels["__meta_kubernetes_service_name"] = CONTROLLER_SERVICE
        return labels

    def scrape_config(self, discovery: dict) -> dict:
        """The job's entry in scrape_configs with the given service discovery (one key)."""
        return {
            "job_name": self.name,
            "metrics_path": self.path,
            "scheme": "http",
            "scrape_interval": self.interval,
            "scrape_timeout": self.timeout,
            **discovery,
            "relabel_configs": self.relabel_configs(),
        }

    def kubernetes_discovery(self) -> dict:
        return {"kubernetes_sd_configs": [{"role": self.role, "namespaces": {"names": [self.namespace]}}]}


# Target labels every job writes: where the series came from, in Kubernetes' names. Prefixed, as
# the exporters' own labels already use the short names for other things: slurmctld's node series
# carry node=<Slurm node> (slurm_node_cpus{node="slinky-0"}), and the DCGM exporter labels a GPU's
# series with the pod and namespace of the workload holding it; a target label of the same name
# would rename theirs to exported_<name> (Prometheus honor_labels: false).
_KEPT = {
    "kubernetes_namespace": "__meta_kubernetes_namespace",
    "kubernetes_pod": "__meta_kubernetes_pod_name",
    "kubernetes_node": "__meta_kubernetes_pod_node_name",
}

SLURMCTLD_JOBS = tuple(
    ScrapeJob(
        name=f"slurmctld-{path.rsplit('/', 1)[1]}",
        path=path,
        role="endpoints",
        namespace=SLURM_NAMESPACE,
        selector={
            "app.kubernetes.io/name": SLURMCTLD_APP,
            "app.kubernetes.io/instance": CONTROLLER_NAME,
            "app.kubernetes.io/component": SLURMCTLD_COMPONENT,
        },
        port_name=SLURMCTLD_APP,
        interval=SCRAPE_INTERVAL,
        timeout=SCRAPE_TIMEOUT,
        kept={**_KEPT, "kubernetes_service": "__meta_kubernetes_service_name"},
    )
    for path in SLURM_METRICS_PATHS
)

DCGM_JOB = ScrapeJob(
    name="dcgm-exporter",
    path="/metrics",
    role="pod",
    namespace=DCGM_EXPORTER_NAMESPACE,
    selector={
        "app.kubernetes.io/name": DCGM_EXPORTER_CHART_NAME,
        "app.kubernetes.io/instance": DCGM_EXPORTER_RELEASE,
    },
    port_name=DCGM_EXPORTER_PORT_NAME,
    interval=DCGM_SCRAPE_INTERVAL,
    timeout=DCGM_SCRAPE_TIMEOUT,
    kept=dict(_KEPT),
)

SCRAPE_JOBS = (*SLURMCTLD_JOBS, DCGM_JOB)


def scrape_configuration() -> str:
    """The YAML the AMP managed scraper gets: global interval and timeout, every job with
    Kubernetes discovery. Deterministic: the same text every run."""
    config = {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "scrape_timeout": SCRAPE_TIMEOUT},
        "scrape_configs": [job.scrape_config(job.kubernetes_discovery()) for job in SCRAPE_JOBS],
    }
    return yaml.safe_dump(config, sort_keys=False)
