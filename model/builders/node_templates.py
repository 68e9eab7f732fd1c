"""How a node group is sized, and what cluster-autoscaler must be told about an autoscaled GPU
pool's nodes before one exists. Pure: components/node_groups.py applies it.

The tags are cluster-autoscaler's node-template tags on the Auto Scaling group (kubernetes/autoscaler
cluster-autoscaler/cloudprovider/aws/README.md at cluster-autoscaler-1.36.1, "Auto-Discovery Setup"
and "Scaling a node group to 0"; read by cloudprovider/aws/aws_manager.go buildNodeFromTemplate):
- label/<name> = <value> for each node label a pending pod selects on;
- taint/<key> = <value>:<effect> for each taint;
- resources/<name> = <quantity>, the whole suffix being the resource name (so one with a '/' works:
  extractAllocatableResourcesFromAsg parses the value with resource.ParseQuantity). CA's built-in
  instance table (cloudprovider/aws/ec2_instance_types.go) knows CPUs, memory and GPUs but not EFA,
  and a slurmd pod requests every EFA interface of its node (model/builders/slurm_values.py gpu_resources).
"""

from __future__ import annotations

from dataclasses import dataclass

from model.checks.gpu_pools import GpuPool
from model.facts.contract import EFA_RESOURCE, GPU_RESOURCE, GPU_TAINT

TEMPLATE = "k8s.io/cluster-autoscaler/node-template"


@dataclass(frozen=True)
class NodeGroupSize:
    """A managed node group's scaling config, and whether the desired size is cluster-autoscaler's."""

    minimum: int
    maximum: int
    desired: int
    autoscaled: bool = False

    @classmethod
    def fixed(cls, count: int) -> "NodeGroupSize":
        return cls(count, count, count)

    @classmethod
    def of_pool(cls, pool: GpuPool) -> "NodeGroupSize":
        """A fixed pool at node_count; an autoscaling one between its bounds, created at minNodes."""
        if not pool.autoscales:
            return cls.fixed(pool.node_count)
        return cls(pool.min_nodes, pool.max_nodes, pool.initial_nodes, autoscaled=True)


def node_template_tags(pool: GpuPool, labels: dict[str, str]) -> dict[str, str]:
    """The node-template tags of a pool's group: its nodes' labels, the GPU taint, and the GPUs and
    EFA interfaces each node offers."""
    tags = {f"{TEMPLATE}/label/{name}": value for name, value in labels.items()}
    tags[f"{TEMPLATE}/taint/{GPU_TAINT.key}"] = f"{GPU_TAINT.value}:{GPU_TAINT.effect}"
    tags[f"{TEMPLATE}/resources/{GPU_RESOURCE}"] = str(pool.gpu.gpus)
    tags[f"{TEMPLATE}/resources/{EFA_RESOURCE}"] = str(pool.gpu.efa_interfaces)
    return tags
