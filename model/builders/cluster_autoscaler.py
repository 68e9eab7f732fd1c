"""cluster-autoscaler's values: what components/cluster_autoscaler.py's release gets over the
reviewed base (charts-values/cluster-autoscaler.yaml), and the names its Pod Identity association
must match."""

from __future__ import annotations

from model.facts import versions
from model.facts.contract import CORE_LABELS, SYSTEM_NAMESPACE

NAMESPACE = SYSTEM_NAMESPACE
# The chart's ServiceAccount is its fullname (templates/_helpers.tpl serviceAccountName, chart
# 9.59.0); fullnameOverride fixes it, so the Pod Identity association can name it.
SERVICE_ACCOUNT = "cluster-autoscaler"


def release_values(cluster_name: str, region: str, kubernetes_version: str) -> dict:
    """The values computed here, over charts-values/cluster-autoscaler.yaml."""
    tag = versions.cluster_autoscaler_tag(kubernetes_version)
    if tag is None:
        raise ValueError(
            f"kubernetesVersion {kubernetes_version}: no cluster-autoscaler release is pinned for it; "
            f"pinned: {', '.join(versions.CLUSTER_AUTOSCALER_FOR_KUBERNETES)}"
        )
    return {
        "fullnameOverride": SERVICE_ACCOUNT,
        # The chart's --node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,
        # k8s.io/cluster-autoscaler/<clusterName> (templates/deployment.yaml, autoDiscovery.tags).
        "autoDiscovery": {"clusterName": cluster_name},
        # Given, so CA never asks IMDS (one hop only: components/node_groups.py IMDS_HOP_LIMIT).
        "awsRegion": region,
        "image": {"repository": versions.CLUSTER_AUTOSCALER_IMAGE, "tag": tag},
        "nodeSelector": dict(CORE_LABELS),
    }
