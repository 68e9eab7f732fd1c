"""The AWS Load Balancer Controller's IAM policy for the Network Load Balancers of Services.

Equal in effect to the controller's own policy for the pinned version (kubernetes-sigs/
aws-load-balancer-controller, docs/install/iam_policy.json at v2.17.1), less the actions only
Ingresses (Application Load Balancers) use. Every write is fenced by the `elbv2.k8s.aws/cluster`
tag the controller puts on what it creates: it may create only what it tags, and change or delete
only what carries the tag, never another team's security group or load balancer.
tests/graph/test_load_balancer_policy.py compares it statement by statement with the upstream file.
"""
from __future__ import annotations

import json

# The tag the controller writes on every security group, load balancer and target group it creates.
_CLUSTER_TAG = "elbv2.k8s.aws/cluster"
_SECURITY_GROUPS = "arn:aws:ec2:*:*:security-group/*"
_BALANCERS_AND_TARGETS = ["arn:aws:elasticloadbalancing:*:*:targetgroup/*/*",
                          "arn:aws:elasticloadbalancing:*:*:loadbalancer/net/*/*",
                          "arn:aws:elasticloadbalancing:*:*:loadbalancer/app/*/*"]
_LISTENERS_AND_RULES = ["arn:aws:elasticloadbalancing:*:*:listener/net/*/*/*",
                        "arn:aws:elasticloadbalancing:*:*:listener/app/*/*/*",
                        "arn:aws:elasticloadbalancing:*:*:listener-rule/net/*/*/*",
                        "arn:aws:elasticloadbalancing:*:*:listener-rule/app/*/*/*"]


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


# What the controller does, one group per task.
_GROUPS: dict[str, list[dict]] = {
    # Elastic Load Balancing's service-linked role, created on the account's first load balancer.
    "service-linked role": [
        _allow(["iam:CreateServiceLinkedRole"], condition={
            "StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}}),
    ],
    # Discover subnets, zones, security groups, pod ENIs and existing load balancers (read-only).
    "discovery": [
        _allow(["ec2:DescribeAccountAttributes", "ec2:DescribeAddresses", "ec2:DescribeAvailabilityZones",
                "ec2:DescribeInternetGateways", "ec2:DescribeVpcs", "ec2:DescribeVpcPeeringConnections",
                "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups", "ec2:DescribeInstances",
                "ec2:DescribeNetworkInterfaces", "ec2:DescribeTags", "ec2:GetSecurityGroupsForVpc",
                "ec2:DescribeIpamPools", "ec2:DescribeRouteTables",
                "elasticloadbalancing:DescribeLoadBalancers", "elasticloadbalancing:DescribeLoadBalancerAttributes",
                "elasticloadbalancing:DescribeListeners", "elasticloadbalancing:DescribeListenerCertificates",
                "elasticloadbalancing:DescribeSSLPolicies", "elasticloadbalancing:DescribeRules",
                "elasticloadbalancing:DescribeTargetGroups", "elasticloadbalancing:DescribeTargetGroupAttributes",
                "elasticloadbalancing:DescribeTargetHealth", "elasticloadbalancing:DescribeTags",
                "elasticloadbalancing:DescribeTrustStores", "elasticloadbalancing:DescribeListenerAttributes",
                "elasticloadbalancing:DescribeCapacityReservation"]),
    ],
    # TLS listeners: find certificates (read-only).
    "certificates": [
        _allow(["acm:ListCertificates", "acm:DescribeCertificate",
                "iam:ListServerCertificates", "iam:GetServerCertificate"]),
    ],
    # The load balancer's security group: created tagged, changed and deleted only while tagged.
    # Rules on node security groups (the backend rule) need no tag.
    "security groups": [
        _allow(["ec2:CreateSecurityGroup"]),
        _allow(["ec2:CreateTags"], _SECURITY_GROUPS, {
            "StringEquals": {"ec2:CreateAction": "CreateSecurityGroup"}, **_created_with_tag()}),
        _allow(["ec2:CreateTags", "ec2:DeleteTags"], _SECURITY_GROUPS, _retag_owned()),
        _allow(["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"]),
        _allow(["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress",
                "ec2:DeleteSecurityGroup"], condition=_owned()),
    ],
    # Load balancers and target groups: created tagged, changed and deleted only while tagged.
    "load balancers and target groups": [
        _allow(["elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateTargetGroup"],
               condition=_created_with_tag()),
        _allow(["elasticloadbalancing:AddTags"], _BALANCERS_AND_TARGETS, {
            "StringEquals": {"elasticloadbalancing:CreateAction": ["CreateTargetGroup", "CreateLoadBalancer"]},
            **_created_with_tag()}),
        _allow(["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"], _BALANCERS_AND_TARGETS,
               _retag_owned()),
        _allow(["elasticloadbalancing:ModifyLoadBalancerAttributes", "elasticloadbalancing:SetIpAddressType",
                "elasticloadbalancing:SetSecurityGroups", "elasticloadbalancing:SetSubnets",
                "elasticloadbalancing:DeleteLoadBalancer", "elasticloadbalancing:ModifyTargetGroup",
                "elasticloadbalancing:ModifyTargetGroupAttributes", "elasticloadbalancing:DeleteTargetGroup",
                "elasticloadbalancing:ModifyListenerAttributes", "elasticloadbalancing:ModifyCapacityReservation",
                "elasticloadbalancing:ModifyIpPools"], condition=_owned()),
    ],
    # Listeners of the controller's load balancers (they carry no tag condition upstream either:
    # a listener lives and dies with its load balancer).
    "listeners": [
        _allow(["elasticloadbalancing:CreateListener", "elasticloadbalancing:DeleteListener"]),
        _allow(["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"], _LISTENERS_AND_RULES),
        _allow(["elasticloadbalancing:ModifyListener", "elasticloadbalancing:AddListenerCertificates",
                "elasticloadbalancing:RemoveListenerCertificates"]),
    ],
    # Pod IPs in and out of the target groups.
    "targets": [
        _allow(["elasticloadbalancing:RegisterTargets", "elasticloadbalancing:DeregisterTargets"],
               "arn:aws:elasticloadbalancing:*:*:targetgroup/*/*"),
    ],
}

POLICY = json.dumps({"Version": "2012-10-17",
                     "Statement": [s for statements in _GROUPS.values() for s in statements]})
