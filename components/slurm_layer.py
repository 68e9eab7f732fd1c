"""The Slurm layer: everything this project declares above an EKS cluster and its VPC (node groups,
the slurmd image, shared storage, accounting, the Slinky operator, Slurm, its users and jobs,
metrics, scaling, health and readiness), as one component another Pulumi program composes beside
a cluster of its own (README, "Slurm in your own Pulumi program"; examples/own-cluster/).

One home for the wiring: `declare_slurm_layer` declares the layer under a given parent. __main__.py
calls it with no parent, so the dev stack's URNs stay those it always had (a new parent is part of
every URN under it: https://www.pulumi.com/docs/iac/concepts/resources/names/#urns); SlurmLayer
calls it with itself as the parent and its name as every part's prefix."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import pulumi

from components import accounting_database
from components._parts import stack_placement
from components.accounting_database import AccountingDatabase, AccountingDatabaseArgs
from components.accounting_registration import AccountingRegistration, AccountingRegistrationArgs
from components.cluster import ClusterContext
from components.cluster_autoscaler import ClusterAutoscaler, ClusterAutoscalerArgs
from components.dcgm_exporter import DcgmExporter, DcgmExporterArgs
from components.device_plugins import DevicePlugins, DevicePluginsArgs
from components.grafana import Grafana, GrafanaArgs
from components.image_prepull import ImagePrePull, ImagePrePullArgs
from components.job_staging import JobStaging, JobStagingArgs
from components.load_balancer_controller import LoadBalancerController, LoadBalancerControllerArgs
from components.metrics_store import MetricsStore, MetricsStoreArgs, rule_namespaces
from components.network_topology import NetworkTopology, NetworkTopologyArgs
from components.node_groups import NodeGroups, NodeGroupsArgs
from components.pool_autoscaling import PoolAutoscaling, PoolAutoscalingArgs
from components.shared_storage import SharedStorage, SharedStorageArgs
from components.slinky_operator import SlinkyOperator, SlinkyOperatorArgs
from components.slurm_cluster import SlurmCluster, SlurmClusterArgs
from components.slurm_readiness import SlurmReadiness, SlurmReadinessArgs
from components.slurmd_image import SlurmdImage, SlurmdImageArgs
from components.user_identities import UserIdentities, UserIdentitiesArgs
from model.builders import metrics as metrics_model
from model.builders import topology
from model.builders.stack_placement import StackPlacement
from model.checks import existing_cluster
from model.facts import shared_addons
from model.facts.contract import CONTROLLER_CONTAINER, CONTROLLER_POD, SLURM_CLUSTER, SLURM_NAMESPACE
from stack.config import PROJECT, ConfigError, StackConfig


@dataclass(frozen=True)
class NetworkContext:
    """The VPC as the Slurm layer sees it: what components/network.py's Network exposes, or the
    same facts of any VPC the caller owns."""

    # The VPC the node groups, the file system, the database and the load balancers go into.
    vpc_id: pulumi.Input[str]
    # Its ARN (arn:aws:ec2:<region>:<account>:vpc/<id>): the load balancer controller's IAM scope.
    vpc_arn: pulumi.Input[str]
    # The cluster's two zones' private subnets: the core nodes', the database's, the scraper's.
    private_subnet_ids: Sequence[pulumi.Input[str]]
    # The private subnet of each AZ (model/facts/node_zones.py's zone names): a GPU pool's node
    # group gets its AZ's, so every pool's AZ needs one.
    private_subnet_by_zone: Mapping[str, pulumi.Input[str]]
    # The same subnets by node_zones.subnet_key: the file system's mount targets are named by it.
    private_subnet_by_key: Mapping[str, pulumi.Input[str]]


@dataclass(frozen=True)
class SlurmLayerArgs:
    """Every field is required (no defaults)."""

    # The EKS cluster the layer installs into (components/cluster.py).
    cluster: ClusterContext
    # The VPC the cluster runs in.
    network: NetworkContext
    # Every other choice, read and checked as a stack's config is (stack/config.py load: the keys
    # of model/checks/config_schema.py, the same rules and the same preflight), the GPU pools
    # (settings.gpu_pools) among them.
    settings: StackConfig
    # What the node groups and the metrics store wait for: the control plane and what nodes need
    # to join it (Cluster.ready).
    depends_on: Sequence[pulumi.Resource]


@dataclass(frozen=True)
class SlurmLayerParts:
    """The layer's components whose outputs a program exports (__main__.py's stack outputs)."""

    image: SlurmdImage
    nodes: NodeGroups
    storage: SharedStorage
    accounting: AccountingDatabase
    slurm: SlurmCluster
    # None when settings.metrics is off.
    metrics: Optional[MetricsStore]
    grafana: Optional[Grafana]


def declare_slurm_layer(
    args: SlurmLayerArgs, parent: Optional[pulumi.Resource], prefix: str
) -> SlurmLayerParts:
    """Declare every component of the layer under `parent` (None: the stack itself), each named
    `prefix` + its part's name."""
    config, context, network = args.settings, _in_region(args.cluster, args.settings.region), args.network

    # In a cluster the stack shares, its pods go to its own nodes only, and its core nodes take
    # only its pods (model/builders/stack_placement.py).
    placement = StackPlacement(config.cluster_name) if config.existing_cluster else None
    placed = [stack_placement.transformation(placement)] if placement else None

    def opts() -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=parent, transformations=placed)

    # The image builds while the network and EKS come up: it needs neither.
    image = SlurmdImage(
        f"{prefix}slurmd",
        SlurmdImageArgs(
            repository_name=f"{config.cluster_name}/slurmd",
            region=config.region,
            tag=config.slurmd_image_tag,
            slurm_version=config.slurm_version,
            # Both by the digest their registries hold for the configured tags (StackConfig.images).
            dlc_image=config.images.dlc_base,
            slurmd_base_image=config.images.slurmd_base,
            build_on_preview=config.build_image_on_preview,
            builder=config.image_builder,
            # Read as the AWS provider reads it: the build run calls CodeBuild with the same profile.
            aws_profile=pulumi.Config("aws").get("profile"),
        ),
        opts(),
    )
    nodes = NodeGroups(
        f"{prefix}nodes",
        NodeGroupsArgs(
            cluster=context,
            image_repository_arn=image.repository_arn,
            depends_on=args.depends_on,
            private_subnet_ids=network.private_subnet_ids,
            private_subnet_by_zone=network.private_subnet_by_zone,
            gpu_pools=config.gpu_pools,
            core_instance_type=config.core_instance_type,
            core_node_count=config.core_node_count,
            reservations=config.reservations,
            owns_cluster_addons=config.existing_cluster is None,
            node_role_runs_cni=config.existing_cluster is not None
            and not config.existing_cluster.cni_role_arn,
            vpc_id=network.vpc_id,
            own_security_group=config.existing_cluster is not None,
            placement=placement,
            node_access_entry=config.existing_cluster is not None
            and config.existing_cluster.authentication_mode != existing_cluster.CONFIG_MAP,
        ),
        opts(),
    )
    # The EC2 capacity under the autoscaling pools (docs/scaling.md); nothing for a stack whose pools
    # all have a fixed size.
    autoscaling_pools = [p for p in config.gpu_pools if p.autoscales]
    if autoscaling_pools:
        ClusterAutoscaler(
            f"{prefix}autoscaler",
            ClusterAutoscalerArgs(
                cluster=context,
                kubernetes_version=config.cluster_kubernetes_version,
                depends_on=[*nodes.core_ready, *nodes.gpu_ready],
            ),
            opts(),
        )
    # Independent add-ons install side by side; each waits only for the nodes it runs on. In an
    # existing cluster the shared ones are the cluster's own unless installSharedAddons lists them
    # (model/facts/shared_addons.py).
    devices = (
        DevicePlugins(
            f"{prefix}devices", DevicePluginsArgs(cluster=context, depends_on=nodes.gpu_ready), opts()
        )
        if config.installs(shared_addons.NVIDIA_DEVICE_PLUGIN)
        else None
    )
    lbc = (
        LoadBalancerController(
            f"{prefix}lbc",
            LoadBalancerControllerArgs(
                cluster=context,
                vpc_id=network.vpc_id,
                vpc_arn=network.vpc_arn,
                depends_on=nodes.core_ready,
            ),
            opts(),
        )
        if config.installs(shared_addons.LOAD_BALANCER_CONTROLLER)
        else None
    )
    storage = SharedStorage(
        f"{prefix}storage",
        SharedStorageArgs(
            cluster=context,
            node_role_name=nodes.role_name,
            vpc_id=network.vpc_id,
            node_security_group_id=nodes.security_group_id,
            # The one role every node group runs as, read from the role itself: /shared's policy need
            # not wait for the GPU node groups to exist.
            node_role_arns=[nodes.role_arn],
            node_subnet_by_key=network.private_subnet_by_key,
            depends_on=[*nodes.core_ready, *context.pod_identity_ready],
            retain_data=config.retain_shared_data,
            csi_drivers=config.csi_drivers,
            owns_cluster=config.existing_cluster is None,
            default_storage_class=config.existing_cluster is None,
        ),
        opts(),
    )
    # Slurm's accounting database needs only the VPC: RDS creates it while EKS comes up. Only its
    # ingress rule (from the nodes' security group), its Secrets, its CA bundle and the Job that makes
    # slurmdbd's user wait for the cluster. The CA bundle is read through its module, where
    # devkit/offline_run.py answers it offline.
    accounting = AccountingDatabase(
        f"{prefix}accounting",
        AccountingDatabaseArgs(
            cluster=context,
            vpc_id=network.vpc_id,
            node_security_group_id=nodes.security_group_id,
            private_subnet_ids=network.private_subnet_ids,
            instance_class=config.accounting_instance_class,
            storage_gib=config.accounting_storage_gib,
            multi_az=config.accounting_multi_az,
            retain_data=config.retain_accounting_data,
            secret_depends_on=storage.namespace_ready,
            job_depends_on=nodes.core_ready,
            ca_bundle=accounting_database.rds_ca_bundle(config.region),
        ),
        opts(),
    )
    # The longest single step, pulling the slurmd image, starts once the GPU nodes and the image
    # exist, while the operator installs; the NodeSet's pods then start from the nodes' cache.
    ImagePrePull(
        f"{prefix}prepull",
        ImagePrePullArgs(
            cluster=context,
            image=image.reference,
            namespace=SLURM_NAMESPACE,
            depends_on=[*nodes.gpu_ready, *storage.namespace_ready],
        ),
        opts(),
    )
    slinky = SlinkyOperator(
        f"{prefix}slinky",
        SlinkyOperatorArgs(
            cluster=context,
            chart_version=config.slinky_chart_version,
            cert_manager_version=config.cert_manager_version,
            images=config.images.slinky,
            install_cert_manager=config.installs(shared_addons.CERT_MANAGER),
            depends_on=nodes.core_ready,
        ),
        opts(),
    )
    # The named users' entries, keys and homes; nothing for a stack without `users`.
    users = UserIdentities(
        f"{prefix}users",
        UserIdentitiesArgs(
            cluster=context,
            users=config.users,
            namespace=SLURM_NAMESPACE,
            shared_claim=storage.claim_name,
            depends_on=storage.namespace_ready,
            homes_depends_on=[*storage.ready, *nodes.core_ready],
        ),
        opts(),
    )
    # Where each pool's nodes sit in the network, for Slurm's placement (docs/topology.md): the
    # writer only for a stack with a pool that has a place, so other stacks are as they were.
    placements = topology.pool_placements(config.gpu_pools, config.reservations)
    writer = (
        NetworkTopology(
            f"{prefix}network-topology",
            NetworkTopologyArgs(
                cluster=context,
                placements=placements,
                namespace=SLURM_NAMESPACE,
                depends_on=[*storage.namespace_ready, *nodes.core_ready],
            ),
            opts(),
        )
        if topology.places_any(placements)
        else None
    )
    slurm = SlurmCluster(
        f"{prefix}slurm",
        SlurmClusterArgs(
            cluster=context,
            chart_version=config.slinky_chart_version,
            gpu_pools=config.gpu_pools,
            image_repository=image.repository_url,
            image_digest=image.digest,
            image_tag=config.slurmd_image_tag,
            slinky_images=config.images.slinky,
            ssh_public_key=config.ssh_public_key,
            users=config.users,
            ssh_allowed_cidrs=config.ssh_allowed_cidrs,
            shared_claim=storage.claim_name,
            accounting_host=accounting.address,
            accounting_password_secret=accounting.password_secret,
            scheduling=config.scheduling,
            metrics=config.metrics,
            partition_topologies=topology.partition_topologies(placements),
            depends_on=storage.namespace_ready,
            state_depends_on=storage.gp3_ready,
            release_depends_on=[
                *(writer.ready if writer else []),
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
        opts(),
    )
    # After the first install and every change to a pool's NodeSet: the operator's rollout finished and
    # every node of the pool taking jobs, or `up` fails saying which node is stuck and why.
    SlurmReadiness(
        f"{prefix}slurm-ready",
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
        opts(),
    )
    # Every account and user in Slurm's accounting, registered again on every up that changes `users`
    # (a user removed from `users` loses their association; their jobs stay in sacct).
    AccountingRegistration(
        f"{prefix}accounts",
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
        opts(),
    )
    # The jobs and their environment onto /shared, refreshed on every up that changes them, and a
    # work directory for root and each named user.
    JobStaging(
        f"{prefix}jobs",
        JobStagingArgs(
            cluster=context,
            gpu_pools=config.gpu_pools,
            users=config.users,
            namespace=SLURM_NAMESPACE,
            shared_claim=storage.claim_name,
            depends_on=[*storage.ready, *nodes.core_ready],
        ),
        opts(),
    )
    # The GPU exporter: on the GPU nodes once their devices are advertised; nothing waits for it.
    if config.metrics:
        DcgmExporter(
            f"{prefix}dcgm",
            DcgmExporterArgs(
                cluster=context,
                counters=metrics_model.DCGM_COUNTERS_FILE.read_text(),
                depends_on=[*nodes.gpu_ready, *(devices.ready if devices else [])],
            ),
            opts(),
        )
    # The metrics store needs only the cluster (AMP makes the scraper's access entry as it creates it) and
    # the VPC: it comes up beside the nodes and the add-ons, and finds the exporters as they start.
    metrics = (
        MetricsStore(
            f"{prefix}metrics",
            MetricsStoreArgs(
                cluster=context,
                private_subnet_ids=network.private_subnet_ids,
                retention_days=config.metrics_retention_days,
                scrape_configuration=metrics_model.scrape_configuration(),
                rule_namespaces=rule_namespaces(metrics_model.ALERTS_DIR),
                alert_emails=config.alert_emails,
                depends_on=args.depends_on,
            ),
            opts(),
        )
        if config.metrics
        else None
    )
    # The dashboards, in the cluster on the core nodes, over the store's workspace (read with the pod's
    # own role: Pod Identity); reached through an SSH tunnel via the login node, no endpoint of its own
    # (docs/grafana.md).
    grafana = (
        Grafana(
            f"{prefix}grafana",
            GrafanaArgs(
                cluster=context,
                query_endpoint=metrics.query_endpoint,
                workspace_arn=metrics.workspace_arn,
                depends_on=nodes.core_ready,
            ),
            opts(),
        )
        if metrics is not None
        else None
    )
    # The pools' scalers: KEDA sizes each autoscaling pool's NodeSet from its partition's pending work,
    # read from the metrics store (docs/scaling.md); the config rules refuse an autoscaling pool
    # without metrics, so `metrics` is set wherever a pool autoscales.
    if autoscaling_pools and metrics is not None:
        PoolAutoscaling(
            f"{prefix}keda",
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
            opts(),
        )
    return SlurmLayerParts(image, nodes, storage, accounting, slurm, metrics, grafana)


def _in_region(cluster: ClusterContext, region: str) -> ClusterContext:
    """The cluster, refused where its ARN names another region than aws:region
    (model/checks/existing_cluster.py cluster_region): at once for an ARN the caller knows, else
    as the ARN resolves, through the ARN every Pod Identity role's trust reads, so no such role is
    created for a cluster elsewhere."""

    def checked(arn: str) -> str:
        problems = existing_cluster.cluster_region(arn, region)
        if problems:
            raise ConfigError([p.render(PROJECT) for p in problems])
        return arn

    if isinstance(cluster.arn, str):
        checked(cluster.arn)
        return cluster
    return dataclasses.replace(cluster, arn=pulumi.Output.from_input(cluster.arn).apply(checked))


class SlurmLayer(pulumi.ComponentResource):
    """The Slurm layer as one component: `SlurmLayer("slurm", SlurmLayerArgs(...))` in a program
    that declares its own cluster (examples/own-cluster/__main__.py)."""

    parts: SlurmLayerParts  # the layer's components, each a child of this one
    slurmd_image: pulumi.Output[str]  # the slurmd image the GPU nodes run, by digest
    login_hostname: pulumi.Output[str]  # the login node's load balancer's DNS name
    ssh_command: pulumi.Output[str]  # `ssh <user>@<login_hostname>`
    shared_file_system_id: pulumi.Output[str]  # the EFS file system mounted at /shared
    accounting_endpoint: pulumi.Output[str]  # the accounting database's <host>:<port>
    # The metrics store's query endpoint; None when settings.metrics is off.
    metrics_query_endpoint: Optional[pulumi.Output[str]]
    # What waits for Slurm to take jobs: the Slurm release and its login node.
    ready: list[pulumi.Resource]

    def __init__(self, name: str, args: SlurmLayerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:slurm:SlurmLayer", name, None, opts)
        self.parts = declare_slurm_layer(args, parent=self, prefix=f"{name}-")
        self.slurmd_image = self.parts.image.reference
        self.login_hostname = self.parts.slurm.login_hostname
        self.ssh_command = self.parts.slurm.ssh_command
        self.shared_file_system_id = self.parts.storage.file_system_id
        self.accounting_endpoint = pulumi.Output.concat(
            self.parts.accounting.address, ":", self.parts.accounting.port.apply(str)
        )
        self.metrics_query_endpoint = (
            None if self.parts.metrics is None else self.parts.metrics.query_endpoint
        )
        self.ready = list(self.parts.slurm.ready)
        self.register_outputs(
            {
                "slurmd_image": self.slurmd_image,
                "login_hostname": self.login_hostname,
                "ssh_command": self.ssh_command,
                "shared_file_system_id": self.shared_file_system_id,
                "accounting_endpoint": self.accounting_endpoint,
            }
        )
