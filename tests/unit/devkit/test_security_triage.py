"""Every finding of the security review is matched against one table (devkit/security_triage.py):
what it explains is counted as explained, anything else is reported as unexplained and fails the
review; the security page's "Accepted findings" is that table, and each entry's section is a
heading of the page. The scanners' output formats are parsed as checkov 3.3.30 and parliament
1.6.4 print them, from samples written here."""

import json
import re

from devkit import security_review, security_triage
from devkit.security_review import Finding
from devkit.security_triage import ACCEPTED, TRIAGE, Triage
from tests.support.paths import REPO

PAGE = REPO / "docs" / "security.md"
NETWORK_POLICY = Finding("checkov", "kubernetes", "CKV2_K8S_6", "Deployment.slurm.slurm-state-volume-guard")
PRIVILEGED_ELSEWHERE = Finding("checkov", "kubernetes", "CKV_K8S_16", "DaemonSet.slurm.someone-elses")


def test_a_finding_the_table_names_is_explained():
    explained, unexplained, _ = security_review.triage([NETWORK_POLICY])
    assert [entry.section for _, entry in explained] == ["no-networkpolicy"] and unexplained == []


def test_a_finding_the_table_does_not_name_is_unexplained_and_fails_the_review():
    # Privileged is accepted for the device plugins only, not for any DaemonSet.
    _, unexplained, _ = security_review.triage([NETWORK_POLICY, PRIVILEGED_ELSEWHERE])
    assert unexplained == [PRIVILEGED_ELSEWHERE]
    text = security_review.report([NETWORK_POLICY, PRIVILEGED_ELSEWHERE])
    assert "UNEXPLAINED: 1\n  checkov kubernetes CKV_K8S_16 DaemonSet.slurm.someone-elses\n" in text


def test_parliaments_detail_narrows_an_entry():
    table = (
        Triage("parliament", "UNKNOWN_ACTION", ("lbc_policy",), ACCEPTED, "r", "s", detail="*ModifyIpPools*"),
    )
    known = Finding(
        "parliament",
        "iam",
        "UNKNOWN_ACTION",
        "lbc_policy",
        "Unknown action elasticloadbalancing:ModifyIpPools",
    )
    other = Finding("parliament", "iam", "UNKNOWN_ACTION", "lbc_policy", "Unknown action ec2:Made-up")
    assert [f for f, _ in security_review.triage([known, other], table)[0]] == [known]


def test_an_entry_that_matched_nothing_is_listed_as_stale():
    _, _, unused = security_review.triage([NETWORK_POLICY])
    assert unused and all(e.check != "CKV2_K8S_6" for e in unused)
    assert "triage entries that matched nothing" in security_review.report([NETWORK_POLICY])


def test_counts_are_by_framework_and_check_and_by_severity_and_issue():
    star = Finding("parliament", "iam", "RESOURCE_STAR", "lbc_policy", "iam:CreateServiceLinkedRole", "LOW")
    assert security_review.counts([NETWORK_POLICY, NETWORK_POLICY, star]) == {
        "checkov": {"kubernetes": {"CKV2_K8S_6": 2}},
        "parliament": {"LOW": {"RESOURCE_STAR": 1}},
    }


def test_checkovs_json_is_read_one_value_after_another():
    def report(kind, check, resource):
        return {
            "check_type": kind,
            "results": {"failed_checks": [{"check_id": check, "check_name": "n", "resource": resource}]},
            "summary": {},
        }

    text = (
        json.dumps(
            [report("kubernetes", "CKV_K8S_16", "Pod.a.b"), report("terraform_plan", "CKV_AWS_39", "x.y")]
        )
        + "\n"
        + json.dumps(report("kubernetes", "CKV_K8S_20", "Pod.c.d"))
    )
    found = security_review.checkov_findings(security_review.checkov_reports(text))
    assert [(f.framework, f.check, f.resource) for f in found] == [
        ("kubernetes", "CKV_K8S_16", "Pod.a.b"),
        ("terraform_plan", "CKV_AWS_39", "x.y"),
        ("kubernetes", "CKV_K8S_20", "Pod.c.d"),
    ]


def test_parliaments_lines_are_read_with_the_policy_file_as_the_resource():
    line = json.dumps(
        {
            "issue": "RESOURCE_STAR",
            "severity": "LOW",
            "detail": ["a:B", "a:C"],
            "location": {"filepath": "scanned/iam/lbc_policy.json"},
        }
    )
    assert security_review.parliament_findings(line + "\n") == [
        Finding("parliament", "iam", "RESOURCE_STAR", "lbc_policy", "a:B, a:C", "LOW")
    ]


def test_parliaments_detail_may_be_a_list_of_objects():
    # RESOURCE_MISMATCH names each action with the resource format it wants.
    line = json.dumps(
        {
            "issue": "RESOURCE_MISMATCH",
            "severity": "MEDIUM",
            "detail": [{"action": "logs:DescribeLogGroups", "required_format": "*"}],
            "location": {"filepath": "scanned/iam/delivery.json"},
        }
    )
    (found,) = security_review.parliament_findings(line)
    assert found.detail == '{"action": "logs:DescribeLogGroups", "required_format": "*"}'


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    return {
        re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
        for h in re.findall(r"^#+ (.+)$", markdown, re.M)
    }


def test_every_entry_names_a_section_of_the_security_page():
    anchors = _anchors(PAGE.read_text())
    assert {e.section for e in TRIAGE} - anchors == set()


def test_a_section_missing_from_the_page_is_found():
    assert "no-networkpolicy" not in _anchors(PAGE.read_text().replace("## No NetworkPolicy", "## Network"))


def test_the_pages_accepted_findings_are_the_triage_table():
    page = PAGE.read_text()
    assert security_triage.with_table(page) == page, "run: python -m devkit.security_triage"


def test_a_table_changed_without_the_page_is_found():
    page = PAGE.read_text()
    changed = TRIAGE[1:]
    assert security_triage.with_table(page, changed) != page


def test_the_scanners_stay_out_of_the_test_environment():
    for requirements in ("requirements.txt", "requirements-dev.txt"):
        text = (REPO / requirements).read_text().lower()
        assert "checkov" not in text and "parliament" not in text, requirements
