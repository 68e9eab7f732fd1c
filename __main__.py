"""slinky-eks: an empty AWS account to a GPU Slurm cluster on EKS, in one `pulumi up`."""
import functools

import pulumi
import pulumi_aws as aws

from components import stack_config
from components.cluster import Cluster, ClusterArgs
from components.network import Network, NetworkArgs
from components.node_groups import NodeGroups, NodeGroupsArgs


@functools.cache
def region_zones(region: str) -> list[str] | None:
    try:
        return sorted(aws.get_availability_zones(state="available", region=region).names)
    except Exception:
        return None


config = stack_config.load(region_zones)
# EKS needs two AZs; the GPU AZ comes first (it holds the NAT gateway and the EFA subnet).
zones = [config.availability_zone] + [
    z for z in region_zones(config.region) if z != config.availability_zone][:1]

network = Network("network", NetworkArgs(cidr=config.vpc_cidr, zones=zones,
                                         cluster_name=config.cluster_name))
cluster = Cluster("cluster", ClusterArgs(
    cluster_name=config.cluster_name, kubernetes_version=config.kubernetes_version,
    vpc_id=network.vpc_id, private_subnet_ids=network.private_subnet_ids,
    public_subnet_ids=network.public_subnet_ids, admin_role_arns=config.admin_role_arns))
nodes = NodeGroups("nodes", NodeGroupsArgs(
    cluster_name=config.cluster_name, cluster_ready=cluster.ready,
    cluster_security_group_id=cluster.security_group_id,
    private_subnet_ids=network.private_subnet_ids, gpu_subnet_id=network.gpu_subnet_id,
    gpu=config.gpu, gpu_node_count=config.gpu_node_count,
    gpu_root_volume_gib=config.gpu_root_volume_gib,
    core_instance_type=config.core_instance_type, core_node_count=config.core_node_count))

pulumi.export("clusterName", config.cluster_name)
pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export("region", config.region)
pulumi.export("vpcId", network.vpc_id)
pulumi.export("gpuAvailabilityZone", config.availability_zone)
