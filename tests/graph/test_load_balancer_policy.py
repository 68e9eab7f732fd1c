"""The load balancer controller's IAM policy is equal in effect to the controller's own policy for
the pinned version (kubernetes-sigs/aws-load-balancer-controller docs/install/iam_policy.json at
v3.5.0, read in place from the reference data), less actions only Ingresses (ALBs) use, with the
writes NARROWED lists scoped to this VPC and this account's load balancers."""

import copy
import fnmatch
import json

import pytest

from devkit import reference_data

UPSTREAM = ("aws-load-balancer-controller-v3.5.0-iam-policy.json",)

# Used only for Ingresses (Application Load Balancers); this program makes NLBs for Services.
ALB_ONLY = {
    "cognito-idp:DescribeUserPoolClient": "ALB authentication with Cognito",
    "waf-regional:GetWebACL": "WAF Classic on ALBs",
    "waf-regional:GetWebACLForResource": "WAF Classic on ALBs",
    "waf-regional:AssociateWebACL": "WAF Classic on ALBs",
    "waf-regional:DisassociateWebACL": "WAF Classic on ALBs",
    "wafv2:GetWebACL": "WAFv2 on ALBs",
    "wafv2:GetWebACLForResource": "WAFv2 on ALBs",
    "wafv2:AssociateWebACL": "WAFv2 on ALBs",
    "wafv2:DisassociateWebACL": "WAFv2 on ALBs",
    "elasticloadbalancing:SetWebAcl": "WAF on ALBs",
    "shield:GetSubscriptionState": "Shield Advanced on ALBs",
    "shield:DescribeProtection": "Shield Advanced on ALBs",
    "shield:CreateProtection": "Shield Advanced on ALBs",
    "shield:DeleteProtection": "Shield Advanced on ALBs",
    "elasticloadbalancing:CreateRule": "ALB listener rules",
    "elasticloadbalancing:DeleteRule": "ALB listener rules",
    "elasticloadbalancing:ModifyRule": "ALB listener rules",
    "elasticloadbalancing:SetRulePriorities": "ALB listener rules",
    "ec2:GetCoipPoolUsage": "customer-owned IPs of ALBs on Outposts",
    "ec2:DescribeCoipPools": "customer-owned IPs of ALBs on Outposts",
}


# Upstream grants these on any security group or listener of the account; ours narrows each
# (components/_parts/load_balancer_policy.py says to what, and why the controller still works).
NARROWED = {
    "ec2:CreateSecurityGroup": "only in this VPC, tagged with the cluster tag",
    "ec2:AuthorizeSecurityGroupIngress": "only on security groups in this VPC",
    "ec2:RevokeSecurityGroupIngress": "only on security groups in this VPC",
    "ec2:DeleteSecurityGroup": "only on tagged security groups in this VPC",
    "elasticloadbalancing:CreateListener": "only on this account's tagged NLBs",
    "elasticloadbalancing:DeleteListener": "only on this account's tagged NLB listeners",
    "elasticloadbalancing:ModifyListener": "only on this account's tagged NLB listeners",
    "elasticloadbalancing:AddListenerCertificates": "only on this account's tagged NLB listeners",
    "elasticloadbalancing:RemoveListenerCertificates": "only on this account's tagged NLB listeners",
    # Upstream tags any listener; ours, listeners only at their creation with the cluster tag or
    # while they carry it (load balancers and target groups are tagged as upstream).
    "elasticloadbalancing:AddTags": "on listeners only at creation with the tag, or on tagged NLB listeners",
    "elasticloadbalancing:RemoveTags": "on listeners only on tagged NLB listeners",
}
ACCOUNT, REGION = "123456789012", "us-west-2"  # the mocks' (devkit/offline_run.py)
VPC_ARN = f"arn:aws:ec2:{REGION}:{ACCOUNT}:vpc/network-vpc-id"


def _list(value):
    return [value] if isinstance(value, str) else list(value)


def _grants(statement):
    """(action, resources, condition) triples of one Allow statement, comparable across files."""
    resources = tuple(sorted(_list(statement["Resource"])))
    condition = json.dumps(statement.get("Condition") or {}, sort_keys=True)
    return {(a, resources, condition) for a in _list(statement["Action"])}


def _narrower(grant, than) -> bool:
    """Whether a grant allows no more than `than`: each resource inside one of its patterns, and
    each of its conditions kept (more may be added)."""
    action, resources, condition = grant
    if action != than[0] or not all(any(fnmatch.fnmatchcase(r, p) for p in than[1]) for r in resources):
        return False
    mine, theirs = json.loads(condition), json.loads(than[2])
    return all(
        key in mine.get(op, {}) and mine[op][key] == value
        for op, keys in theirs.items()
        for key, value in keys.items()
    )


def policy_differences(
    ours: dict, upstream: dict, left_out: dict = ALB_ONLY, narrowed: dict = NARROWED
) -> list[str]:
    """Upstream statement by statement: every grant (action on resources under a condition) that
    ours lacks, then every grant of ours upstream does not make. An action of `narrowed` may
    instead be granted by narrower grants only: each no wider than an upstream grant of it."""
    assert all(s["Effect"] == "Allow" for s in ours["Statement"] + upstream["Statement"])
    mine = set().union(*(_grants(s) for s in ours["Statement"]))
    theirs = set()
    problems = []
    for i, statement in enumerate(upstream["Statement"]):
        for grant in sorted(_grants(statement)):
            if grant[0] in left_out:
                continue
            theirs.add(grant)
            if grant not in mine and grant[0] not in narrowed:
                problems.append(
                    f"upstream statement {i}: {grant[0]} on {list(grant[1])} "
                    f"with condition {grant[2]} is missing"
                )
    for action in sorted(narrowed):
        if not any(g[0] == action for g in mine):
            problems.append(f"{action} is not granted at all (narrowed: {narrowed[action]})")
    problems += [
        f"{a} on {list(r)} with condition {c} is not in the upstream policy"
        for a, r, c in sorted(mine - theirs)
        if a not in narrowed or not any(_narrower((a, r, c), t) for t in theirs)
    ]
    return problems


@pytest.fixture(scope="module")
def upstream():
    return json.loads(reference_data.path(*UPSTREAM).read_text())


@pytest.fixture(scope="module")
def ours(dev):
    return json.loads(dev.named("lbc-policy").inputs["policy"])


def test_policy_is_equal_in_effect_to_upstream(ours, upstream):
    assert policy_differences(ours, upstream) == []


def test_every_left_out_action_is_an_upstream_action_ours_does_not_grant(ours, upstream):
    upstream_actions = {a for s in upstream["Statement"] for a in _list(s["Action"])}
    our_actions = {a for s in ours["Statement"] for a in _list(s["Action"])}
    assert set(ALB_ONLY) <= upstream_actions
    assert set(ALB_ONLY) & our_actions == set()


@pytest.mark.parametrize(
    "action",
    [
        "ec2:DeleteSecurityGroup",
        "elasticloadbalancing:DeleteLoadBalancer",
        "elasticloadbalancing:CreateTargetGroup",
        "ec2:CreateTags",
    ],
)
def test_deletes_and_creates_are_fenced_by_the_cluster_tag(ours, action):
    for statement in ours["Statement"]:
        if action in _list(statement["Action"]):
            assert "elbv2.k8s.aws/cluster" in json.dumps(statement["Condition"]), statement


def test_a_missing_action_is_found(ours, upstream):
    broken = copy.deepcopy(ours)
    for statement in broken["Statement"]:
        statement["Action"] = [
            a for a in _list(statement["Action"]) if a != "elasticloadbalancing:SetSubnets"
        ]
    (problem,) = policy_differences(broken, upstream)
    assert problem.startswith("upstream statement 12: elasticloadbalancing:SetSubnets")


def test_a_dropped_condition_is_found(ours, upstream):
    broken = copy.deepcopy(ours)
    for statement in broken["Statement"]:
        if "ec2:DeleteSecurityGroup" in _list(statement["Action"]):
            del statement["Condition"]
    # Its rule changes stay narrower than upstream's unconditioned ones; the delete does not.
    assert policy_differences(broken, upstream) == [
        f"ec2:DeleteSecurityGroup on ['arn:aws:ec2:{REGION}:{ACCOUNT}:security-group/*'] with condition {{}} "
        "is not in the upstream policy"
    ]


def test_a_loosened_condition_is_found(ours, upstream):
    broken = copy.deepcopy(ours)
    for statement in broken["Statement"]:
        if "elasticloadbalancing:CreateLoadBalancer" in _list(statement["Action"]):
            statement["Condition"] = {"Null": {"aws:RequestTag/elbv2.k8s.aws/cluster": "true"}}
    assert any(
        p.startswith("upstream statement 8: elasticloadbalancing:CreateLoadBalancer")
        for p in policy_differences(broken, upstream)
    )


def test_a_widened_resource_is_found(ours, upstream):
    broken = copy.deepcopy(ours)
    for statement in broken["Statement"]:
        if "elasticloadbalancing:RegisterTargets" in _list(statement["Action"]):
            statement["Resource"] = "*"
    assert any(
        p.startswith("upstream statement 14: elasticloadbalancing:RegisterTargets")
        for p in policy_differences(broken, upstream)
    )


def test_an_alb_only_action_granted_anyway_is_found(ours, upstream):
    broken = copy.deepcopy(ours)
    broken["Statement"].append({"Effect": "Allow", "Action": "wafv2:AssociateWebACL", "Resource": "*"})
    assert policy_differences(broken, upstream) == [
        "wafv2:AssociateWebACL on ['*'] with condition {} is not in the upstream policy"
    ]


def _granting(policy: dict, action: str) -> list[dict]:
    return [s for s in policy["Statement"] if action in _list(s["Action"])]


@pytest.mark.parametrize(
    "action",
    ["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress", "ec2:DeleteSecurityGroup"],
)
def test_security_group_rules_change_only_on_groups_in_this_vpc(ours, action):
    for statement in _granting(ours, action):
        assert statement["Resource"] == f"arn:aws:ec2:{REGION}:{ACCOUNT}:security-group/*", statement
        assert statement["Condition"]["ArnEquals"] == {"ec2:Vpc": VPC_ARN}, statement


def test_security_groups_are_created_only_in_this_vpc_and_tagged(ours):
    by_resource = {s["Resource"]: s.get("Condition") for s in _granting(ours, "ec2:CreateSecurityGroup")}
    assert by_resource == {
        VPC_ARN: None,
        f"arn:aws:ec2:{REGION}:{ACCOUNT}:security-group/*": {
            "Null": {"aws:RequestTag/elbv2.k8s.aws/cluster": "false"}
        },
    }


@pytest.mark.parametrize(
    "action, resource",
    [
        (
            "elasticloadbalancing:CreateListener",
            f"arn:aws:elasticloadbalancing:{REGION}:{ACCOUNT}:loadbalancer/net/*/*",
        ),
        *[
            (
                f"elasticloadbalancing:{a}",
                f"arn:aws:elasticloadbalancing:{REGION}:{ACCOUNT}:listener/net/*/*/*",
            )
            for a in (
                "DeleteListener",
                "ModifyListener",
                "AddListenerCertificates",
                "RemoveListenerCertificates",
            )
        ],
    ],
)
def test_listeners_change_only_on_this_accounts_tagged_load_balancers(ours, action, resource):
    (statement,) = _granting(ours, action)
    assert statement["Resource"] == resource
    assert statement["Condition"] == {"Null": {"aws:ResourceTag/elbv2.k8s.aws/cluster": "false"}}


def test_listeners_are_tagged_only_at_creation_or_while_they_carry_the_tag(ours):
    listeners = f"arn:aws:elasticloadbalancing:{REGION}:{ACCOUNT}:listener/net/*/*/*"
    tagging = {"elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"}
    on_listeners = [
        s
        for s in ours["Statement"]
        if tagging & set(_list(s["Action"])) and any("listener" in r for r in _list(s["Resource"]))
    ]
    assert sorted(
        (tuple(s["Action"]), json.dumps(s.get("Condition"), sort_keys=True)) for s in on_listeners
    ) == sorted(
        [
            (
                ("elasticloadbalancing:AddTags",),
                json.dumps(
                    {
                        "StringEquals": {"elasticloadbalancing:CreateAction": "CreateListener"},
                        "Null": {"aws:RequestTag/elbv2.k8s.aws/cluster": "false"},
                    },
                    sort_keys=True,
                ),
            ),
            (
                ("elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"),
                json.dumps(
                    {
                        "Null": {
                            "aws:RequestTag/elbv2.k8s.aws/cluster": "true",
                            "aws:ResourceTag/elbv2.k8s.aws/cluster": "false",
                        }
                    },
                    sort_keys=True,
                ),
            ),
        ]
    )
    assert all(s["Resource"] == listeners for s in on_listeners)


def test_no_write_is_granted_on_every_resource_without_a_condition(ours):
    reads = ("Describe", "Get", "List")
    unfenced = [
        a
        for s in ours["Statement"]
        if s["Resource"] == "*" and not s.get("Condition")
        for a in _list(s["Action"])
        if not a.split(":")[1].startswith(reads)
    ]
    assert unfenced == []


def test_a_narrowing_not_declared_is_found(ours, upstream):
    broken = copy.deepcopy(ours)
    for statement in _granting(broken, "elasticloadbalancing:RegisterTargets"):
        statement["Resource"] = f"arn:aws:elasticloadbalancing:{REGION}:{ACCOUNT}:targetgroup/*/*"
    assert policy_differences(broken, upstream)[0].startswith(
        "upstream statement 14: elasticloadbalancing:DeregisterTargets"
    )


def test_a_narrowed_action_left_out_altogether_is_found(ours, upstream):
    broken = copy.deepcopy(ours)
    broken["Statement"] = [
        s for s in broken["Statement"] if "elasticloadbalancing:CreateListener" not in _list(s["Action"])
    ]
    assert policy_differences(broken, upstream) == [
        "elasticloadbalancing:CreateListener is not granted at all (narrowed: only on this account's tagged NLBs)"
    ]
