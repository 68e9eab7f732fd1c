"""The security review, repeatable: export the offline run of each configuration users deploy
(CONFIGURATIONS: the dev stack, an autoscaling pool, named users, the deployer's Docker build, a VPC
and an EKS cluster the stack is given; metrics on, the default, in all)
with devkit/security_export.py, scan each with checkov (kubernetes and terraform_plan frameworks)
and parliament (the IAM documents), and hold every finding against the triage table
(devkit/security_triage.py). Prints the counts per check id over every configuration and every
finding the table does not explain, with the configurations it is found in.

    make security-review            # = python -m devkit.security_review --out build/security-review
    python -m devkit.security_review --out DIR [--tools BIN] [--export-only] [--config KEY=VALUE ...]

The scanners come from their own cached virtualenv (devkit/security_tools.sh; --tools names
another bin/). Writes, per configuration NAME, the inputs under DIR/NAME/scanned/ (kubernetes/,
terraform/plan.json, iam/, iam-trust/, iam-managed.json) and the raw results DIR/NAME/checkov.json
and DIR/NAME/parliament.json; then DIR/findings.json (counts and findings) and DIR/report.txt (what
it prints). With --config, only the dev stack with those keys set is reviewed (configuration
`custom`). Exit status: 0 every finding explained; 1 some unexplained (listed); 2 a scanner failed.
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import json
import pathlib
import subprocess
import sys
from dataclasses import asdict, dataclass

from devkit import chart_render, offline_account, security_export
from devkit.offline_run import run_program
from devkit.security_triage import TRIAGE, Triage

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOLS_SCRIPT = ROOT / "devkit" / "security_tools.sh"
CHECKOV_FRAMEWORKS = ("kubernetes", "terraform_plan")
# An example key for the review's named users (the dev stack's, Pulumi.dev.yaml): its private half
# was discarded. Two users, one an admin: the homes Job and the identities' init containers exist
# only with `users` (components/user_identities.py).
_REVIEW_KEY = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHo5XTHwRWToEb42mcBir6wbQZm9zUSpHChjh8bS0mXM dev-stack-example"
)
# What users deploy, as overrides of the dev stack (Pulumi.dev.yaml): each adds what only it has.
# `metrics` is on in every one (its default, Pulumi.yaml): the DCGM exporter, Grafana, the workspace.
CONFIGURATIONS: dict[str, dict] = {
    "dev": {},
    # An autoscaling pool: KEDA, cluster-autoscaler and their identities (docs/scaling.md).
    "autoscaling": {"gpuMinNodes": 0, "gpuMaxNodes": 4},
    "users": {
        "users": [
            {"name": "alice", "uid": 2001, "admin": True, "sshPublicKey": _REVIEW_KEY},
            {"name": "bob", "uid": 2002, "sshPublicKey": _REVIEW_KEY},
        ]
    },
    # The image built by the deployer's Docker instead of CodeBuild (imageBuilder).
    "local-builder": {"imageBuilder": "local"},
    # Into the offline account's landing-zone VPC (README, "Into an existing VPC").
    "existing-vpc": {
        "vpcId": offline_account.LANDING_ZONE_VPC,
        "privateSubnetIds": list(offline_account.LANDING_ZONE_PRIVATE.values()),
        "publicSubnetIds": list(offline_account.LANDING_ZONE_PUBLIC.values()),
    },
    # Into its EKS cluster, with every shared add-on the cluster lacks (docs/existing-cluster.md).
    "existing-cluster": {
        "existingClusterName": offline_account.EXISTING_CLUSTER_NAME,
        "vpcId": offline_account.LANDING_ZONE_VPC,
        "privateSubnetIds": list(offline_account.LANDING_ZONE_PRIVATE.values()),
        "publicSubnetIds": list(offline_account.LANDING_ZONE_PUBLIC.values()),
    },
}
# The account a configuration is run against, where it is not the dev account.
ACCOUNTS: dict[str, offline_account.Account] = {
    "existing-vpc": offline_account.LANDING_ZONE,
    "existing-cluster": offline_account.EXISTING_CLUSTER,
}
# What the scanners read, apart from what they write: checkov walks every file under its directory.
SCANNED = "scanned"


@dataclass(frozen=True)
class Finding:
    """One failed check: which tool and framework, the check, what it failed on, and for
    parliament the actions or condition it names (detail) and its severity."""

    tool: str  # checkov | parliament
    framework: str  # kubernetes | terraform_plan | iam
    check: str  # CKV_K8S_16, RESOURCE_STAR, ...
    resource: str  # DaemonSet.kube-system.nvidia-device-plugin, aws_vpc.network_vpc, lbc_policy
    detail: str = ""
    severity: str = ""


def checkov_reports(text: str) -> list[dict]:
    """checkov's `-o json` output: with several --directory it prints one JSON value after another,
    each a report or a list of one report per framework."""
    decoder, reports, at = json.JSONDecoder(), [], 0
    while at < len(text):
        if text[at].isspace():
            at += 1
            continue
        value, at = decoder.raw_decode(text, at)
        reports += value if isinstance(value, list) else [value]
    return reports


def checkov_findings(reports: list[dict]) -> list[Finding]:
    """The failed checks of checkov's reports (checkov_reports)."""
    out = []
    for report in reports:
        for failed in report.get("results", {}).get("failed_checks", []):
            out.append(
                Finding(
                    "checkov",
                    report["check_type"],
                    failed["check_id"],
                    failed["resource"],
                    failed.get("check_name") or "",
                )
            )
    return out


def parliament_findings(lines: str) -> list[Finding]:
    """parliament --json prints one finding per line; the resource is the policy's file stem."""
    out = []
    for line in lines.splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        detail = item.get("detail")
        # A string, a list of actions, or a list of objects (RESOURCE_MISMATCH: action and format).
        items = detail if isinstance(detail, list) else [detail] if detail else []
        detail = ", ".join(i if isinstance(i, str) else json.dumps(i, sort_keys=True) for i in items)
        where = pathlib.Path(item.get("location", {}).get("filepath", "")).name
        out.append(
            Finding(
                "parliament",
                "iam",
                item["issue"],
                where.removesuffix(".json"),
                detail,
                item.get("severity", ""),
            )
        )
    return out


def explanation(finding: Finding, table: tuple[Triage, ...] = TRIAGE) -> Triage | None:
    """The first triage entry that explains `finding`, or None: it is unexplained."""
    for entry in table:
        if (
            entry.tool == finding.tool
            and entry.check == finding.check
            and any(fnmatch.fnmatchcase(finding.resource, r) for r in entry.resources)
            and fnmatch.fnmatchcase(finding.detail, entry.detail)
        ):
            return entry
    return None


def triage(
    findings: list[Finding], table: tuple[Triage, ...] = TRIAGE
) -> tuple[list[tuple[Finding, Triage]], list[Finding], list[Triage]]:
    """(explained with their entries, unexplained, entries that explained nothing)."""
    explained, unexplained, used = [], [], set()
    for f in findings:
        entry = explanation(f, table)
        if entry is None:
            unexplained.append(f)
        else:
            explained.append((f, entry))
            used.add(entry)
    return explained, unexplained, [e for e in table if e not in used]


def counts(findings: list[Finding]) -> dict:
    """Checkov's failed checks by framework and check id; parliament's findings by severity and issue."""
    out: dict = {"checkov": {}, "parliament": {}}
    for f in findings:
        if f.tool == "checkov":
            out["checkov"].setdefault(f.framework, collections.Counter())[f.check] += 1
        else:
            out["parliament"].setdefault(f.severity, collections.Counter())[f.check] += 1
    return {
        tool: {group: dict(sorted(c.items())) for group, c in sorted(groups.items())}
        for tool, groups in out.items()
    }


def report(
    findings: list[Finding], table: tuple[Triage, ...] = TRIAGE, where: dict[Finding, list[str]] | None = None
) -> str:
    """What the review prints; `where` names the configurations each finding is found in."""
    explained, unexplained, unused = triage(findings, table)
    lines = []
    for tool, groups in counts(findings).items():
        for group, by_check in groups.items():
            lines.append(f"{tool} {group}: {sum(by_check.values())}")
            lines += [f"  {n:4d} {check}" for check, n in by_check.items()]
    lines.append(
        f"explained by devkit/security_triage.py: {len(explained)} "
        f"({sum(e.verdict == 'accepted' for _, e in explained)} accepted, "
        f"{sum(e.verdict == 'not applicable' for _, e in explained)} not applicable)"
    )
    lines.append(f"UNEXPLAINED: {len(unexplained)}")
    lines += [
        f"  {f.tool} {f.framework} {f.check} {f.resource}"
        + (f" [{f.detail}]" if f.detail else "")
        + (f" (in: {', '.join(where[f])})" if where else "")
        for f in unexplained
    ]
    if unused:
        lines.append(f"triage entries that matched nothing (fixed since? remove them): {len(unused)}")
        lines += [f"  {e.tool} {e.check} {', '.join(e.resources)}" for e in unused]
    return "\n".join(lines) + "\n"


def tools_bin(explicit: str | None) -> pathlib.Path:
    if explicit:
        return pathlib.Path(explicit)
    done = subprocess.run(["bash", str(TOOLS_SCRIPT)], check=True, capture_output=True, text=True)
    return pathlib.Path(done.stdout.strip().splitlines()[-1])


def export(
    out: pathlib.Path, overrides: dict | None = None, account: offline_account.Account = offline_account.DEV
) -> dict:
    graph = run_program("dev", overrides, account=account)
    rendered = chart_render.render_graph_release_sources(graph)
    return security_export.write_all(graph, rendered, out / SCANNED)


def merged(by_configuration: dict[str, list[Finding]]) -> dict[Finding, list[str]]:
    """Each distinct finding with the configurations it is found in, in CONFIGURATIONS' order."""
    out: dict[Finding, list[str]] = {}
    for name, findings in by_configuration.items():
        for f in dict.fromkeys(findings):
            out.setdefault(f, []).append(name)
    return out


def run_checkov(bin_dir: pathlib.Path, out: pathlib.Path) -> list[Finding]:
    # Exit 1 means failed checks; anything else with no JSON is the scanner failing.
    done = subprocess.run(
        [
            str(bin_dir / "checkov"),
            "--directory",
            str(out / SCANNED),
            "--framework",
            *CHECKOV_FRAMEWORKS,
            "--output",
            "json",
            "--quiet",
            "--skip-download",
            "--compact",
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 1) or not done.stdout.strip():
        raise RuntimeError(f"checkov exited {done.returncode}: {done.stderr[-2000:]}")
    (out / "checkov.json").write_text(done.stdout)
    return checkov_findings(checkov_reports(done.stdout))


def run_parliament(bin_dir: pathlib.Path, out: pathlib.Path) -> list[Finding]:
    done = subprocess.run(
        [str(bin_dir / "parliament"), "--directory", str(out / SCANNED / "iam"), "--json"],
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"parliament exited {done.returncode}: {done.stderr[-2000:]}")
    (out / "parliament.json").write_text(done.stdout)
    return parliament_findings(done.stdout)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="security_review", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--out", type=pathlib.Path, default=ROOT / "build" / "security-review")
    p.add_argument(
        "--tools", help="a bin/ holding checkov and parliament (default: devkit/security_tools.sh's)"
    )
    p.add_argument("--export-only", action="store_true", help="write the scanners' inputs and stop")
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="review only the dev stack with this key set too (e.g. gpuMaxNodes=4); repeatable",
    )
    args = p.parse_args(argv)
    try:
        overrides = dict(item.split("=", 1) for item in args.config)
    except ValueError:
        p.error(f"--config takes KEY=VALUE, got {args.config}")
    configurations = {"custom": overrides} if overrides else CONFIGURATIONS
    for name, config in configurations.items():
        written = export(args.out / name, config, ACCOUNTS.get(name, offline_account.DEV))
        print(f"{name}: exported " + ", ".join(f"{n} {what}" for what, n in written.items()))
    if args.export_only:
        return 0
    try:
        bin_dir = tools_bin(args.tools)
        by_configuration = {
            name: run_checkov(bin_dir, args.out / name) + run_parliament(bin_dir, args.out / name)
            for name in configurations
        }
    except (RuntimeError, subprocess.CalledProcessError) as e:
        print(f"security review: a scanner failed: {e}", file=sys.stderr)
        return 2
    found = merged(by_configuration)
    findings = list(found)
    text = f"configurations: {', '.join(configurations)}\n" + report(findings, where=found)
    (args.out / "report.txt").write_text(text)
    (args.out / "findings.json").write_text(
        json.dumps(
            {
                "configurations": configurations,
                "counts": counts(findings),
                "findings": [{**asdict(f), "configurations": found[f]} for f in findings],
            },
            indent=1,
            sort_keys=True,
        )
        + "\n"
    )
    print(text, end="")
    return 0 if not triage(findings)[1] else 1


if __name__ == "__main__":
    sys.exit(main())
