"""The login Service's load balancer annotations (aws-load-balancer-controller's Service annotations:
https://kubernetes-sigs.github.io/aws-load-balancer-controller/v2.17/guide/service/annotations/).

How the controller picks an NLB's subnets (aws-load-balancer-controller v3.5.0,
pkg/networking/subnet_resolver.go): without the subnets annotation it discovers them, listing
every subnet of the cluster's VPC tagged kubernetes.io/role/elb (internet-facing) or
kubernetes.io/role/internal-elb (internal), whoever's they are (listSubnetsByTagFilters filters by
VPC and tag only); finding none, it falls back to the VPC's subnets whose route table does (public)
or does not (internal) send traffic to an internet gateway (listSubnetsByReachability); of those it
drops subnets tagged kubernetes.io/cluster/<another cluster> only
(isSubnetContainsEligibleClusterTag) and keeps one per AZ. In a VPC the stack creates, its subnets
carry those tags (components/network.py). In a VPC it is given, the subnets are another team's:
the stack tags none of them, and discovery would range over every subnet of the VPC, the other
teams' included. So there the Service names its subnets, one per AZ (the annotation's subnets are
validated to be one per AZ: validateSubnetsAZExclusivity), and the controller discovers nothing
(docs/decisions/existing-vpc.md).
"""

from __future__ import annotations

from typing import Sequence

SCHEME = "service.beta.kubernetes.io/aws-load-balancer-scheme"
SUBNETS = "service.beta.kubernetes.io/aws-load-balancer-subnets"
INTERNET_FACING, INTERNAL = "internet-facing", "internal"


def annotations(subnet_ids: Sequence[str], internal: bool) -> dict[str, str]:
    """The login NLB's: an NLB by the controller with the login pod's IP as target, internet-facing
    unless `internal` (a given VPC with no public subnet: then reachable only from inside the VPC
    and the networks routed to it), in `subnet_ids` where given (else discovered)."""
    out = {
        "service.beta.kubernetes.io/aws-load-balancer-type": "external",
        SCHEME: INTERNAL if internal else INTERNET_FACING,
        # Targets are the login pod's IP: no NodePort on every node.
        "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
    }
    if subnet_ids:
        out[SUBNETS] = ",".join(subnet_ids)
    return out
