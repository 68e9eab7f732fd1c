"""The IAM roles the CI workflows (.github/workflows/) assume through GitHub's OIDC provider, as
policy documents and the `aws` commands that create them: no long-lived keys.

    python -m tools.ci_role --repository OWNER/NAME --account 123456789012 \\
        [--environment slinky-eks] [--preview-environment slinky-eks-preview] \\
        [--state-bucket BUCKET] [--role-prefix slinky-eks-ci] --out DIR

writes DIR/{preview,deploy}-{trust,policy}.json and prints the commands (docs/ci.md, "The roles";
why a tool and not a Pulumi program: docs/decisions/ci-roles.md).

- preview: assumed only by jobs of the preview environment (`sub`
  repo:OWNER/NAME:environment:PREVIEW_ENVIRONMENT), where pull requests are previewed once a
  reviewer approves (the job holds the state's secrets); reads only: what the
  program asks AWS before any resource (read from stack/account.py: ACCOUNT_CHECKS) and the state.
- deploy: assumed only by jobs of the GitHub environment (`sub`
  repo:OWNER/NAME:environment:ENVIRONMENT), which has required reviewers; what the stack creates,
  updates and deletes, service by service, and the state. The stack's resources carry no common
  tag or name prefix (their names are Pulumi's auto-names), so actions are listed one by one on
  `*`, except `iam:PassRole` and `iam:CreateServiceLinkedRole`, held to the services that take them.

Trust: the token's `aud` is sts.amazonaws.com and its `sub` the one above (GitHub docs, "Configuring
OpenID Connect in Amazon Web Services": https://docs.github.com/en/actions/how-tos/secure-your-work/
security-harden-deployments/oidc-in-aws). Exit status: 0 written; 2 bad input (one line on stderr).
"""

from __future__ import annotations

import argparse
import ast
import json
import pathlib
import re
import sys

TOKEN_HOST = "token.actions.githubusercontent.com"
AUDIENCE = "sts.amazonaws.com"
# `pulumi up` of a new stack runs past an hour (EKS, the node groups, the image, the rollout wait of
# up to 28 minutes: docs/operations.md); the workflows ask for this many seconds, the roles allow it.
SESSION_SECONDS = 3 * 3600

PROJECT_DIR = pathlib.Path(__file__).resolve().parent.parent
# The one module through which the program asks AWS before any resource (the preflight, the
# existing VPC and cluster, the prices, the images on ECR): each ask names the IAM action it needs
# as the first argument of one of these calls, so the preview role grants what the code asks,
# read from the code, not from a list kept beside it.
ASKING_MODULE = PROJECT_DIR / "stack" / "account.py"
ASKING_CALLS = ("_ask", "_find", "_or_none")
# What the program asks without naming an action in those calls: the caller's identity
# (aws.get_caller_identity: the deployer, an existing network's account; and the provider's own
# credential check), the AWS default of a quota the account never raised (the provider's
# getServiceQuota falls back to GetAWSDefaultServiceQuota: hashicorp/terraform-provider-aws
# internal/service/servicequotas/service_quota_data_source.go), and with imageBuilder=local the
# ECR tokens of the base images' registries (components/slurmd_image.py, at preview too).
UNNAMED_ASKS = (
    "sts:GetCallerIdentity",
    "servicequotas:GetAWSDefaultServiceQuota",
    "ecr:GetAuthorizationToken",
)


def asked_actions(module: pathlib.Path = ASKING_MODULE) -> tuple[str, ...]:
    """The IAM actions named as the first argument of every ASKING_CALLS call of the module."""
    found = set()
    for node in ast.walk(ast.parse(module.read_text(), str(module))):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        first = node.args[0]
        if callee in ASKING_CALLS and isinstance(first, ast.Constant) and isinstance(first.value, str):
            found.add(first.value)
    return tuple(sorted(found))


# All a preview asks of AWS (the kubeconfig's `aws eks get-token` against an existing cluster
# presigns sts:GetCallerIdentity: no action of its own).
ACCOUNT_CHECKS = tuple(sorted({*asked_actions(), *UNNAMED_ASKS}))

# What the stack creates, updates and deletes, by service (its resource types: tests/data/dev-graph.json).
STACK_ACTIONS: dict[str, tuple[str, ...]] = {
    "ec2": (
        "ec2:Describe*",
        "ec2:CreateVpc",
        "ec2:DeleteVpc",
        "ec2:ModifyVpcAttribute",
        "ec2:CreateSubnet",
        "ec2:DeleteSubnet",
        "ec2:ModifySubnetAttribute",
        "ec2:CreateInternetGateway",
        "ec2:AttachInternetGateway",
        "ec2:DetachInternetGateway",
        "ec2:DeleteInternetGateway",
        "ec2:CreateNatGateway",
        "ec2:DeleteNatGateway",
        "ec2:AllocateAddress",
        "ec2:ReleaseAddress",
        "ec2:DisassociateAddress",
        "ec2:CreateRouteTable",
        "ec2:DeleteRouteTable",
        "ec2:CreateRoute",
        "ec2:ReplaceRoute",
        "ec2:DeleteRoute",
        "ec2:AssociateRouteTable",
        "ec2:DisassociateRouteTable",
        "ec2:CreateSecurityGroup",
        "ec2:DeleteSecurityGroup",
        "ec2:AuthorizeSecurityGroupIngress",
        "ec2:AuthorizeSecurityGroupEgress",
        "ec2:RevokeSecurityGroupIngress",
        "ec2:RevokeSecurityGroupEgress",
        "ec2:ModifySecurityGroupRules",
        "ec2:CreateLaunchTemplate",
        "ec2:CreateLaunchTemplateVersion",
        "ec2:ModifyLaunchTemplate",
        "ec2:DeleteLaunchTemplate",
        "ec2:DeleteLaunchTemplateVersions",
        "ec2:RunInstances",
        "ec2:CreatePlacementGroup",
        "ec2:DeletePlacementGroup",
        "ec2:CreateFlowLogs",
        "ec2:DeleteFlowLogs",
        "ec2:CreateVpcEndpoint",
        "ec2:ModifyVpcEndpoint",
        "ec2:DeleteVpcEndpoints",
        "ec2:CreateTags",
        "ec2:DeleteTags",
    ),
    "logs": (
        "logs:CreateLogGroup",
        "logs:DeleteLogGroup",
        "logs:DescribeLogGroups",
        "logs:PutRetentionPolicy",
        "logs:DeleteRetentionPolicy",
        "logs:TagResource",
        "logs:UntagResource",
        "logs:ListTagsForResource",
        "logs:CreateLogDelivery",
        "logs:GetLogDelivery",
        "logs:DeleteLogDelivery",
        "logs:ListLogDeliveries",
        "logs:GetLogEvents",
    ),
    "s3": (
        "s3:CreateBucket",
        "s3:DeleteBucket",
        "s3:ListBucket",
        "s3:GetBucket*",
        "s3:PutBucket*",
        "s3:DeleteBucketPolicy",
        "s3:GetLifecycleConfiguration",
        "s3:PutLifecycleConfiguration",
        "s3:GetEncryptionConfiguration",
        "s3:PutEncryptionConfiguration",
        "s3:GetAccelerateConfiguration",
        "s3:GetReplicationConfiguration",
        "s3:GetObject",
        "s3:PutObject",
        "s3:DeleteObject",
        "s3:DeleteObjectVersion",
        "s3:ListBucketVersions",
    ),
    "eks": (
        "eks:Describe*",
        "eks:List*",
        "eks:CreateCluster",
        "eks:DeleteCluster",
        "eks:UpdateClusterConfig",
        "eks:UpdateClusterVersion",
        "eks:CreateNodegroup",
        "eks:DeleteNodegroup",
        "eks:UpdateNodegroupConfig",
        "eks:UpdateNodegroupVersion",
        "eks:CreateAddon",
        "eks:UpdateAddon",
        "eks:DeleteAddon",
        "eks:CreateAccessEntry",
        "eks:UpdateAccessEntry",
        "eks:DeleteAccessEntry",
        "eks:AssociateAccessPolicy",
        "eks:DisassociateAccessPolicy",
        "eks:CreatePodIdentityAssociation",
        "eks:UpdatePodIdentityAssociation",
        "eks:DeletePodIdentityAssociation",
        "eks:TagResource",
        "eks:UntagResource",
    ),
    "iam": (
        "iam:CreateRole",
        "iam:DeleteRole",
        "iam:UpdateRole",
        "iam:UpdateAssumeRolePolicy",
        "iam:TagRole",
        "iam:UntagRole",
        "iam:ListRolePolicies",
        "iam:ListAttachedRolePolicies",
        "iam:ListInstanceProfilesForRole",
        "iam:PutRolePolicy",
        "iam:GetRolePolicy",
        "iam:DeleteRolePolicy",
        "iam:DetachRolePolicy",
        "iam:GetPolicy",
        "iam:GetPolicyVersion",
        "iam:CreateInstanceProfile",
        "iam:GetInstanceProfile",
        "iam:AddRoleToInstanceProfile",
        "iam:RemoveRoleFromInstanceProfile",
        "iam:DeleteInstanceProfile",
        "iam:CreateOpenIDConnectProvider",
        "iam:GetOpenIDConnectProvider",
        "iam:TagOpenIDConnectProvider",
        "iam:DeleteOpenIDConnectProvider",
    ),
    "ecr": (
        "ecr:GetAuthorizationToken",
        "ecr:CreateRepository",
        "ecr:DeleteRepository",
        "ecr:DescribeRepositories",
        "ecr:PutImageScanningConfiguration",
        "ecr:PutImageTagMutability",
        "ecr:PutLifecyclePolicy",
        "ecr:GetLifecyclePolicy",
        "ecr:DeleteLifecyclePolicy",
        "ecr:TagResource",
        "ecr:UntagResource",
        "ecr:ListTagsForResource",
        "ecr:DescribeImages",
        "ecr:BatchCheckLayerAvailability",
        "ecr:BatchGetImage",
        "ecr:GetDownloadUrlForLayer",
        "ecr:InitiateLayerUpload",
        "ecr:UploadLayerPart",
        "ecr:CompleteLayerUpload",
        "ecr:PutImage",
        "ecr:BatchDeleteImage",
    ),
    "elasticfilesystem": (
        "elasticfilesystem:CreateFileSystem",
        "elasticfilesystem:UpdateFileSystem",
        "elasticfilesystem:DeleteFileSystem",
        "elasticfilesystem:Describe*",
        "elasticfilesystem:PutFileSystemPolicy",
        "elasticfilesystem:DeleteFileSystemPolicy",
        "elasticfilesystem:PutLifecycleConfiguration",
        "elasticfilesystem:PutBackupPolicy",
        "elasticfilesystem:CreateMountTarget",
        "elasticfilesystem:DeleteMountTarget",
        "elasticfilesystem:ModifyMountTargetSecurityGroups",
        "elasticfilesystem:TagResource",
        "elasticfilesystem:UntagResource",
        "elasticfilesystem:ListTagsForResource",
    ),
    "rds": (
        "rds:Describe*",
        "rds:ListTagsForResource",
        "rds:CreateDBInstance",
        "rds:ModifyDBInstance",
        "rds:DeleteDBInstance",
        "rds:CreateDBSnapshot",
        "rds:CreateDBSubnetGroup",
        "rds:ModifyDBSubnetGroup",
        "rds:DeleteDBSubnetGroup",
        "rds:CreateDBParameterGroup",
        "rds:ModifyDBParameterGroup",
        "rds:DeleteDBParameterGroup",
        "rds:AddTagsToResource",
        "rds:RemoveTagsFromResource",
    ),
    "aps": (
        "aps:CreateWorkspace",
        "aps:DescribeWorkspace",
        "aps:UpdateWorkspaceAlias",
        "aps:DeleteWorkspace",
        "aps:DescribeWorkspaceConfiguration",
        "aps:UpdateWorkspaceConfiguration",
        "aps:CreateRuleGroupsNamespace",
        "aps:PutRuleGroupsNamespace",
        "aps:DescribeRuleGroupsNamespace",
        "aps:DeleteRuleGroupsNamespace",
        "aps:CreateAlertManagerDefinition",
        "aps:PutAlertManagerDefinition",
        "aps:DescribeAlertManagerDefinition",
        "aps:DeleteAlertManagerDefinition",
        "aps:CreateScraper",
        "aps:DescribeScraper",
        "aps:UpdateScraper",
        "aps:DeleteScraper",
        "aps:TagResource",
        "aps:UntagResource",
        "aps:ListTagsForResource",
    ),
    "sns": (
        "sns:CreateTopic",
        "sns:DeleteTopic",
        "sns:GetTopicAttributes",
        "sns:SetTopicAttributes",
        "sns:TagResource",
        "sns:UntagResource",
        "sns:ListTagsForResource",
    ),
    "kms": (
        "kms:CreateKey",
        "kms:DescribeKey",
        "kms:GetKeyPolicy",
        "kms:PutKeyPolicy",
        "kms:GetKeyRotationStatus",
        "kms:EnableKeyRotation",
        "kms:ListResourceTags",
        "kms:TagResource",
        "kms:UntagResource",
        "kms:ScheduleKeyDeletion",
    ),
    "codebuild": (
        "codebuild:CreateProject",
        "codebuild:UpdateProject",
        "codebuild:DeleteProject",
        "codebuild:BatchGetProjects",
        "codebuild:StartBuild",
        "codebuild:BatchGetBuilds",
        "codebuild:ListBuildsForProject",
    ),
}
# The services the stack's roles are passed to (EKS cluster and Pod Identity, EC2 nodes, the flow
# log, the image build), and those whose service-linked roles the first cluster in an account
# creates (docs/operations.md).
PASSED_TO = (
    "eks.amazonaws.com",
    "pods.eks.amazonaws.com",
    "ec2.amazonaws.com",
    "vpc-flow-logs.amazonaws.com",
    "codebuild.amazonaws.com",
)
# The AWS managed policies the stack attaches to its roles, the only ones the deploy role may attach
# (the iam:PolicyARN condition key of AttachRolePolicy: IAM User Guide, "IAM and AWS STS condition
# context keys", https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_iam-condition-keys.html):
# an AdministratorAccess attached to a role it then passes to EC2 or CodeBuild would make it admin.
# The node role's and the VPC CNI's (components/node_groups.py, components/cluster.py), the EBS CSI
# driver's (components/shared_storage.py), and the EKS cluster role that pulumi-eks creates for
# eks.Cluster (its ServiceRole: AmazonEKSClusterPolicy, and AmazonEKSServicePolicy in its older
# releases).
STACK_MANAGED_POLICIES = tuple(
    f"arn:aws:iam::aws:policy/{name}"
    for name in (
        "AmazonEKSClusterPolicy",
        "AmazonEKSServicePolicy",
        "AmazonEKSWorkerNodePolicy",
        "AmazonEKS_CNI_Policy",
        "service-role/AmazonEBSCSIDriverPolicy",
    )
)
SERVICE_LINKED = (
    "eks.amazonaws.com",
    "eks-nodegroup.amazonaws.com",
    "autoscaling.amazonaws.com",
    "elasticloadbalancing.amazonaws.com",
    "rds.amazonaws.com",
    "scraper.aps.amazonaws.com",
)

_REPOSITORY = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}")
_ACCOUNT = re.compile(r"\d{12}")
_ENVIRONMENT = re.compile(r"[^\s'\"`,;:\\]{1,255}")
# S3 bucket naming rules (https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html).
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_ROLE = re.compile(r"[\w+=,.@-]{1,56}")  # IAM role names are at most 64 characters; -preview appended


class BadInput(Exception):
    """One line naming the option, the value and what is allowed."""


def provider_arn(account: str) -> str:
    return f"arn:aws:iam::{account}:oidc-provider/{TOKEN_HOST}"


def trust_policy(account: str, subject: str) -> dict:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Federated": provider_arn(account)},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {f"{TOKEN_HOST}:aud": AUDIENCE, f"{TOKEN_HOST}:sub": subject},
                },
            }
        ],
    }


def preview_subject(repository: str, environment: str) -> str:
    """A job that names an environment gets a token whose `sub` is the environment's, not the
    pull request's (GitHub docs, "OpenID Connect reference", Filtering for a specific environment:
    https://docs.github.com/en/actions/reference/security/oidc)."""
    return f"repo:{repository}:environment:{environment}"


def deploy_subject(repository: str, environment: str) -> str:
    return f"repo:{repository}:environment:{environment}"


def _state_statements(bucket: str | None, *, write: bool) -> list[dict]:
    """The state in an S3 backend: a preview only reads it (the CLI locks a stack for an update,
    never for a preview: pulumi/pulumi v3.259.0, pkg/backend/diy/backend.go Preview and Update);
    up and destroy write the checkpoint, its history and the lock (.pulumi/locks/)."""
    if bucket is None:
        return []
    objects = ["s3:GetObject", *(["s3:PutObject", "s3:DeleteObject"] if write else [])]
    return [
        {
            "Sid": "StateList",
            "Effect": "Allow",
            "Action": "s3:ListBucket",
            "Resource": f"arn:aws:s3:::{bucket}",
        },
        {"Sid": "StateObjects", "Effect": "Allow", "Action": objects, "Resource": f"arn:aws:s3:::{bucket}/*"},
    ]


def preview_policy(state_bucket: str | None = None) -> dict:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "AccountChecks", "Effect": "Allow", "Action": list(ACCOUNT_CHECKS), "Resource": "*"},
            *_state_statements(state_bucket, write=False),
        ],
    }


def deploy_policy(state_bucket: str | None = None) -> dict:
    actions = sorted({*ACCOUNT_CHECKS, *(a for service in STACK_ACTIONS.values() for a in service)})
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "Stack", "Effect": "Allow", "Action": actions, "Resource": "*"},
            {
                "Sid": "PassStackRoles",
                "Effect": "Allow",
                "Action": "iam:PassRole",
                "Resource": "*",
                "Condition": {"StringEquals": {"iam:PassedToService": list(PASSED_TO)}},
            },
            {
                "Sid": "AttachStackManagedPolicies",
                "Effect": "Allow",
                "Action": "iam:AttachRolePolicy",
                "Resource": "*",
                "Condition": {"ArnEquals": {"iam:PolicyARN": list(STACK_MANAGED_POLICIES)}},
            },
            {
                "Sid": "ServiceLinkedRoles",
                "Effect": "Allow",
                "Action": "iam:CreateServiceLinkedRole",
                "Resource": "*",
                "Condition": {"StringEquals": {"iam:AWSServiceName": list(SERVICE_LINKED)}},
            },
            *_state_statements(state_bucket, write=True),
        ],
    }


def _checked(args: argparse.Namespace) -> list[str]:
    problems = []
    for option, value, pattern, allowed in (
        ("--repository", args.repository, _REPOSITORY, "OWNER/NAME as GitHub spells it"),
        ("--account", args.account, _ACCOUNT, "a 12-digit AWS account id"),
        ("--environment", args.environment, _ENVIRONMENT, "a GitHub environment name"),
        ("--preview-environment", args.preview_environment, _ENVIRONMENT, "a GitHub environment name"),
        ("--role-prefix", args.role_prefix, _ROLE, "up to 56 of letters, digits and +=,.@_-"),
    ):
        if not pattern.fullmatch(value):
            problems.append(f"{option} {value!r}: {allowed}")
    if args.state_bucket is not None and not _BUCKET.fullmatch(args.state_bucket):
        problems.append(
            f"--state-bucket {args.state_bucket!r}: an S3 bucket name (3-63 of a-z, 0-9, '.', '-')"
        )
    return problems


def commands(args: argparse.Namespace, out: pathlib.Path) -> list[str]:
    """The `aws` commands that create the OIDC provider (once per account) and both roles."""
    lines = [
        # The thumbprint is optional: IAM secures the GitHub provider with its own trusted CAs
        # (IAM user guide, "Create an OpenID Connect (OIDC) identity provider in IAM").
        f"aws iam create-open-id-connect-provider --url https://{TOKEN_HOST} --client-id-list {AUDIENCE}",
    ]
    for kind in ("preview", "deploy"):
        role = f"{args.role_prefix}-{kind}"
        lines += [
            f"aws iam create-role --role-name {role} --max-session-duration {SESSION_SECONDS} "
            f"--assume-role-policy-document file://{out / f'{kind}-trust.json'}",
            f"aws iam put-role-policy --role-name {role} --policy-name {role} "
            f"--policy-document file://{out / f'{kind}-policy.json'}",
        ]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="ci_role", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--repository", required=True, help="the GitHub repository, OWNER/NAME")
    p.add_argument("--account", required=True, help="the AWS account id")
    p.add_argument("--environment", default="slinky-eks", help="the GitHub environment of up and destroy")
    p.add_argument(
        "--preview-environment",
        default="slinky-eks-preview",
        help="the GitHub environment of preview (required reviewers: it runs a branch's code with the secrets)",
    )
    p.add_argument("--state-bucket", help="the S3 bucket of the state backend (none for Pulumi Cloud)")
    p.add_argument(
        "--role-prefix", default="slinky-eks-ci", help="the roles are PREFIX-preview, PREFIX-deploy"
    )
    p.add_argument("--out", type=pathlib.Path, required=True, help="where the policy documents go")
    args = p.parse_args(argv)
    problems = _checked(args)
    if problems:
        print(f"ci_role: {'; '.join(problems)}", file=sys.stderr)
        return 2
    documents = {
        "preview-trust.json": trust_policy(
            args.account, preview_subject(args.repository, args.preview_environment)
        ),
        "preview-policy.json": preview_policy(args.state_bucket),
        "deploy-trust.json": trust_policy(args.account, deploy_subject(args.repository, args.environment)),
        "deploy-policy.json": deploy_policy(args.state_bucket),
    }
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, document in documents.items():
            (args.out / name).write_text(json.dumps(document, indent=2) + "\n")
    except OSError as e:
        print(f"ci_role: cannot write the policy documents to {args.out}: {e.strerror}", file=sys.stderr)
        return 2
    print("\n".join(commands(args, args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
