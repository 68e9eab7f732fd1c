"""The load balancer controller's IAM policy is equal in effect to the controller's own policy for
the pinned version (kubernetes-sigs/aws-load-balancer-controller docs/install/iam_policy.json at
v2.17.1, read in place from the reference data), less actions only Ingresses (ALBs) use."""
import copy
import json

import pytest

from devkit import reference_data

UPSTREAM = ("aws-load-balancer-controller-v2.17.1-iam-policy.json",)

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


def _list(value):
    return [value] if isinstance(value, str) else list(value)


def _grants(statement):
    """(action, resources, condition) triples of one Allow statement, comparable across files."""
    resources = tuple(sorted(_list(statement["Resource"])))
    condition = json.dumps(statement.get("Condition") or {}, sort_keys=True)
    return {(a, resources, condition) for a in _list(statement["Action"])}


def policy_differences(ours: dict, upstream: dict, left_out: dict = ALB_ONLY) -> list[str]:
    """Upstream statement by statement: every grant (action on resources under a condition) that
    ours lacks, then every grant of ours upstream does not make."""
    assert all(s["Effect"] == "Allow" for s in ours["Statement"] + upstream["Statement"])
    mine = set().union(*(_grants(s) for s in ours["Statement"]))
    theirs = set()
    problems = []
    for i, statement in enumerate(upstream["Statement"]):
        for grant in sorted(_grants(statement)):
            if grant[0] in left_out:
                continue
            theirs.add(grant)
            if grant not in mine:
                problems.append(f"upstream statement {i}: {grant[0]} on {list(grant[1])} "
                                f"with condition {grant[2]} is missing")
    problems += [f"{a} on {list(r)} with condition {c} is not in the upstream policy"
                 for a, r, c in sorted(mine - theirs)]
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


@pytest.mark.parametrize("action", ["ec2:DeleteSecurityGroup", "elasticloadbalancing:DeleteLoadBalancer",
                                    "elasticloadbalancing:CreateTargetGroup", "ec2:CreateTags"])
def test_deletes_and_creates_are_fenced_by_the_cluster_tag(ours, action):
    for statement in ours["Statement"]:
        if action in _list(statement["Action"]):
            assert "elbv2.k8s.aws/cluster" in json.dumps(statement["Condition"]), statement


def test_a_missing_action_is_found(ours, upstream):
    broken = copy.deepcopy(ours)
    for statement in broken["Statement"]:
        statement["Action"] = [a for a in _list(statement["Action"]) if a != "elasticloadbalancing:SetSubnets"]
    (problem,) = policy_differences(broken, upstream)
    assert problem.startswith("upstream statement 12: elasticloadbalancing:SetSubnets")


def test_a_dropped_condition_is_found(ours, upstream):
    broken = copy.deepcopy(ours)
    for statement in broken["Statement"]:
        if "ec2:DeleteSecurityGroup" in _list(statement["Action"]):
            del statement["Condition"]
    problems = policy_differences(broken, upstream)
    assert any(p.startswith("upstream statement 7: ec2:DeleteSecurityGroup") for p in problems)
    assert any(p.startswith("ec2:DeleteSecurityGroup on ['*'] with condition {} is not in") for p in problems)


def test_a_loosened_condition_is_found(ours, upstream):
    broken = copy.deepcopy(ours)
    for statement in broken["Statement"]:
        if "elasticloadbalancing:CreateLoadBalancer" in _list(statement["Action"]):
            statement["Condition"] = {"Null": {"aws:RequestTag/elbv2.k8s.aws/cluster": "true"}}
    assert any(p.startswith("upstream statement 8: elasticloadbalancing:CreateLoadBalancer")
               for p in policy_differences(broken, upstream))


def test_a_widened_resource_is_found(ours, upstream):
    broken = copy.deepcopy(ours)
    for statement in broken["Statement"]:
        if "elasticloadbalancing:RegisterTargets" in _list(statement["Action"]):
            statement["Resource"] = "*"
    assert any(p.startswith("upstream statement 14: elasticloadbalancing:RegisterTargets")
               for p in policy_differences(broken, upstream))


def test_an_alb_only_action_granted_anyway_is_found(ours, upstream):
    broken = copy.deepcopy(ours)
    broken["Statement"].append({"Effect": "Allow", "Action": "wafv2:AssociateWebACL", "Resource": "*"})
    assert policy_differences(broken, upstream) == [
        "wafv2:AssociateWebACL on ['*'] with condition {} is not in the upstream policy"]
