"""The AWS Load Balancer Controller's values: what components/load_balancer_controller.py's release
gets over the reviewed base (charts-values/aws-load-balancer-controller.yaml), and the service
account its Pod Identity association must name."""

from __future__ import annotations

from typing import Any

from model.facts.contract import CORE_LABELS, SYSTEM_NAMESPACE

NAMESPACE = SYSTEM_NAMESPACE
SERVICE_ACCOUNT = "aws-load-balancer-controller"


def release_values(cluster_name: str, region: str, vpc_id: Any) -> dict:
    """The controller's cluster, region and VPC, its service account created under a fixed name, on
    the core nodes. `vpc_id` is the VPC's id, a str or the Output of one."""
    return {
        "clusterName": cluster_name,
        "region": region,
        "vpcId": vpc_id,
        "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT},
        "nodeSelector": dict(CORE_LABELS),
    }
