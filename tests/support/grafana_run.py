"""The Grafana component registered alone under the program's mocks, with a workspace's query
endpoint and ARN in the forms AMP gives them (Amazon Managed Service for Prometheus API Reference,
WorkspaceDescription: arn arn:aws:aps:<region>:<account>:workspace/<workspaceId>, prometheusEndpoint
https://aps-workspaces.<region>.amazonaws.com/workspaces/<workspaceId>/; a workspace id is ws- and
a UUID)."""
from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from devkit.offline_run import Graph, run_function

WORKSPACE_ID = "ws-0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
REGION = "us-west-2"
WORKSPACE_ARN = f"arn:aws:aps:{REGION}:123456789012:workspace/{WORKSPACE_ID}"
QUERY_ENDPOINT = f"https://aps-workspaces.{REGION}.amazonaws.com/workspaces/{WORKSPACE_ID}/"
CLUSTER = "slinky-eks"
PASSWORD_OUTPUT = "adminPassword"


def grafana_graph() -> Graph:
    """The graph of one Grafana, its admin password exported as __main__.py would."""
    from components.grafana import Grafana, GrafanaArgs

    def program() -> None:
        provider = k8s.Provider("k8s", kubeconfig="{}")
        grafana = Grafana("grafana", GrafanaArgs(
            cluster_name=CLUSTER, region=REGION, query_endpoint=QUERY_ENDPOINT, workspace_arn=WORKSPACE_ARN,
            provider=provider, depends_on=[], identity_depends_on=[]))
        pulumi.export(PASSWORD_OUTPUT, grafana.admin_password)
    return run_function(program)
