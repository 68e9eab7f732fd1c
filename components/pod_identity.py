"""IAM roles that EKS Pod Identity hands to one service account each."""
from __future__ import annotations

import json
from typing import Sequence

import pulumi
import pulumi_aws as aws

# Pod Identity's trust: the EKS Pod Identity agent assumes the role and tags the session.
TRUST_POLICY = json.dumps({
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "pods.eks.amazonaws.com"},
                   "Action": ["sts:AssumeRole", "sts:TagSession"]}],
})


def pod_identity_role(name: str, managed_policy_arns: Sequence[str], parent: pulumi.Resource,
                      inline_policy: str | None = None) -> aws.iam.Role:
    opts = pulumi.ResourceOptions(parent=parent)
    role = aws.iam.Role(f"{name}-role", assume_role_policy=TRUST_POLICY, opts=opts)
    for i, arn in enumerate(managed_policy_arns):
        aws.iam.RolePolicyAttachment(f"{name}-policy-{i}", role=role.name, policy_arn=arn, opts=opts)
    if inline_policy is not None:
        aws.iam.RolePolicy(f"{name}-policy", role=role.id, policy=inline_policy, opts=opts)
    return role
