"""The AWS Load Balancer Controller's IAM policy for the Network Load Balancers of Services.

The controller's own policy for the pinned version (kubernetes-sigs/aws-load-balancer-controller,
docs/install/iam_policy.json at v3.5.0, byte-identical to v2.17.1's), less the actions only
Ingresses (Application Load Balancers) use, with its writes on any security group and any
listener narrowed to this stack's:
- security group rules change only on groups in this VPC (ec2:Vpc), which holds both groups the
  controller edits: the load balancer's own and the nodes' (the EKS cluster security group);
- security groups are created only in this VPC, tagged with the cluster tag, and deleted only
  in this VPC while they carry it;
- listeners are created only on load balancers of this account and region that carry the tag,
  and changed or deleted only while they carry it themselves.
Load balancers and target groups are fenced by the `elbv2.k8s.aws/cluster` tag as upstream: created
only with it, changed and deleted only while they carry it, in any VPC of the account (the
subnet and security-group condition keys of CreateLoadBalancer would need their IDs, which the
controller chooses). What stays as upstream, unscoped:
the reads (Describe*, acm and iam certificate lookups: read-only, "*" where the actions take no
resource), the service-linked role and registering targets in any target group of the account.
Listeners are tagged only at their creation, with the cluster tag, or while they carry it (upstream
tags any listener: the role could then tag a listener to pass the conditions on deleting it).
tests/graph/test_load_balancer_policy.py compares it statement by statement with the upstream file.

What each write authorizes on, and the condition keys it takes: Service Authorization Reference,
Amazon EC2 (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html:
CreateSecurityGroup on security-group and vpc; AuthorizeSecurityGroupIngress, RevokeSecurityGroupIngress
and DeleteSecurityGroup on security-group, whose condition keys include ec2:Vpc, the VPC's ARN) and
Elastic Load Balancing V2 (https://docs.aws.amazon.com/service-authorization/latest/reference/list_elasticloadbalancingv2.html:
CreateListener on loadbalancer/net with aws:ResourceTag; DeleteListener, ModifyListener,
Add/RemoveListenerCertificates on listener/net,
arn:${Partition}:elasticloadbalancing:${Region}:${Account}:listener/net/${LoadBalancerName}/${LoadBalancerId}/${ListenerId},
with aws:ResourceTag). What the controller does (v3.5.0): it creates its security groups with
VpcId and the cluster tag (pkg/deploy/ec2/security_group_manager.go, pkg/networking/backend_sg_provider.go),
adds and revokes ingress on the ENI security group of each target node (pkg/networking/
networking_manager.go, resolveEndpointSGForENI; pkg/networking/security_group_manager.go), and tags
every listener it creates with the cluster tag, feature gate ListenerRulesTagging on by default
(pkg/deploy/elbv2/listener_manager.go, pkg/config/feature_gates.go; on by default in v2.17.1 too).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

# The tag the controller writes on every security group, load balancer and target group it creates.
_CLUSTER_TAG = "elbv2.k8s.aws/cluster"
_SECURITY_GROUPS = "arn:aws:ec2:*:*:security-group/*"
_BALANCERS_AND_TARGETS = [
    "arn:aws:elasticloadbalancing:*:*:targetgroup/*/*",
    "arn:aws:elasticloadbalancing:*:*:loadbalancer/net/*/*",
    "arn:aws:elasticloadbalancing:*:*:loadbalancer/app/*/*",
]


@dataclass(frozen=True)
class Scope:
    """Where the controller's narrowed writes may land."""

    region: str  # the stack's region (aws:region)
    account_id: str  # the account that owns the VPC
    vpc_arn: str  # arn:aws:ec2:<region>:<account>:vpc/<id>, as ec2:Vpc compares it

    def security_groups(self) -> str:
        return f"arn:aws:ec2:{self.region}:{self.account_id}:security-group/*"

    def network_load_balancers(self) -> str:
        return f"arn:aws:elasticloadbalancing:{self.region}:{self.account_id}:loadbalancer/net/*/*"

    def network_listeners(self) -> str:
        return f"arn:aws:elasticloadbalancing:{self.region}:{self.account_id}:listener/net/*/*/*"

    def in_vpc(self) -> dict:
        # The security group lies in this VPC (ec2:Vpc is the group's VPC's ARN).
        return {"ArnEquals": {"ec2:Vpc": self.vpc_arn}}


def _created_with_tag() -> dict:
    # The create request itself carries the cluster tag.
    return {"Null": {f"aws:RequestTag/{_CLUSTER_TAG}": "false"}}


def _owned() -> dict:
    # The resource already carries the cluster tag: the controller made it.
    return {"Null": {f"aws:ResourceTag/{_CLUSTER_TAG}": "false"}}


def _retag_owned() -> dict:
    # Tags change only on resources the controller owns, and never the cluster tag itself.
    return {"Null": {f"aws:RequestTag/{_CLUSTER_TAG}": "true", f"aws:ResourceTag/{_CLUSTER_TAG}": "false"}}


def _allow(actions: list[str], resource: str | list[str] = "*", condition: dict | None = None) -> dict:
    statement = {"Effect": "Allow", "Action": actions, "Resource": resource}
    if condition:
        statement["Condition"] = condition
    return statement


def _groups(scope: Scope) -> dict[str, list[dict]]:
    """What the controller does, one group per task."""
    return {
        # Elastic Load Balancing's service-linked role, created on the account's first load balancer.
        "service-linked role": [
            _allow(
                ["iam:CreateServiceLinkedRole"],
                condition={"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}},
            ),
        ],
        # Discover subnets, zones, security groups, pod ENIs and existing load balancers (read-only).
        "discovery": [
            _allow(
                [
                    "ec2:DescribeAccountAttributes",
                    "ec2:DescribeAddresses",
                    "ec2:DescribeAvailabilityZones",
                    "ec2:DescribeInternetGateways",
                    "ec2:DescribeVpcs",
                    "ec2:DescribeVpcPeeringConnections",
                    "ec2:DescribeSubnets",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeInstances",
                    "ec2:DescribeNetworkInterfaces",
                    "ec2:DescribeTags",
                    "ec2:GetSecurityGroupsForVpc",
                    "ec2:DescribeIpamPools",
                    "ec2:DescribeRouteTables",
                    "elasticloadbalancing:DescribeLoadBalancers",
                    "elasticloadbalancing:DescribeLoadBalancerAttributes",
                    "elasticloadbalancing:DescribeListeners",
                    "elasticloadbalancing:DescribeListenerCertificates",
                    "elasticloadbalancing:DescribeSSLPolicies",
                    "elasticloadbalancing:DescribeRules",
                    "elasticloadbalancing:DescribeTargetGroups",
                    "elasticloadbalancing:DescribeTargetGroupAttributes",
                    "elasticloadbalancing:DescribeTargetHealth",
                    "elasticloadbalancing:DescribeTags",
                    "elasticloadbalancing:DescribeTrustStores",
                    "elasticloadbalancing:DescribeListenerAttributes",
                    "elasticloadbalancing:DescribeCapacityReservation",
                ]
            ),
        ],
        # TLS listeners: find certificates (read-only).
        "certificates": [
            _allow(
                [
                    "acm:ListCertificates",
                    "acm:DescribeCertificate",
                    "iam:ListServerCertificates",
                    "iam:GetServerCertificate",
                ]
            ),
        ],
        # The load balancer's security groups: created in this VPC and tagged (CreateSecurityGroup
        # authorizes on the VPC and on the new group), deleted only in it while tagged. Rules
        # change on any group of this VPC: the nodes' (the backend rule) carries no tag.
        "security groups": [
            _allow(["ec2:CreateSecurityGroup"], scope.vpc_arn),
            _allow(["ec2:CreateSecurityGroup"], scope.security_groups(), _created_with_tag()),
            _allow(
                ["ec2:CreateTags"],
                _SECURITY_GROUPS,
                {"StringEquals": {"ec2:CreateAction": "CreateSecurityGroup"}, **_created_with_tag()},
            ),
            _allow(["ec2:CreateTags", "ec2:DeleteTags"], _SECURITY_GROUPS, _retag_owned()),
            _allow(
                ["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"],
                scope.security_groups(),
                scope.in_vpc(),
            ),
            _allow(["ec2:DeleteSecurityGroup"], scope.security_groups(), {**_owned(), **scope.in_vpc()}),
        ],
        # Load balancers and target groups: created tagged, changed and deleted only while tagged.
        "load balancers and target groups": [
            _allow(
                ["elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateTargetGroup"],
                condition=_created_with_tag(),
            ),
            _allow(
                ["elasticloadbalancing:AddTags"],
                _BALANCERS_AND_TARGETS,
                {
                    "StringEquals": {
                        "elasticloadbalancing:CreateAction": ["CreateTargetGroup", "CreateLoadBalancer"]
                    },
                    **_created_with_tag(),
                },
            ),
            _allow(
                ["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
                _BALANCERS_AND_TARGETS,
                _retag_owned(),
            ),
            _allow(
                [
                    "elasticloadbalancing:ModifyLoadBalancerAttributes",
                    "elasticloadbalancing:SetIpAddressType",
                    "elasticloadbalancing:SetSecurityGroups",
                    "elasticloadbalancing:SetSubnets",
                    "elasticloadbalancing:DeleteLoadBalancer",
                    "elasticloadbalancing:ModifyTargetGroup",
                    "elasticloadbalancing:ModifyTargetGroupAttributes",
                    "elasticloadbalancing:DeleteTargetGroup",
                    "elasticloadbalancing:ModifyListenerAttributes",
                    "elasticloadbalancing:ModifyCapacityReservation",
                    "elasticloadbalancing:ModifyIpPools",
                ],
                condition=_owned(),
            ),
        ],
        # Listeners: created only on this account's tagged load balancers (CreateListener
        # authorizes on the load balancer), tagged at creation, then changed, retagged and deleted
        # only while they carry the tag. Upstream tags any listener unconditionally; that would let
        # the role put the cluster tag on any listener and so pass the conditions below. Every
        # controller this stack has run (v2.17.1, v3.5.0) tags its listeners at creation.
        "listeners": [
            _allow(["elasticloadbalancing:CreateListener"], scope.network_load_balancers(), _owned()),
            _allow(
                ["elasticloadbalancing:AddTags"],
                scope.network_listeners(),
                {
                    "StringEquals": {"elasticloadbalancing:CreateAction": "CreateListener"},
                    **_created_with_tag(),
                },
            ),
            _allow(
                ["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
                scope.network_listeners(),
                _retag_owned(),
            ),
            _allow(["elasticloadbalancing:DeleteListener"], scope.network_listeners(), _owned()),
            _allow(
                [
                    "elasticloadbalancing:ModifyListener",
                    "elasticloadbalancing:AddListenerCertificates",
                    "elasticloadbalancing:RemoveListenerCertificates",
                ],
                scope.network_listeners(),
                _owned(),
            ),
        ],
        # Pod IPs in and out of the target groups.
        "targets": [
            _allow(
                ["elasticloadbalancing:RegisterTargets", "elasticloadbalancing:DeregisterTargets"],
                "arn:aws:elasticloadbalancing:*:*:targetgroup/*/*",
            ),
        ],
    }


def policy(scope: Scope) -> str:
    """The policy document, as JSON, for a controller that serves the VPC of `scope`."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [s for statements in _groups(scope).values() for s in statements],
        }
    )
