"""The Slurm layer in programs of their own, under the mocks: which resources of a graph are the
layer's, and SlurmOnEks (components/slurm_on_eks.py) as Pulumi's component provider constructs it
for a program in another language: the program's own VPC and cluster (this project's Network and
Cluster, under names of the program's), then the provider's `construct` with the inputs by their
schema names, the settings as config strings."""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.provider.experimental.component import ComponentProvider

from components.cluster import Cluster, ClusterArgs
from components.network import Network, NetworkArgs
from components.slurm_on_eks import SlurmOnEks
from devkit.offline_run import Graph, Resource, run_function, stack_config
from model.facts import release
from stack import config as loaded_config
from stack.account import Account

TOKEN = "slinky-eks:index:SlurmOnEks"
# The VPC and cluster below the layer: the dev stack's, and the programs' own.
BELOW = ("network", "vpc", "cluster", "eks")


def _ancestors(graph: Graph, r: Resource) -> list[Resource]:
    out = []
    while r.parent and any(x.urn == r.parent for x in graph.resources):
        r = graph.by_urn(r.parent)
        out.append(r)
    return out


def top(graph: Graph, r: Resource) -> Resource:
    """The stack's child `r` sits under (itself at the top)."""
    chain = [r, *_ancestors(graph, r)]
    return next(x for x in reversed(chain) if x.type != "pulumi:pulumi:Stack")


def layer(graph: Graph) -> list[Resource]:
    """Every resource the stack holds beside its VPC and cluster (the stack's own providers aside)."""
    return [
        r
        for r in graph.resources
        if not (r.type.startswith("pulumi:providers:") and top(graph, r) is r)
        and top(graph, r).name not in BELOW
    ]


def provider() -> ComponentProvider:
    """The provider provider/__main__.py serves."""
    return ComponentProvider([SlurmOnEks], "slinky-eks", None, release.VERSION)


def dev_settings(**overrides: Any) -> dict[str, str]:
    """The dev stack's config as settings: this project's keys bare, others namespaced."""
    prefix = f"{loaded_config.PROJECT}:"
    out = {(k[len(prefix) :] if k.startswith(prefix) else k): v for k, v in stack_config("dev").items()}
    return {**out, **overrides}


def run(settings: dict[str, str]) -> Graph:
    def program() -> None:
        own = loaded_config.load(Account())  # the program's own choices for its VPC and cluster
        vpc = Network(
            "vpc",
            NetworkArgs(
                cidr=own.vpc_cidr,
                zones=list(own.node_zones),
                cluster_name=own.cluster_name,
                region=own.region,
                flow_logs_destination=own.flow_logs_destination,
                flow_logs_retention_days=own.flow_logs_retention_days,
            ),
        )
        eks = Cluster(
            "eks",
            ClusterArgs(
                cluster_name=own.cluster_name,
                region=own.region,
                account_id=vpc.account_id,
                kubernetes_version=own.kubernetes_version,
                vpc_id=vpc.vpc_id,
                private_subnet_ids=vpc.private_subnet_ids,
                public_subnet_ids=vpc.public_subnet_ids,
                admin_role_arns=own.admin_role_arns,
                api_allowed_cidrs=own.api_allowed_cidrs,
                log_types=own.control_plane_log_types,
                log_retention_days=own.control_plane_log_retention_days,
            ),
        )
        inputs = {
            "eksName": own.cluster_name,
            "eksArn": eks.arn,
            "kubeconfig": eks.kubeconfig,
            "eksSecurityGroupId": eks.security_group_id,
            "vpcId": vpc.vpc_id,
            "vpcArn": vpc.vpc_arn,
            "privateSubnetIds": vpc.private_subnet_ids,
            "privateSubnetByZone": vpc.private_subnet_by_zone,
            "privateSubnetByKey": vpc.private_subnet_by_key,
            "settings": settings,
        }
        waits = pulumi.ResourceOptions(depends_on=[*eks.ready, *eks.pod_identity_ready])
        result = provider().construct("slurm", TOKEN, inputs, waits)
        pulumi.export("sshCommand", result.state["sshCommand"])

    return run_function(program)
