"""A program that owns its VPC and EKS cluster and adds Slurm to them with one component.

The VPC and the cluster here are slinky-eks's own Network and Cluster components, declared by this
program under names of its own; any VPC and EKS cluster do, given as the same facts (a
NetworkContext and a ClusterContext: README, "Slurm in your own Pulumi program", says what the
cluster must allow). Everything above them is SlurmLayer, one child of this program's stack.

The settings are read as slinky-eks reads its own stack's: the keys of its README's configuration
table, in this project's namespace (`pulumi config set availabilityZone us-west-2a`), checked by
the same rules and the same preflight before anything is registered."""

import pulumi

from components.cluster import Cluster, ClusterArgs, ClusterContext
from components.network import Network, NetworkArgs
from components.slurm_layer import NetworkContext, SlurmLayer, SlurmLayerArgs
from stack import config as stack_config
from stack.account import Account

settings = stack_config.load(Account())

vpc = Network(
    "vpc",
    NetworkArgs(
        cidr=settings.vpc_cidr,
        zones=list(settings.node_zones),
        cluster_name=settings.cluster_name,
        region=settings.region,
        flow_logs_destination=settings.flow_logs_destination,
        flow_logs_retention_days=settings.flow_logs_retention_days,
    ),
)
eks = Cluster(
    "eks",
    ClusterArgs(
        cluster_name=settings.cluster_name,
        region=settings.region,
        account_id=vpc.account_id,
        kubernetes_version=settings.kubernetes_version,
        vpc_id=vpc.vpc_id,
        private_subnet_ids=vpc.private_subnet_ids,
        public_subnet_ids=vpc.public_subnet_ids,
        admin_role_arns=settings.admin_role_arns,
        api_allowed_cidrs=settings.api_allowed_cidrs,
        log_types=settings.control_plane_log_types,
        log_retention_days=settings.control_plane_log_retention_days,
    ),
)
slurm = SlurmLayer(
    "slurm",
    SlurmLayerArgs(
        cluster=ClusterContext(
            name=settings.cluster_name,
            region=settings.region,
            account_id=vpc.account_id,
            arn=eks.arn,
            provider=eks.provider,
            security_group_id=eks.security_group_id,
            pod_identity_ready=tuple(eks.pod_identity_ready),
        ),
        network=NetworkContext(
            vpc_id=vpc.vpc_id,
            vpc_arn=vpc.vpc_arn,
            private_subnet_ids=vpc.private_subnet_ids,
            private_subnet_by_zone=vpc.private_subnet_by_zone,
            private_subnet_by_key=vpc.private_subnet_by_key,
        ),
        settings=settings,
        depends_on=eks.ready,
    ),
)

pulumi.export("kubeconfig", eks.kubeconfig)
pulumi.export("sshCommand", slurm.ssh_command)
pulumi.export("slurmdImage", slurm.slurmd_image)
