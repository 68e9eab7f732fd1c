"""cert-manager and the Slinky operator (CRDs, operator, webhook): what the Slurm release needs
in place, webhook ready, before it can be installed."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components.helm import chart_release
from model import versions
from model.contract import CORE_LABELS

OPERATOR_NAMESPACE = "slinky"


@dataclass(frozen=True)
class SlinkyOperatorArgs:
    chart_version: str
    cert_manager_version: str
    provider: k8s.Provider
    system_nodes: Sequence[pulumi.Resource]


class SlinkyOperator(pulumi.ComponentResource):
    cert_manager: k8s.helm.v3.Release
    crds: k8s.helm.v3.Release
    operator: k8s.helm.v3.Release

    def __init__(self, name: str, args: SlinkyOperatorArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:slinky:SlinkyOperator", name, None, opts)
        core = dict(CORE_LABELS)

        slinky_repo = versions.SLINKY_REPOSITORY

        def release(suffix: str, chart: str, version: str, repo: str, namespace: str,
                    values: dict, after: Sequence[pulumi.Resource], timeout: int) -> k8s.helm.v3.Release:
            # Helm --wait makes the webhooks Ready before anything depends on them ("no endpoints
            # available for service": SlinkyProject/slurm-operator issue #96).
            return chart_release(f"{name}-{suffix}", chart, version, repo, namespace=namespace,
                                 values=values, parent=self, provider=args.provider,
                                 depends_on=after, timeout=timeout, create_namespace=True)

        self.cert_manager = release(
            "cert-manager", versions.CERT_MANAGER.chart, args.cert_manager_version,
            versions.CERT_MANAGER.repository, "cert-manager",
            {"nodeSelector": core, "webhook": {"nodeSelector": core},
             "cainjector": {"nodeSelector": core}, "startupapicheck": {"nodeSelector": core}},
            args.system_nodes, timeout=900)
        self.crds = release("crds", "slurm-operator-crds", args.chart_version, slinky_repo,
                            OPERATOR_NAMESPACE, {}, args.system_nodes, timeout=300)
        self.operator = release(
            "operator", "slurm-operator", args.chart_version, slinky_repo, OPERATOR_NAMESPACE,
            {"operator": {"nodeSelector": core}, "webhook": {"nodeSelector": core}},
            [*args.system_nodes, self.cert_manager, self.crds], timeout=900)
        self.register_outputs({"operator": self.operator.status})
