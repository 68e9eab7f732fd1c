"""Where each chart's values come from: the reviewed base, charts-values/<chart>.yaml, and the one
builder in model/builders/ of what the release gets over it (the component merges the two:
components/_parts/helm.py). The architecture page's chart table is written from this
(`python -m devkit.project_docs`), and tests/unit/model/test_charts.py holds it to charts-values/."""

from __future__ import annotations

# chart -> the builder of its release's values, as `<module>.<function>` under model/builders/.
BUILDERS = {
    "aws-efa-k8s-device-plugin": "device_plugins.efa_values",
    "aws-load-balancer-controller": "load_balancer_controller.release_values",
    "cert-manager": "slinky_operator.cert_manager_values",
    "cluster-autoscaler": "cluster_autoscaler.release_values",
    "dcgm-exporter": "dcgm_exporter.release_values",
    "grafana": "dashboards.release_values",
    "keda": "keda.release_values",
    "nvidia-device-plugin": "device_plugins.nvidia_values",
    "slurm": "slurm_values.slurm_values",
    "slurm-operator": "slinky_operator.operator_values",
    "slurm-operator-crds": "slinky_operator.crds_values",
}
