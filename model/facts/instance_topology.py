"""Which instance types EC2 tells the network place of, and how EKS hands that place to a node.

Sources, cited below by tag:
  T1 Amazon EC2 User Guide, "Prerequisites for Amazon EC2 topology", Instance types:
     https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-topology-prerequisites.html
     (the types DescribeInstanceTopology answers for, grouped by how many network nodes it returns)
  T2 Amazon EC2 User Guide, "How Amazon EC2 topology works":
     https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/how-ec2-instance-topology-works.html
     (the node set is listed top-down, the bottom node connected to the instance; 3 or 4 layers)
  T3 Amazon EC2 API Reference, DescribeInstanceTopology:
     https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceTopology.html
     and the Service Authorization Reference for Amazon EC2
     (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html):
     the action names no resource type, so a policy can grant it only on "*"
  K1 the labels the AWS cloud controller manager (kubernetes/cloud-provider-aws, which EKS runs)
     sets on a node of a covered type when it initialises it, from DescribeInstanceTopology's
     NetworkNodes in order: topology.k8s.aws/network-node-layer-1 (the top of the hierarchy)
     to -3; its e2e conformance test reads the three on p3dn.24xlarge nodes
"""

from __future__ import annotations

# The GPU types of model/facts/catalog.py that T1 lists among those answering with three network
# nodes. Of the catalog, T1 lists the g6e and g7e sizes, p4d/p4de and the p5 family's
# 48xlarge sizes. The g6 sizes (the dev stack's g6.12xlarge) and g5 are not listed: their pools
# stay as they are today, without a place. p6-b200.48xlarge answers with four network nodes (the
# AWS CLI reference, `aws ec2 describe-instance-topology`, "Returns 4 network nodes in the
# response"), so its bottom node is not among the three labels read here: left flat until the
# writer reads a fourth layer. p5.4xlarge and p6-b300 are left out until a list is read that names
# them: a type missing here only costs placement, one wrongly here would put a partition on a tree
# whose nodes never get a place and so refuse multi-node jobs.
COVERED_TYPES = frozenset(
    {
        "g6e.8xlarge",
        "g6e.12xlarge",
        "g6e.16xlarge",
        "g6e.24xlarge",
        "g6e.48xlarge",
        "g7e.8xlarge",
        "g7e.12xlarge",
        "g7e.24xlarge",
        "g7e.48xlarge",
        "p4d.24xlarge",
        "p4de.24xlarge",
        "p5.48xlarge",
        "p5e.48xlarge",
        "p5en.48xlarge",
    }
)

# The node labels EKS copies a node's network nodes to, top layer first (K1, T2).
NETWORK_NODE_LABELS = (
    "topology.k8s.aws/network-node-layer-1",
    "topology.k8s.aws/network-node-layer-2",
    "topology.k8s.aws/network-node-layer-3",
)

# The one IAM action the topology reads EC2 through (T3); it takes no resource, so "*".
DESCRIBE_ACTION = "ec2:DescribeInstanceTopology"


def is_covered(instance_type: str) -> bool:
    """Whether EC2's topology API (and so EKS's network-node labels) covers the type (T1)."""
    return instance_type in COVERED_TYPES
