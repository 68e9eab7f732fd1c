"""slinky-eks: an empty AWS account to a GPU Slurm cluster on EKS, in one `pulumi up`."""

import pulumi

from components.accounting_database import AccountingDatabase, AccountingDatabaseArgs, rds_ca_bundle
from components.accounting_registration import AccountingRegistration, AccountingRegistrationArgs
from components.cluster import Cluster, ClusterArgs, ClusterContext
from components.cluster_autoscaler import ClusterAutoscaler, ClusterAutoscalerArgs
from components.dcgm_exporter import DcgmExporter, DcgmExporterArgs
from components.device_plugins import DevicePlugins, DevicePluginsArgs
from components.existing_cluster import ExistingCluster, ExistingClusterArgs
from components.existing_network import ExistingNetwork, ExistingNetworkArgs
from components.grafana import Grafana, GrafanaArgs
from components.image_prepull import ImagePrePull, ImagePrePullArgs
from components.job_staging import JobStaging, JobStagingArgs
from components.load_balancer_controller import LoadBalancerController, LoadBalancerControllerArgs
from components.metrics_store import MetricsStore, MetricsStoreArgs, rule_namespaces
from components.network import Network, NetworkArgs
from components.node_groups import NodeGroups, NodeGroupsArgs
from components.pool_autoscaling import PoolAutoscaling, PoolAutoscalingArgs
from components.shared_storage import SharedStorage, SharedStorageArgs
from components.slinky_operator import SlinkyOperator, SlinkyOperatorArgs
from components.slurm_cluster import SlurmCluster, SlurmClusterArgs, login_user
from components.slurm_readiness import SlurmReadiness, SlurmReadinessArgs
from components.slurmd_image import SlurmdImage, SlurmdImageArgs
from components.user_identities import UserIdentities, UserIdentitiesArgs
from model.builders import dashboards
from model.builders import metrics as metrics_model
from model.builders.slurm_values import pool_partition, slinky_image_tag
from model.facts import release, shared_addons
from model.facts.contract import (
    CONTROLLER_CONTAINER,
    CONTROLLER_POD,
    SLURM_CLUSTER,
    SLURM_NAMESPACE,
    nodeset_object,
)
from stack import config as stack_config
from stack.account import Account

config = stack_config.load(Account())
# EKS needs two AZs; availabilityZone comes first (it holds the NAT gateway), then every GPU
# pool's AZ (each pool's EFA subnet).
zones = list(config.node_zones)

# The image builds while the network and EKS come up: it needs neither.
image = SlurmdImage(
    "slurmd",
    SlurmdImageArgs(
        repository_name=f"{config.cluster_name}/slurmd",
        region=config.region,
        tag=config.slurmd_image_tag,
        slurm_version=config.slurm_version,
        dlc_image=config.dlc_base_image,
        slurmd_base_image=config.slurmd_base_image,
        build_on_preview=config.build_image_on_preview,
    ),
)
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
    ExistingCluster("cluster", ExistingClusterArgs(config.existing_cluster, config.region))
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
nodes = NodeGroups(
    "nodes",
    NodeGroupsArgs(
        cluster=context,
        image_repository_arn=image.repository_arn,
        depends_on=cluster.ready,
        private_subnet_ids=network.private_subnet_ids,
        private_subnet_by_zone=network.private_subnet_by_zone,
        gpu_pools=config.gpu_pools,
        core_instance_type=config.core_instance_type,
        core_node_count=config.core_node_count,
        reservations=config.reservations,
        owns_cluster_addons=config.existing_cluster is None,
        node_role_runs_cni=config.existing_cluster is not None and not config.existing_cluster.cni_role_arn,
    ),
)
# The EC2 capacity under the autoscaling pools (docs/scaling.md); nothing for a stack whose pools
# all have a fixed size.
autoscaling_pools = [p for p in config.gpu_pools if p.autoscales]
if autoscaling_pools:
    ClusterAutoscaler(
        "autoscaler",
        ClusterAutoscalerArgs(
            cluster=context,
            kubernetes_version=config.cluster_kubernetes_version,
            depends_on=[*nodes.core_ready, *nodes.gpu_ready],
        ),
    )
# Independent add-ons install side by side; each waits only for the nodes it runs on. In an
# existing cluster the shared ones are the cluster's own unless installSharedAddons lists them
# (model/facts/shared_addons.py).
devices = (
    DevicePlugins("devices", DevicePluginsArgs(cluster=context, depends_on=nodes.gpu_ready))
    if config.installs(shared_addons.NVIDIA_DEVICE_PLUGIN)
    else None
)
lbc = (
    LoadBalancerController(
        "lbc",
        LoadBalancerControllerArgs(
            cluster=context,
            vpc_id=network.vpc_id,
            vpc_arn=network.vpc_arn,
            depends_on=nodes.core_ready,
        ),
    )
    if config.installs(shared_addons.LOAD_BALANCER_CONTROLLER)
    else None
)
storage = SharedStorage(
    "storage",
    SharedStorageArgs(
        cluster=context,
        node_role_name=nodes.role_name,
        vpc_id=network.vpc_id,
        # The one role every node group runs as, read from the role itself: /shared's policy need
        # not wait for the GPU node groups to exist.
        node_role_arns=[nodes.role_arn],
        node_subnet_by_key=network.private_subnet_by_key,
        depends_on=[*nodes.core_ready, *context.pod_identity_ready],
        retain_data=config.retain_shared_data,
        cluster_addons=config.cluster_addons,
        default_storage_class=config.existing_cluster is None,
    ),
)
# Slurm's accounting database needs only the VPC: RDS creates it while EKS comes up. Only its
# ingress rule (from the cluster security group), its Secrets, its CA bundle and the Job that makes
# slurmdbd's user wait for the cluster.
accounting = AccountingDatabase(
    "accounting",
    AccountingDatabaseArgs(
        cluster=context,
        vpc_id=network.vpc_id,
        private_subnet_ids=network.private_subnet_ids,
        instance_class=config.accounting_instance_class,
        storage_gib=config.accounting_storage_gib,
        multi_az=config.accounting_multi_az,
        retain_data=config.retain_accounting_data,
        secret_depends_on=storage.namespace_ready,
        job_depends_on=nodes.core_ready,
        ca_bundle=rds_ca_bundle(config.region),
    ),
)
# The longest single step, pulling the slurmd image, starts once the GPU nodes and the image
# exist, while the operator installs; the NodeSet's pods then start from the nodes' cache.
ImagePrePull(
    "prepull",
    ImagePrePullArgs(
        cluster=context,
        image=image.reference,
        namespace=SLURM_NAMESPACE,
        depends_on=[*nodes.gpu_ready, *storage.namespace_ready],
    ),
)
slinky = SlinkyOperator(
    "slinky",
    SlinkyOperatorArgs(
        cluster=context,
        chart_version=config.slinky_chart_version,
        cert_manager_version=config.cert_manager_version,
        install_cert_manager=config.installs(shared_addons.CERT_MANAGER),
        depends_on=nodes.core_ready,
    ),
)
# The named users' entries, keys and homes; nothing for a stack without `users`.
users = UserIdentities(
    "users",
    UserIdentitiesArgs(
        cluster=context,
        users=config.users,
        namespace=SLURM_NAMESPACE,
        shared_claim=storage.claim_name,
        depends_on=storage.namespace_ready,
        homes_depends_on=[*storage.ready, *nodes.core_ready],
    ),
)
slurm = SlurmCluster(
    "slurm",
    SlurmClusterArgs(
        cluster=context,
        chart_version=config.slinky_chart_version,
        gpu_pools=config.gpu_pools,
        image_repository=image.repository_url,
        image_digest=image.digest,
        image_tag=config.slurmd_image_tag,
        slinky_image_tag=slinky_image_tag(config.slurmd_base_image),
        ssh_public_key=config.ssh_public_key,
        users=config.users,
        ssh_allowed_cidrs=config.ssh_allowed_cidrs,
        shared_claim=storage.claim_name,
        accounting_host=accounting.address,
        accounting_password_secret=accounting.password_secret,
        scheduling=config.scheduling,
        metrics=config.metrics,
        depends_on=storage.namespace_ready,
        state_depends_on=storage.gp3_ready,
        release_depends_on=[
            *slinky.ready,
            *storage.ready,
            *(devices.ready if devices else []),
            *users.ready,
            *accounting.ready,
        ],
        login_depends_on=lbc.ready if lbc else [],
        login_subnet_ids=config.existing_vpc.login_subnet_ids if config.existing_vpc else (),
        login_internal=config.existing_vpc is not None and config.existing_vpc.login_internal,
    ),
)
# After the first install and every change to a pool's NodeSet: the operator's rollout finished and
# every node of the pool taking jobs, or `up` fails saying which node is stuck and why.
SlurmReadiness(
    "slurm-ready",
    SlurmReadinessArgs(
        cluster=context,
        namespace=SLURM_NAMESPACE,
        depends_on=storage.namespace_ready,
        gpu_pools=config.gpu_pools,
        slurm_pod=CONTROLLER_POD,
        slurm_container=CONTROLLER_CONTAINER,
        release_values=slurm.release_values,
        job_depends_on=slurm.ready,
    ),
)

# Every account and user in Slurm's accounting, registered again on every up that changes `users`
# (a user removed from `users` loses their association; their jobs stay in sacct).
AccountingRegistration(
    "accounts",
    AccountingRegistrationArgs(
        cluster=context,
        users=config.users,
        namespace=SLURM_NAMESPACE,
        depends_on=storage.namespace_ready,
        slurm_cluster=SLURM_CLUSTER,
        slurm_pod=CONTROLLER_POD,
        slurm_container=CONTROLLER_CONTAINER,
        job_depends_on=slurm.ready,
        database=accounting.resource_id,
    ),
)

# The jobs and their environment onto /shared, refreshed on every up that changes them, and a
# work directory for root and each named user.
JobStaging(
    "jobs",
    JobStagingArgs(
        cluster=context,
        gpu_pools=config.gpu_pools,
        users=config.users,
        namespace=SLURM_NAMESPACE,
        shared_claim=storage.claim_name,
        depends_on=[*storage.ready, *nodes.core_ready],
    ),
)

# The GPU exporter: on the GPU nodes once their devices are advertised; nothing waits for it.
if config.metrics:
    DcgmExporter(
        "dcgm",
        DcgmExporterArgs(
            cluster=context,
            counters=metrics_model.DCGM_COUNTERS_FILE.read_text(),
            depends_on=[*nodes.gpu_ready, *(devices.ready if devices else [])],
        ),
    )
# The metrics store needs only the cluster (AMP makes the scraper's access entry as it creates it) and
# the VPC: it comes up beside the nodes and the add-ons, and finds the exporters as they start.
metrics = (
    MetricsStore(
        "metrics",
        MetricsStoreArgs(
            cluster=context,
            private_subnet_ids=network.private_subnet_ids,
            retention_days=config.metrics_retention_days,
            scrape_configuration=metrics_model.scrape_configuration(),
            rule_namespaces=rule_namespaces(metrics_model.ALERTS_DIR),
            alert_emails=config.alert_emails,
            depends_on=cluster.ready,
        ),
    )
    if config.metrics
    else None
)
# The dashboards, in the cluster on the core nodes, over the store's workspace (read with the pod's
# own role: Pod Identity); reached through an SSH tunnel via the login node, no endpoint of its own
# (docs/grafana.md).
grafana = (
    Grafana(
        "grafana",
        GrafanaArgs(
            cluster=context,
            query_endpoint=metrics.query_endpoint,
            workspace_arn=metrics.workspace_arn,
            depends_on=nodes.core_ready,
        ),
    )
    if metrics is not None
    else None
)
# The pools' scalers: KEDA sizes each autoscaling pool's NodeSet from its partition's pending work,
# read from the metrics store (docs/scaling.md); the config rules refuse an autoscaling pool
# without metrics, so `metrics` is set wherever a pool autoscales.
if autoscaling_pools and metrics is not None:
    PoolAutoscaling(
        "keda",
        PoolAutoscalingArgs(
            cluster=context,
            pools=autoscaling_pools,
            gpu_pools=config.gpu_pools,
            query_endpoint=metrics.query_endpoint,
            workspace_arn=metrics.workspace_arn,
            idle_minutes=config.scale_down_idle_minutes,
            namespace=SLURM_NAMESPACE,
            depends_on=nodes.core_ready,
            scaler_depends_on=[*slurm.ready, *storage.namespace_ready],
        ),
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
pulumi.export("sharedFileSystemId", storage.file_system_id)
pulumi.export(
    "accountingDatabaseEndpoint", pulumi.Output.concat(accounting.address, ":", accounting.port.apply(str))
)
pulumi.export("slurmdImage", image.reference)
pulumi.export("loginHostname", slurm.login_hostname)
pulumi.export("sshCommand", slurm.ssh_command)
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
if metrics is not None:
    pulumi.export("metricsQueryEndpoint", metrics.query_endpoint)
    pulumi.export("alertTopicArn", metrics.alert_topic_arn)
if grafana is not None:
    pulumi.export("grafanaUrl", dashboards.url())
    pulumi.export(
        "grafanaTunnelCommand",
        slurm.login_hostname.apply(
            lambda host: dashboards.tunnel_command(
                f"{login_user(config.ssh_public_key, config.users)}@{host}"
            )
        ),
    )
    pulumi.export("grafanaAdminPassword", grafana.admin_password)
