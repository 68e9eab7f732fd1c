"""KEDA's values: what components/pool_autoscaling.py's release gets over the reviewed base
(charts-values/keda.yaml). The ScaledObjects it then sizes the pools with are
model/builders/autoscaling.py's."""

from __future__ import annotations

from model.facts.contract import CORE_LABELS


def release_values() -> dict:
    """The values computed here, over charts-values/keda.yaml: KEDA's three Deployments on the
    core nodes (the chart's nodeSelector serves the operator, the metrics server and the webhook)."""
    return {"nodeSelector": dict(CORE_LABELS)}
