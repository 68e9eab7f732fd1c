"""Grafana in the cluster, on the core nodes: the repository's dashboards over Amazon Managed
Service for Prometheus, read with the pod's own IAM role (EKS Pod Identity), reached through an SSH
tunnel via the login node (what it gets and why: model/builders/dashboards.py)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pulumi_random as random

from components._parts.helm import pinned_release
from components._parts.pod_identity import ServiceAccountRef, pod_identity
from components.cluster import ClusterContext
from model.builders import dashboards
from model.facts import versions

# What Grafana may do with the workspace: exactly the actions of the AWS managed policy
# AmazonPrometheusQueryAccess (policy version v1, unchanged since 2020-12-19: iann0036/iam-dataset
# aws/managedpolicies/AmazonPrometheusQueryAccess.json at 2073fa52), the ones AMP's guide for a
# self-run Grafana asks for (Amazon Managed Service for Prometheus User Guide, "Set up Grafana open
# source or Grafana Enterprise for use with Amazon Managed Service for Prometheus"), on this one
# workspace where the managed policy grants them on "*".
QUERY_ACTIONS = ("aps:GetLabels", "aps:GetMetricMetadata", "aps:GetSeries", "aps:QueryMetrics")


def query_policy(workspace_arn: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": list(QUERY_ACTIONS), "Resource": workspace_arn}],
        }
    )


@dataclass(frozen=True)
class GrafanaArgs:
    """Every field is required (no defaults)."""

    # The EKS cluster it is part of (ClusterContext), for its name, its region, its Kubernetes provider
    # and what Pod Identity associations wait for.
    cluster: ClusterContext
    # The workspace's query endpoint (MetricsStore.query_endpoint): the data source's URL.
    query_endpoint: pulumi.Input[str]
    # The workspace's ARN (MetricsStore.workspace_arn): the only resource the role may query.
    workspace_arn: pulumi.Input[str]
    # What the namespace, its Secret and ConfigMaps and the release wait for: the core nodes
    # Grafana runs on (NodeGroups.core_ready).
    depends_on: Sequence[pulumi.Resource]


class Grafana(pulumi.ComponentResource):
    release: k8s.helm.v3.Release  # the Grafana release, in its own namespace
    dashboards: list[k8s.core.v1.ConfigMap]  # one per observability/dashboards/*.json, read-only in Grafana
    admin_password: pulumi.Output[str]  # the admin login's password (secret), drawn once
    # What waits for Grafana: its release (Helm waits for the pod to be ready).
    ready: list[pulumi.Resource]

    def __init__(self, name: str, args: GrafanaArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:metrics:Grafana", name, None, opts)
        self._name, self._args = name, args
        namespace = self._namespace()
        association = self._identity()
        self.admin_password = self._generated_password()
        secret = self._admin_secret(namespace)
        self.dashboards = self._dashboard_configmaps(namespace)
        self.release = self._release([namespace, secret, association, *self.dashboards])
        self.ready = [self.release]
        self.register_outputs({"release": self.release.status, "admin_password": self.admin_password})

    def _child_opts(self, depends_on: Sequence[pulumi.Resource]) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(
            parent=self, provider=self._args.cluster.provider, depends_on=list(depends_on)
        )

    def _namespace(self) -> k8s.core.v1.Namespace:
        return k8s.core.v1.Namespace(
            f"{self._name}-namespace",
            metadata={"name": dashboards.NAMESPACE},
            opts=self._child_opts(self._args.depends_on),
        )

    def _identity(self) -> aws.eks.PodIdentityAssociation:
        name, args = self._name, self._args
        document = pulumi.Output.from_input(args.workspace_arn).apply(query_policy)
        account = ServiceAccountRef(
            args.cluster.name, args.cluster.arn, dashboards.NAMESPACE, dashboards.SERVICE_ACCOUNT
        )
        # The association must name the service account the chart creates (serviceAccount.name),
        # or Grafana signs with no credentials and every panel fails.
        return pod_identity(
            name, account, document, self, [*args.depends_on, *args.cluster.pod_identity_ready]
        )

    def _generated_password(self) -> pulumi.Output[str]:
        # Drawn once and kept in the state: the same password on every preview and update, and the
        # chart's own random one (a new one each render) never drawn.
        password = random.RandomPassword(
            f"{self._name}-admin-password",
            length=dashboards.ADMIN_PASSWORD_LENGTH,
            special=False,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return pulumi.Output.secret(password.result)

    def _admin_secret(self, namespace: k8s.core.v1.Namespace) -> k8s.core.v1.Secret:
        # The only copy of the password in the cluster; Grafana reads it as a file
        # (model/builders/dashboards.py ADMIN_SECRET).
        def encoded(text: str) -> str:
            return base64.b64encode(text.encode()).decode()

        return k8s.core.v1.Secret(
            f"{self._name}-admin-secret",
            metadata={"name": dashboards.ADMIN_SECRET, "namespace": dashboards.NAMESPACE},
            data={dashboards.ADMIN_PASSWORD_KEY: self.admin_password.apply(encoded)},
            opts=self._child_opts([namespace]),
        )

    def _dashboard_configmaps(self, namespace: k8s.core.v1.Namespace) -> list[k8s.core.v1.ConfigMap]:
        # The file's text is the ConfigMap's data: a changed file is an update of its ConfigMap on
        # the next `up`, which the kubelet brings into the mounted directory (a whole-ConfigMap
        # volume, not a subPath) and Grafana's provider rereads there.
        out = []
        for path in dashboards.dashboard_files():
            key = dashboards.dashboard_key(path)
            out.append(
                k8s.core.v1.ConfigMap(
                    f"{self._name}-dashboard-{key}",
                    metadata={"name": dashboards.configmap_name(key), "namespace": dashboards.NAMESPACE},
                    data={path.name: dashboards.dashboard_text(path)},
                    opts=self._child_opts([namespace]),
                )
            )
        return out

    def _release(self, depends_on: Sequence[pulumi.Resource]) -> k8s.helm.v3.Release:
        args = self._args
        keys = [dashboards.dashboard_key(p) for p in dashboards.dashboard_files()]
        values = pulumi.Output.from_input(args.query_endpoint).apply(
            lambda endpoint: dashboards.release_values(endpoint, args.cluster.region, keys)
        )
        return pinned_release(
            f"{self._name}-release",
            versions.GRAFANA,
            namespace=dashboards.NAMESPACE,
            values=values,
            release_name=dashboards.RELEASE,
            parent=self,
            provider=args.cluster.provider,
            depends_on=[*args.depends_on, *depends_on],
        )
