"""The nodes: a CPU "core" group for Slurm's control plane and the cluster's controllers, and per
GPU pool an EFA GPU group in the pool's AZ and its own cluster placement group (a reserved pool's:
the one its reservation was created in, if any), tainted so only
GPU work lands there. Every group repairs itself: EKS node auto repair replaces a node whose
health the node monitoring agent reports bad (model/builders/node_repair.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import pulumi
import pulumi_aws as aws

from components.cluster import ClusterContext
from model.builders import node_repair
from model.builders.node_repair import RepairPolicy
from model.builders.node_templates import TEMPLATE, NodeGroupSize, gpu_user_data, node_template_tags
from model.builders.stack_placement import StackPlacement
from model.checks.gpu_pools import GpuPool, pool_labels
from model.facts import versions
from model.facts.capacity import Reservation
from model.facts.catalog import GPU_AMI_TYPE
from model.facts.contract import CNI_POLICY, CORE_LABELS, GPU_LABELS, GPU_TAINT

# What the node role carries: what the kubelet needs to join and the Pod Identity agent to hand
# out credentials (eks-auth:AssumeRoleForPodIdentity), and image pulls (image_pull_policy). The
# VPC CNI's permissions are its own role's (components/cluster.py, model/facts/contract.py CNI_POLICY); no SSM: a shell on
# a node is `kubectl debug node/...`, for cluster admins only (docs/security.md).
_NODE_POLICIES = ("arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",)
# The pull actions of the AWS-managed AmazonEC2ContainerRegistryPullOnly policy, what the kubelet's
# ECR credential provider and containerd use (AWS managed policy reference,
# https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AmazonEC2ContainerRegistryPullOnly.html),
# without its `Resource: "*"`.
_PULL_ACTIONS = ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]


def image_pull_policy(repository_arn: str) -> str:
    """Pulls from the stack's slurmd repository, and from no other repository of this account:
    AmazonEC2ContainerRegistryReadOnly would let root on any node (a job in the privileged slurmd)
    read every image in the account's registries. Images of other accounts stay pullable: the EKS
    add-ons' and the EFA device plugin's come from AWS-owned registries whose account depends on
    the region (EKS user guide, "View Amazon container image registries for Amazon EKS add-ons":
    https://docs.aws.amazon.com/eks/latest/userguide/add-ons-images.html; the device plugin
    chart pulls from 602401143452's us-west-2 registry in every region: aws/eks-charts
    stable/aws-efa-k8s-device-plugin v0.5.30 values.yaml), so they are named by what they are not;
    whether one pulls is then up to its repository's policy. GetAuthorizationToken names no
    resource (Service Authorization Reference, Amazon ECR:
    https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonelasticcontainerregistry.html)."""
    account = repository_arn.split(":")[4]
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Action": "ecr:GetAuthorizationToken", "Resource": "*"},
                {"Effect": "Allow", "Action": _PULL_ACTIONS, "Resource": repository_arn},
                {
                    "Effect": "Allow",
                    "Action": _PULL_ACTIONS,
                    "NotResource": f"arn:aws:ecr:*:{account}:repository/*",
                },
            ],
        }
    )


@dataclass(frozen=True)
class NodeGroupsArgs:
    """Every field is required (no defaults)."""

    # The EKS cluster it is part of (ClusterContext), for its name and its security group.
    cluster: ClusterContext
    # The slurmd image's repository (SlurmdImage.repository_arn): the one repository of the account
    # the nodes may pull from.
    image_repository_arn: pulumi.Input[str]
    # What the node groups wait for: the control plane and what it needs (Cluster.ready).
    depends_on: Sequence[pulumi.Resource]
    # The cluster's two zones' private subnets (Network.private_subnet_ids): the core group's, and
    # only these, so a pool AZ added later leaves the core group's subnets as they are (a managed
    # node group's subnets cannot be changed in place: aws/containers-roadmap issue #1338).
    private_subnet_ids: Sequence[pulumi.Input[str]]
    # The private subnet of each AZ (Network.private_subnet_by_zone): each pool gets its AZ's.
    private_subnet_by_zone: Mapping[str, pulumi.Input[str]]
    # One GPU node group each (StackConfig.gpu_pools: at least one).
    gpu_pools: Sequence[GpuPool]
    # The core group's instance type (coreInstanceType).
    core_instance_type: str
    # The core group's fixed size (coreNodeCount).
    core_node_count: int
    # The pools' capacity reservations as EC2 described them at preview, by id
    # (StackConfig.reservations): whether a pool's is a Capacity Block decides its capacity type.
    reservations: Mapping[str, Reservation]
    # Whether the cluster is the stack's own, so it adopts CoreDNS and installs the node monitoring
    # agent as EKS add-ons; an existing cluster's add-ons are its owner's, which the stack's
    # `destroy` must not delete (components/existing_cluster.py).
    owns_cluster_addons: bool
    # Whether aws-node runs on the node role's permissions: in an existing cluster whose vpc-cni
    # add-on has no role of its own (ExistingCluster's EksCluster.cni_role_arn), the node role needs
    # the CNI policy, or the stack's nodes get no pod addresses; in the stack's own cluster the CNI
    # has its own role (components/cluster.py).
    node_role_runs_cni: bool
    # The VPC the nodes run in (Network.vpc_id): where their own security group goes, if any.
    vpc_id: pulumi.Input[str]
    # Whether the nodes get a security group of the stack's beside the cluster security group: in
    # an existing cluster, where EKS attaches the cluster security group to every managed node
    # group's nodes, the platform's and other tenants' too, so a rule that admits it admits them
    # all (EKS user guide, "View Amazon EKS security group requirements for clusters":
    # https://docs.aws.amazon.com/eks/latest/userguide/sec-group-reqs.html). The accounting
    # database and the NFS mount targets admit this group instead.
    own_security_group: bool
    # In a cluster the stack shares (existingClusterName): its nodes' own label and the core nodes'
    # taint (model/builders/stack_placement.py); None in the stack's own cluster.
    placement: Optional[StackPlacement]
    # Whether the stack makes the node role's EC2_LINUX access entry itself: in an existing cluster
    # that reads access entries (not CONFIG_MAP only). EKS makes one for a managed node group's
    # role where none exists, but never deletes it, so after `destroy` it would stay in the
    # owner's cluster, naming a deleted role ("If you ever delete the IAM principal with this ARN,
    # the access entry isn't automatically deleted": EKS user guide, "Create access entries",
    # https://docs.aws.amazon.com/eks/latest/userguide/creating-access-entries.html). Made first,
    # EKS uses it (every node group of the stack shares the one role), and `destroy` deletes it
    # after the node groups.
    node_access_entry: bool


# IMDSv2 with a hop limit of 1, so a pod on the pod network cannot take the node role; what on
# these nodes reads IMDS, and why one hop is enough for each: docs/decisions/imds-hop-limit.md.
IMDS_HOP_LIMIT = 1


def _metadata_options() -> aws.ec2.LaunchTemplateMetadataOptionsArgs:
    return aws.ec2.LaunchTemplateMetadataOptionsArgs(
        http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=IMDS_HOP_LIMIT
    )


def _root_volume(size_gib: int, iops: int, throughput: int) -> aws.ec2.LaunchTemplateBlockDeviceMappingArgs:
    # /dev/xvda is the AL2023 AMIs' root device.
    return aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
        device_name="/dev/xvda",
        ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
            volume_size=size_gib,
            volume_type="gp3",
            iops=iops,
            throughput=throughput,
            encrypted="true",
            delete_on_termination="true",
        ),
    )


# The managed node group capacity type of a Capacity Block (EKS user guide, "Create a managed node
# group with Capacity Blocks for ML": "Set the capacity-type to "CAPACITY_BLOCK"", or EKS rejects
# the create request; awsdocs/amazon-eks-user-guide latest/ug/nodes/capacity-blocks-mng.adoc).
CAPACITY_BLOCK = "CAPACITY_BLOCK"


def _reserved_capacity(pool: GpuPool, reservation: Reservation | None) -> dict:
    """The launch template fields that put a pool's nodes into its reservation: the capacity
    reservation target (an ODCR's or a block's id). A Capacity Block's template also needs the
    market type `capacity-block` and its instance type (the same EKS user guide page:
    InstanceMarketOptions.MarketType "capacity-block", CapacityReservationSpecification.
    CapacityReservationTarget.CapacityReservationId, InstanceType). Nothing for a pool without one:
    its template stays as it was."""
    if not pool.capacity_reservation_id:
        return {}
    fields = {
        "capacity_reservation_specification": aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
            capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                capacity_reservation_id=pool.capacity_reservation_id
            )
        )
    }
    if reservation is not None and reservation.is_capacity_block:
        fields.update(
            instance_market_options=aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(
                market_type="capacity-block"
            ),
            instance_type=pool.gpu.name,
        )
    return fields


class NodeGroups(pulumi.ComponentResource):
    core: aws.eks.NodeGroup  # the CPU nodes: Slurm's control plane and the controllers
    role_name: pulumi.Output[str]  # the role every node runs as (its id is its name)
    role_arn: pulumi.Output[str]  # the same role's ARN, known before any node group exists
    gpu: dict[str, aws.eks.NodeGroup]  # by pool name
    coredns: aws.eks.Addon | None  # CoreDNS adopted as a managed add-on, in the stack's own cluster
    # The node monitoring agent add-on: the node conditions auto repair acts on
    monitoring_agent: aws.eks.Addon | None
    # The security group that marks the stack's nodes: their own in an existing cluster
    # (NodeGroupsArgs.own_security_group), else the cluster security group, which only they carry.
    security_group_id: pulumi.Output[str]
    # What in-cluster installs wait for (depending on nodes also deletes the installs first):
    # system pods need the core nodes,
    core_ready: list[pulumi.Resource]
    # GPU DaemonSets the GPU nodes of every pool.
    gpu_ready: list[pulumi.Resource]

    def __init__(self, name: str, args: NodeGroupsArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:nodes:NodeGroups", name, None, opts)
        self._name, self._args = name, args
        role = self._node_role()
        own = self._own_security_group() if args.own_security_group else None
        self.security_group_id = (
            own.id if own is not None else pulumi.Output.from_input(args.cluster.security_group_id)
        )
        # The groups a launch template names, where it names any: naming one replaces the cluster
        # security group EKS would attach, so the cluster's comes first (EKS user guide, "Customize
        # managed nodes with launch templates":
        # https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html).
        self._security_groups = [args.cluster.security_group_id, *([own.id] if own is not None else [])]
        self.role_name = role.id
        self.role_arn = role.arn
        self.core = self._core_group(role)
        self.gpu = {pool.name: self._gpu_pool_group(pool, role) for pool in args.gpu_pools}
        self.coredns = self._coredns() if args.owns_cluster_addons else None
        self.monitoring_agent = self._monitoring_agent() if args.owns_cluster_addons else None
        self.core_ready = [self.core]
        self.gpu_ready = list(self.gpu.values())
        self.register_outputs({"core": self.core.id, "gpu": {pool: g.id for pool, g in self.gpu.items()}})

    def _own_security_group(self) -> aws.ec2.SecurityGroup:
        """A group with no rule: it only names the stack's nodes as a source (the cluster security
        group beside it carries their traffic; the provider removes AWS's default egress rule, and
        an instance's groups' rules add up)."""
        return aws.ec2.SecurityGroup(
            f"{self._name}-sg",
            vpc_id=self._args.vpc_id,
            description="The Slurm stack's nodes: the source its database and NFS admit",
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _node_role(self) -> aws.iam.Role:
        """The role every node runs as; its policy attachments (self._attachments) are what
        every node group waits for besides the control plane."""
        child = pulumi.ResourceOptions(parent=self)
        role = aws.iam.Role(
            f"{self._name}-node-role",
            assume_role_policy=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "ec2.amazonaws.com"},
                            "Action": "sts:AssumeRole",
                        }
                    ],
                }
            ),
            opts=child,
        )
        self._attachments = [
            aws.iam.RolePolicyAttachment(
                f"{self._name}-node-policy-{i}", role=role.id, policy_arn=arn, opts=child
            )
            for i, arn in enumerate(_NODE_POLICIES + ((CNI_POLICY,) if self._args.node_role_runs_cni else ()))
        ]
        self._attachments.append(
            aws.iam.RolePolicy(
                f"{self._name}-node-images",
                role=role.id,
                policy=pulumi.Output.from_input(self._args.image_repository_arn).apply(image_pull_policy),
                opts=child,
            )
        )
        if self._args.node_access_entry:
            self._attachments.append(
                aws.eks.AccessEntry(
                    f"{self._name}-access-entry",
                    cluster_name=self._args.cluster.name,
                    principal_arn=role.arn,
                    type="EC2_LINUX",
                    opts=child,
                )
            )
        return role

    def _node_group(
        self,
        suffix: str,
        role: aws.iam.Role,
        subnets,
        instance_type: str,
        ami_type: str,
        labels: dict,
        size: NodeGroupSize,
        template: aws.ec2.LaunchTemplate,
        repair: RepairPolicy,
        update_strategy: str = "DEFAULT",
        capacity_type: str = "ON_DEMAND",
        **extra,
    ) -> aws.eks.NodeGroup:
        """A fixed size (min = max = desired) or, autoscaled, the pool's bounds with the desired
        size left to cluster-autoscaler after creation; one node replaced at a time on updates, a
        broken node replaced as `repair` says; created once the control plane is up and the role
        has its policies. A Capacity Block's launch template names the instance type itself, and
        EKS takes it from one place only (the EKS user guide, "Customize managed nodes with launch
        templates": an instance type in the launch template or in the node group, not both), so
        such a group names none."""
        args = self._args
        # An `up` that set the desired size of an autoscaled group would undo cluster-autoscaler's
        # work: a smaller size makes the Auto Scaling group terminate instances it picks itself.
        ignore = ["scalingConfig.desiredSize"] if size.autoscaled else None
        return aws.eks.NodeGroup(
            f"{self._name}-{suffix}",
            cluster_name=args.cluster.name,
            node_role_arn=role.arn,
            subnet_ids=subnets,
            instance_types=None if capacity_type == CAPACITY_BLOCK else [instance_type],
            ami_type=ami_type,
            capacity_type=capacity_type,
            labels=labels,
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=size.minimum, max_size=size.maximum, desired_size=size.desired
            ),
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=template.id, version=template.latest_version.apply(str)
            ),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(
                max_unavailable=1, update_strategy=update_strategy
            ),
            node_repair_config=aws.eks.NodeGroupNodeRepairConfigArgs(
                enabled=repair.enabled,
                max_parallel_nodes_repaired_count=repair.max_parallel_nodes_repaired_count,
            ),
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[*args.depends_on, *self._attachments], ignore_changes=ignore
            ),
            **extra,
        )

    def _core_group(self, role: aws.iam.Role) -> aws.eks.NodeGroup:
        args = self._args
        core_lt = aws.ec2.LaunchTemplate(
            f"{self._name}-core-lt",
            metadata_options=_metadata_options(),
            block_device_mappings=[_root_volume(100, 3000, 125)],
            vpc_security_group_ids=self._security_groups if args.own_security_group else None,
            update_default_version=True,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return self._node_group(
            "core",
            role,
            list(args.private_subnet_ids),
            args.core_instance_type,
            "AL2023_x86_64_STANDARD",
            {**CORE_LABELS, **(args.placement.labels if args.placement else {})},
            NodeGroupSize.fixed(args.core_node_count),
            core_lt,
            node_repair.CORE_REPAIR,
            **(
                {"taints": [aws.eks.NodeGroupTaintArgs(**args.placement.core_taint.node_group)]}
                if args.placement
                else {}
            ),
        )

    def _gpu_pool_group(self, pool: GpuPool, role: aws.iam.Role) -> aws.eks.NodeGroup:
        args, child = self._args, pulumi.ResourceOptions(parent=self)
        group = f"{self._name}-{pool.resource_suffix}"
        reservation = args.reservations.get(pool.capacity_reservation_id)
        gpu_lt = aws.ec2.LaunchTemplate(
            f"{group}-lt",
            metadata_options=_metadata_options(),
            # The slurmd image is many GB: a large gp3 root with raised throughput unpacks it
            # in minutes instead of tens of minutes at gp3's 125 MiB/s baseline.
            block_device_mappings=[_root_volume(pool.root_volume_gib, 6000, 500)],
            # One interface per network card as the catalog says; interfaces that name
            # security groups replace the cluster SG EKS would attach, so name it
            # (https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html).
            # Managed node groups forbid SubnetId here: the subnet is the node group's.
            network_interfaces=[
                aws.ec2.LaunchTemplateNetworkInterfaceArgs(**iface, security_groups=self._security_groups)
                for iface in pool.gpu.network_interfaces
            ],
            placement=self._placement(group, pool, reservation),
            # The instance store as one RAID0 volume under the kubelet and containerd, where the
            # type has NVMe instance store (model/builders/node_templates.py gpu_user_data).
            user_data=gpu_user_data(pool.gpu),
            update_default_version=True,
            opts=child,
            **_reserved_capacity(pool, reservation),
        )
        # Exactly one subnet, in the pool's AZ: EFA does not cross AZs.
        # MINIMAL: an update terminates a node before launching its replacement. The DEFAULT
        # strategy launches first, which a full cluster placement group or a GPU quota sized
        # for the pool refuses, and which bills an extra GPU node meanwhile (EKS API
        # reference, NodegroupUpdateConfig.updateStrategy: "for example ... GPUs",
        # https://docs.aws.amazon.com/eks/latest/APIReference/API_NodegroupUpdateConfig.html).
        labels = {
            **GPU_LABELS,
            **pool_labels(pool, args.gpu_pools),
            **(args.placement.labels if args.placement else {}),
        }
        node_group = self._node_group(
            pool.resource_suffix,
            role,
            [args.private_subnet_by_zone[pool.availability_zone]],
            pool.gpu.name,
            GPU_AMI_TYPE,
            labels,
            NodeGroupSize.of_pool(pool),
            gpu_lt,
            node_repair.GPU_REPAIR,
            update_strategy="MINIMAL",
            capacity_type=CAPACITY_BLOCK if reservation and reservation.is_capacity_block else "ON_DEMAND",
            taints=[aws.eks.NodeGroupTaintArgs(**GPU_TAINT.node_group)],
        )
        if pool.autoscales:
            self._node_template_tags(group, node_group, pool, labels)
        return node_group

    def _placement(
        self, group: str, pool: GpuPool, reservation: Reservation | None
    ) -> aws.ec2.LaunchTemplatePlacementArgs | None:
        """The cluster placement group the pool's nodes launch in. EFA wants every node of a job
        in one cluster placement group in one AZ (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html,
        limitations): one group per pool, so EFA traffic stays within a pool.

        A reserved pool launches where its reservation holds the capacity instead: in the group
        the reservation was created in, or in none. A reservation made outside a group can never
        be moved into one (EC2 User Guide, "Use Capacity Reservations with cluster placement
        groups", Limitations: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/cr-cpg.html),
        so a new group of the stack's holds none of it, and its nodes would be placed by the
        group rather than by the reservation (preflight warns when there is no group)."""
        if pool.capacity_reservation_id:
            name = reservation.placement_group_name if reservation is not None else ""
            return aws.ec2.LaunchTemplatePlacementArgs(group_name=name) if name else None
        placement = aws.ec2.PlacementGroup(
            f"{group}-pg", strategy="cluster", opts=pulumi.ResourceOptions(parent=self)
        )
        return aws.ec2.LaunchTemplatePlacementArgs(group_name=placement.name)

    def _node_template_tags(
        self, group: str, node_group: aws.eks.NodeGroup, pool: GpuPool, labels: dict[str, str]
    ) -> None:
        """What cluster-autoscaler needs to scale the pool's group up from zero nodes, as tags on
        the Auto Scaling group EKS made for it (node_templates.node_template_tags): the group's
        own tags are not copied to its Auto Scaling group, and CA asks EKS for a managed group's
        labels and taints only while it has never had a node (kubernetes/autoscaler
        cluster-autoscaler/cloudprovider/aws/README.md at cluster-autoscaler-1.36.1, "eks:DescribeNodegroup")."""
        asg = node_group.resources.apply(lambda rs: rs[0].autoscaling_groups[0].name)
        for key, value in sorted(node_template_tags(pool, labels).items()):
            # Named by the tag, so a label added later (a second pool's) adds one tag and moves none.
            slug = key.removeprefix(f"{TEMPLATE}/").replace("/", "-").replace(".", "-")
            aws.autoscaling.Tag(
                f"{group}-template-{slug}",
                autoscaling_group_name=asg,
                # Not propagated: the kubelet sets the labels and the taint on the node itself
                # (the node group's labels and taints); the tags only describe it to CA.
                tag=aws.autoscaling.TagTagArgs(key=key, value=value, propagate_at_launch=False),
                opts=pulumi.ResourceOptions(parent=self),
            )

    def _coredns(self) -> aws.eks.Addon:
        # The bootstrapped CoreDNS adopted as a managed add-on once the core nodes can run it;
        # nothing waits for it, and `preserve` keeps DNS serving through destroy
        # (docs/decisions/coredns-adoption.md).
        return aws.eks.Addon(
            f"{self._name}-coredns",
            cluster_name=self._args.cluster.name,
            addon_name="coredns",
            resolve_conflicts_on_create="OVERWRITE",
            preserve=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.core]),
        )

    def _monitoring_agent(self) -> aws.eks.Addon:
        # A DaemonSet, ACTIVE with no nodes yet (like eks-pod-identity-agent), so it installs with
        # the control plane and its pods start on each node as the node joins: a node is watched
        # from its first minute. Nothing waits for it; the node groups' repair works without it,
        # on the kubelet's Ready alone, until it runs (model/builders/node_repair.py).
        return aws.eks.Addon(
            f"{self._name}-monitoring-agent",
            cluster_name=self._args.cluster.name,
            addon_name=node_repair.MONITORING_AGENT_ADDON,
            addon_version=versions.NODE_MONITORING_AGENT_VERSION,
            configuration_values=node_repair.monitoring_agent_configuration(),
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(self._args.depends_on)),
        )
