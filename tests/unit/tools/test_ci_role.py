"""The CI roles (tools/ci_role.py): trusted only by this repository's pull requests (preview) or its
environment (deploy), through GitHub's OIDC provider; the deploy policy is what docs/operations.md
says the stack needs and covers every AWS resource type the program declares."""

import fnmatch
import json
import re

import pytest

from devkit.offline_run import PROJECT_DIR
from tools import ci_role

REPOSITORY, ACCOUNT = "acme/slinky-eks", "123456789012"
PROVIDER = "arn:aws:iam::123456789012:oidc-provider/token.actions.githubusercontent.com"


def account_section() -> str:
    text = (PROJECT_DIR / "docs/operations.md").read_text()
    return text.split("## What your account needs", 1)[1].split("\n## ", 1)[0]


def granted(policy: dict, action: str) -> bool:
    return any(
        fnmatch.fnmatchcase(action, pattern)
        for statement in policy["Statement"]
        if statement["Effect"] == "Allow"
        for pattern in (
            [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
        )
    )


def named_actions(text: str) -> set[str]:
    return set(re.findall(r"`([a-z0-9-]+:[A-Z][A-Za-z]*)`", text))


def test_the_deploy_role_trusts_only_the_environment_of_this_repository():
    assert ci_role.trust_policy(ACCOUNT, ci_role.deploy_subject(REPOSITORY, "slinky-eks")) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Federated": PROVIDER},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        "token.actions.githubusercontent.com:aud": "sts.amazonaws.com",
                        "token.actions.githubusercontent.com:sub": "repo:acme/slinky-eks:environment:slinky-eks",
                    }
                },
            }
        ],
    }


def test_the_preview_role_trusts_only_the_preview_environment_of_this_repository(tmp_path):
    assert ci_role.main(["--repository", REPOSITORY, "--account", ACCOUNT, "--out", str(tmp_path)]) == 0
    condition = json.loads((tmp_path / "preview-trust.json").read_text())["Statement"][0]["Condition"]
    assert (
        condition["StringEquals"]["token.actions.githubusercontent.com:sub"]
        == "repo:acme/slinky-eks:environment:slinky-eks-preview"
    )


def test_every_action_operations_md_names_is_granted_to_the_deploy_role():
    policy = ci_role.deploy_policy("acme-state")
    named = named_actions(account_section())
    assert len(named) > 20  # the paragraph is read, not an empty match
    assert sorted(a for a in named if not granted(policy, a)) == []


def test_the_preview_role_may_do_what_the_account_checks_ask():
    checks = (
        account_section().split("**Permissions.** The preflight needs", 1)[1].split("The stack itself", 1)[0]
    )
    assert sorted(a for a in named_actions(checks) if not granted(ci_role.preview_policy(), a)) == []


def actions_in_code() -> set[str]:
    """Every IAM action literal of the module that asks AWS before any resource, and of the model's
    checks, read as text (independently of the tool's own reading)."""
    files = [PROJECT_DIR / "stack/account.py", *sorted((PROJECT_DIR / "model/checks").glob("*.py"))]
    literal = re.compile(
        r"[\"']((?:ec2|ecr|eks|iam|pricing|servicequotas|sts|s3|logs|kms):[A-Z][A-Za-z]+)[\"']"
    )
    return {a for f in files for a in literal.findall(f.read_text())}


@pytest.mark.parametrize("role", ["preview", "deploy"])
def test_every_action_the_program_asks_before_any_resource_is_granted(role):
    asked = actions_in_code()
    # The existing-VPC, existing-cluster and image checks are read, not an empty match.
    assert {"ec2:DescribeRouteTables", "eks:DescribeAccessEntry", "ecr:ListImages"} <= asked
    policy = ci_role.preview_policy() if role == "preview" else ci_role.deploy_policy()
    assert sorted(a for a in asked if not granted(policy, a)) == []


# The service prefix of each AWS module of the Pulumi providers the program uses (aws:<module>/...,
# eks:index:Cluster), and how docs/operations.md names the service.
SERVICE_OF_MODULE = {
    "amp": "aps",
    "cloudwatch": "logs",
    "codebuild": "codebuild",
    "ec2": "ec2",
    "ecr": "ecr",
    "efs": "elasticfilesystem",
    "eks": "eks",
    "iam": "iam",
    "kms": "kms",
    "rds": "rds",
    "s3": "s3",
    "sns": "sns",
    "vpc": "ec2",
}
NAME_IN_DOCS = {
    "aps": "Managed Service for Prometheus",
    "codebuild": "CodeBuild",
    "ec2": "EC2",
    "ecr": "ECR",
    "eks": "EKS",
    "elasticfilesystem": "EFS",
    "iam": "IAM",
    "kms": "KMS",
    "logs": "CloudWatch Logs",
    "pricing": "`pricing:",
    "rds": "RDS",
    "s3": "S3",
    "servicequotas": "`servicequotas:",
    "sns": "SNS",
    "sts": "`sts:",
}


def test_every_aws_resource_type_of_the_dev_graph_has_its_service_in_the_deploy_policy():
    graph = json.loads((PROJECT_DIR / "tests/data/dev-graph.json").read_text())
    types = {urn.split("::")[-2].split("$")[-1] for urn in graph}
    modules = {t.split(":")[1].split("/")[0] for t in types if t.startswith("aws:")} | {
        "eks" for t in types if t.startswith("eks:")
    }
    assert sorted(modules - SERVICE_OF_MODULE.keys()) == []
    policy_services = {a.split(":")[0] for a in ci_role.deploy_policy()["Statement"][0]["Action"]}
    assert sorted({SERVICE_OF_MODULE[m] for m in modules} - policy_services) == []


def test_every_service_the_deploy_policy_grants_is_named_in_operations_md():
    section = account_section()
    services = {a.split(":")[0] for a in ci_role.deploy_policy()["Statement"][0]["Action"]}
    assert sorted(s for s in services if NAME_IN_DOCS.get(s, f"<{s}>") not in section) == []


def test_no_action_is_a_whole_service_and_role_passing_is_held_to_the_stack_s_services():
    policy = ci_role.deploy_policy("acme-state")
    actions = [
        a
        for s in policy["Statement"]
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    ]
    assert [a for a in actions if a == "*" or a.endswith(":*")] == []
    for statement in policy["Statement"]:
        if statement["Action"] in ("iam:PassRole", "iam:CreateServiceLinkedRole"):
            assert statement["Condition"]
        else:
            assert "iam:PassRole" not in statement["Action"]
            assert "iam:CreateServiceLinkedRole" not in statement["Action"]


def test_the_preview_role_only_reads():
    policy = ci_role.preview_policy("acme-state")
    actions = [
        a
        for s in policy["Statement"]
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    ]
    verbs = {re.match(r"[A-Z][a-z]+", a.split(":")[1]).group() for a in actions}
    assert verbs <= {"Describe", "Get", "List"}


def test_the_state_bucket_is_the_only_resource_of_the_state_statements():
    statements = [s for s in ci_role.deploy_policy("acme-state")["Statement"] if s["Sid"].startswith("State")]
    assert [s["Resource"] for s in statements] == ["arn:aws:s3:::acme-state", "arn:aws:s3:::acme-state/*"]
    assert not [s for s in ci_role.deploy_policy()["Statement"] if s["Sid"].startswith("State")]


def test_the_deploy_policy_fits_an_inline_role_policy():
    # "Role policy size cannot exceed 10,240 characters", whitespace not counted
    # (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html).
    assert len(re.sub(r"\s", "", json.dumps(ci_role.deploy_policy("a" * 63)))) <= 10240


def test_it_writes_the_documents_and_prints_the_commands(tmp_path, capsys):
    out = tmp_path / "role"
    assert ci_role.main(["--repository", REPOSITORY, "--account", ACCOUNT, "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "deploy-policy.json",
        "deploy-trust.json",
        "preview-policy.json",
        "preview-trust.json",
    ]
    assert json.loads((out / "deploy-trust.json").read_text()) == ci_role.trust_policy(
        ACCOUNT, "repo:acme/slinky-eks:environment:slinky-eks"
    )
    assert capsys.readouterr().out.splitlines() == [
        "aws iam create-open-id-connect-provider --url https://token.actions.githubusercontent.com "
        "--client-id-list sts.amazonaws.com",
        "aws iam create-role --role-name slinky-eks-ci-preview --max-session-duration 10800 "
        f"--assume-role-policy-document file://{out}/preview-trust.json",
        "aws iam put-role-policy --role-name slinky-eks-ci-preview --policy-name slinky-eks-ci-preview "
        f"--policy-document file://{out}/preview-policy.json",
        "aws iam create-role --role-name slinky-eks-ci-deploy --max-session-duration 10800 "
        f"--assume-role-policy-document file://{out}/deploy-trust.json",
        "aws iam put-role-policy --role-name slinky-eks-ci-deploy --policy-name slinky-eks-ci-deploy "
        f"--policy-document file://{out}/deploy-policy.json",
    ]


@pytest.mark.parametrize(
    "argv, line",
    [
        (
            ["--repository", "acme", "--account", "1234", "--state-bucket", "Bad_Bucket"],
            "ci_role: --repository 'acme': OWNER/NAME as GitHub spells it; --account '1234': a 12-digit AWS "
            "account id; --state-bucket 'Bad_Bucket': an S3 bucket name (3-63 of a-z, 0-9, '.', '-')",
        ),
        (
            ["--repository", REPOSITORY, "--account", ACCOUNT, "--environment", "prod:main"],
            "ci_role: --environment 'prod:main': a GitHub environment name",
        ),
    ],
    ids=["every-problem-at-once", "environment"],
)
def test_bad_input_is_one_line_naming_each_option_and_exit_2(tmp_path, capsys, argv, line):
    assert ci_role.main([*argv, "--out", str(tmp_path / "role")]) == 2
    assert capsys.readouterr().err.splitlines() == [line]
    assert not (tmp_path / "role").exists()


def attached_policies_in(graph_file: str) -> set[str]:
    graph = json.loads((PROJECT_DIR / graph_file).read_text())
    return {
        v["policyArn"]
        for urn, v in graph.items()
        if urn.split("::")[-2].endswith("iam/rolePolicyAttachment:RolePolicyAttachment")
    }


def test_the_deploy_role_may_attach_every_managed_policy_the_stack_attaches():
    attached = attached_policies_in("tests/data/dev-graph.json")
    assert "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy" in attached  # the graph is read
    assert sorted(attached - set(ci_role.STACK_MANAGED_POLICIES)) == []


def test_the_deploy_role_may_attach_no_other_managed_policy():
    # AdministratorAccess on a role it then passes to EC2 or CodeBuild would make the deploy role admin.
    (statement,) = [
        s for s in ci_role.deploy_policy()["Statement"] if "iam:AttachRolePolicy" in str(s["Action"])
    ]
    assert statement["Action"] == "iam:AttachRolePolicy"
    assert statement["Condition"] == {"ArnEquals": {"iam:PolicyARN": list(ci_role.STACK_MANAGED_POLICIES)}}
    assert "arn:aws:iam::aws:policy/AdministratorAccess" not in ci_role.STACK_MANAGED_POLICIES
    assert all(p.startswith("arn:aws:iam::aws:policy/") for p in ci_role.STACK_MANAGED_POLICIES)
