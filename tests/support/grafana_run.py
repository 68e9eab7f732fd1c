"""The Grafana component registered alone under the program's mocks, with a workspace's query
endpoint and ARN in the forms AMP gives them (Amazon Managed Service for Prometheus API Reference,
WorkspaceDescription: arn arn:aws:aps:<region>:<account>:workspace/<workspaceId>, prometheusEndpoint
https://aps-workspaces.<region>.amazonaws.com/workspaces/<workspaceId>/; a workspace id is ws- and
a UUID)."""

from __future__ import annotations

import pulumi_kubernetes as k8s

from devkit.offline_run import Graph, run_function

WORKSPACE_ID = "ws-0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
REGION = "us-west-2"
ACCOUNT = "123456789012"
WORKSPACE_ARN = f"arn:aws:aps:{REGION}:{ACCOUNT}:workspace/{WORKSPACE_ID}"
QUERY_ENDPOINT = f"https://aps-workspaces.{REGION}.amazonaws.com/workspaces/{WORKSPACE_ID}/"
CLUSTER = "slinky-eks"
CLUSTER_ARN = f"arn:aws:eks:{REGION}:123456789012:cluster/{CLUSTER}"


def grafana_graph() -> Graph:
    """The graph of one Grafana. Nothing is exported: the mocked engine keeps one root stack per
    process, and an export here would show in every later run's outputs (the dev stack's among
    them); the component's own registered outputs carry the password instead."""
    from components.cluster import ClusterContext
    from components.grafana import Grafana, GrafanaArgs

    def program() -> None:
        provider = k8s.Provider("k8s", kubeconfig="{}")
        Grafana(
            "grafana",
            GrafanaArgs(
                cluster=ClusterContext(
                    name=CLUSTER,
                    region=REGION,
                    account_id=ACCOUNT,
                    arn=CLUSTER_ARN,
                    provider=provider,
                    security_group_id="sg-0123456789abcdef0",
                    pod_identity_ready=(),
                ),
                query_endpoint=QUERY_ENDPOINT,
                workspace_arn=WORKSPACE_ARN,
                depends_on=[],
            ),
        )

    return run_function(program)
