"""slinky-eks: an empty AWS account to a GPU Slurm cluster on EKS, in one `pulumi up`."""

import pulumi

from components.cluster import Cluster, ClusterArgs, ClusterContext
from components.existing_cluster import ExistingCluster, ExistingClusterArgs
from components.existing_network import ExistingNetwork, ExistingNetworkArgs
from components.network import Network, NetworkArgs
from components.slurm_cluster import login_user
from components.slurm_layer import NetworkContext, SlurmLayerArgs, declare_slurm_layer
from model.builders import dashboards
from model.builders.slurm_values import pool_partition
from model.facts import release
from model.facts.contract import nodeset_object
from stack import config as stack_config
from stack.account import Account

config = stack_config.load(Account())
# EKS needs two AZs; availabilityZone comes first (it holds the NAT gateway), then every GPU
# pool's AZ (each pool's EFA subnet).
zones = list(config.node_zones)

# The stack's own VPC, or the one vpcId names, read and left as it is (README, "Into an existing VPC").
network = (
    ExistingNetwork("network", ExistingNetworkArgs(vpc=config.existing_vpc))
    if config.existing_vpc
    else Network(
        "network",
        NetworkArgs(
            cidr=config.vpc_cidr,
            zones=zones,
            cluster_name=config.cluster_name,
            region=config.region,
            flow_logs_destination=config.flow_logs_destination,
            flow_logs_retention_days=config.flow_logs_retention_days,
        ),
    )
)
# Into an existing EKS cluster (existingClusterName), read and checked before any resource; else
# the stack's own.
cluster = (
    ExistingCluster(
        "cluster",
        ExistingClusterArgs(config.existing_cluster, config.region, pulumi.Config("aws").get("profile")),
    )
    if config.existing_cluster
    else Cluster(
        "cluster",
        ClusterArgs(
            cluster_name=config.cluster_name,
            region=config.region,
            account_id=network.account_id,
            kubernetes_version=config.kubernetes_version,
            vpc_id=network.vpc_id,
            private_subnet_ids=network.private_subnet_ids,
            public_subnet_ids=network.public_subnet_ids,
            admin_role_arns=config.admin_role_arns,
            api_allowed_cidrs=config.api_allowed_cidrs,
            log_types=config.control_plane_log_types,
            log_retention_days=config.control_plane_log_retention_days,
        ),
    )
)
# The cluster as every component that runs in it or beside it sees it: one bundle, passed as `cluster`.
context = ClusterContext(
    name=cluster.name,
    region=config.region,
    account_id=network.account_id,
    arn=cluster.arn,
    provider=cluster.provider,
    security_group_id=cluster.security_group_id,
    pod_identity_ready=tuple(cluster.pod_identity_ready),
)
# Everything above the cluster: node groups, image, storage, accounting, the operator, Slurm, its
# users and jobs, metrics, scaling (components/slurm_layer.py; its SlurmLayer component is the same
# layer for a program with its own cluster). Declared at the top of the stack, as it always was.
layer = declare_slurm_layer(
    SlurmLayerArgs(
        cluster=context,
        network=NetworkContext(
            vpc_id=network.vpc_id,
            vpc_arn=network.vpc_arn,
            private_subnet_ids=network.private_subnet_ids,
            private_subnet_by_zone=network.private_subnet_by_zone,
            private_subnet_by_key=network.private_subnet_by_key,
        ),
        settings=config,
        depends_on=cluster.ready,
    ),
    parent=None,
    prefix="",
)

# Stack outputs: what each one is, and when it is absent, is declared once in model/facts/outputs.py
# (the README's outputs table is written from it; tests/graph/test_outputs.py holds these exports
# to it).
pulumi.export("projectVersion", release.VERSION)
pulumi.export("clusterName", cluster.name)
pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export("region", config.region)
pulumi.export("vpcId", network.vpc_id)
pulumi.export("gpuAvailabilityZone", config.availability_zone)
pulumi.export("sharedFileSystemId", layer.storage.file_system_id)
pulumi.export(
    "accountingDatabaseEndpoint",
    pulumi.Output.concat(layer.accounting.address, ":", layer.accounting.port.apply(str)),
)
pulumi.export("slurmdImage", layer.image.reference)
pulumi.export("loginHostname", layer.slurm.login_hostname)
pulumi.export("sshCommand", layer.slurm.ssh_command)
pulumi.export(
    "gpuPools",
    [
        {
            "name": p.name,
            "instanceType": p.gpu.name,
            "nodeCount": p.node_count,
            "minNodes": p.min_nodes,
            "maxNodes": p.max_nodes,
            "availabilityZone": p.availability_zone,
            "partition": pool_partition(p),
            "nodeSet": nodeset_object(p.name),
        }
        for p in config.gpu_pools
    ],
)
pulumi.export("gpuInstanceType", config.gpu_pools[0].gpu.name)
pulumi.export("gpuNodeCount", config.gpu_node_count)
pulumi.export("costPerHour", config.cost_per_hour)
if layer.metrics is not None:
    pulumi.export("metricsQueryEndpoint", layer.metrics.query_endpoint)
    pulumi.export("alertTopicArn", layer.metrics.alert_topic_arn)
if layer.grafana is not None:
    pulumi.export("grafanaUrl", dashboards.url())
    pulumi.export(
        "grafanaTunnelCommand",
        layer.slurm.login_hostname.apply(
            lambda host: dashboards.tunnel_command(
                f"{login_user(config.ssh_public_key, config.users)}@{host}"
            )
        ),
    )
    pulumi.export("grafanaAdminPassword", layer.grafana.admin_password)
