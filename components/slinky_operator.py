"""cert-manager and the Slinky operator (CRDs, operator, webhook): what the Slurm release needs
in place, webhook ready, before it can be installed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components._parts.helm import chart_release
from components.cluster import ClusterContext
from model.builders import slinky_operator
from model.facts import versions
from model.facts.contract import OPERATOR_NAMESPACE


@dataclass(frozen=True)
class SlinkyOperatorArgs:
    """Every field is required (no defaults)."""

    # The Slinky charts' version (slinkyChartVersion): slurm-operator-crds and slurm-operator.
    chart_version: str
    # The cert-manager chart's version (certManagerVersion).
    cert_manager_version: str
    # The operator's and webhook's images by name, by digest (StackConfig.images.slinky).
    images: Mapping[str, str]
    # Whether the stack installs cert-manager: false in an existing cluster whose own cert-manager
    # serves the operator's Issuer and Certificate (model/facts/shared_addons.py CERT_MANAGER).
    install_cert_manager: bool
    # The EKS cluster it is part of (ClusterContext), for its Kubernetes provider.
    cluster: ClusterContext
    # What every release waits for: the core nodes they run on (NodeGroups.core_ready).
    depends_on: Sequence[pulumi.Resource]


class SlinkyOperator(pulumi.ComponentResource):
    # issues the operator webhook's certificate; None where the cluster's own does
    cert_manager: k8s.helm.v3.Release | None
    crds: k8s.helm.v3.Release  # the Slinky custom resource definitions
    operator: k8s.helm.v3.Release  # the operator and its webhook, in the slinky namespace
    # What the Slurm release waits for: the operator with its webhook Ready.
    ready: list[pulumi.Resource]

    def __init__(self, name: str, args: SlinkyOperatorArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:slinky:SlinkyOperator", name, None, opts)
        self._name, self._args = name, args
        self.cert_manager = self._cert_manager() if args.install_cert_manager else None
        self.crds = self._crds()
        self.operator = self._operator()
        self.ready = [self.operator]
        self.register_outputs({"operator": self.operator.status})

    def _release(
        self,
        suffix: str,
        chart: str,
        version: str,
        repo: str,
        namespace: str,
        values: dict,
        depends_on: Sequence[pulumi.Resource],
        timeout: int,
    ) -> k8s.helm.v3.Release:
        # Helm --wait makes the webhooks Ready before anything depends on them ("no endpoints
        # available for service": SlinkyProject/slurm-operator issue #96).
        return chart_release(
            f"{self._name}-{suffix}",
            chart,
            version,
            repo,
            namespace=namespace,
            values=values,
            parent=self,
            provider=self._args.cluster.provider,
            depends_on=depends_on,
            timeout=timeout,
            create_namespace=True,
        )

    def _cert_manager(self) -> k8s.helm.v3.Release:
        cm = versions.CERT_MANAGER
        return self._release(
            "cert-manager",
            cm.chart,
            self._args.cert_manager_version,
            cm.repository,
            "cert-manager",
            slinky_operator.cert_manager_values(),
            self._args.depends_on,
            timeout=900,
        )

    def _crds(self) -> k8s.helm.v3.Release:
        return self._release(
            "crds",
            "slurm-operator-crds",
            self._args.chart_version,
            versions.SLINKY_REPOSITORY,
            OPERATOR_NAMESPACE,
            slinky_operator.crds_values(),
            self._args.depends_on,
            timeout=300,
        )

    def _operator(self) -> k8s.helm.v3.Release:
        return self._release(
            "operator",
            "slurm-operator",
            self._args.chart_version,
            versions.SLINKY_REPOSITORY,
            OPERATOR_NAMESPACE,
            slinky_operator.operator_values(self._args.images),
            [*self._args.depends_on, *([self.cert_manager] if self.cert_manager else []), self.crds],
            timeout=900,
        )
