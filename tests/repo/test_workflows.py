"""The CI workflows teams copy (.github/workflows, docs/ci.md): they pass actionlint (as make test
runs it), pin every action by commit, grant each job only what it uses, reach AWS only through
GitHub's OIDC provider, update the stack only behind the environment's reviewers, and check the
runner against the API endpoint's blocks before Pulumi runs."""

import re
import shutil
import subprocess

import pytest
import yaml

from tests.support.paths import REPO
from tools import ci_role

WORKFLOWS = REPO / ".github/workflows"
ACTIONLINT = [
    str(REPO / ".venv/bin/actionlint"),
    f"-shellcheck={REPO / '.venv/bin/shellcheck'}",
    "-pyflakes=",
]
ENVIRONMENT = "slinky-eks"  # tools/ci_role.py's default --environment: the deploy role trusts it


def workflow(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def triggers(document: dict) -> dict:
    # PyYAML reads the key `on` as the boolean True (YAML 1.1).
    return document[True]


def steps(document: dict, job: str) -> list[dict]:
    return document["jobs"][job]["steps"]


def lint(*paths, cwd=REPO):
    return subprocess.run(
        [*ACTIONLINT, *map(str, paths)], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_the_workflows_are_the_three_docs_ci_md_describes():
    assert sorted(p.name for p in WORKFLOWS.iterdir()) == ["destroy.yml", "preview.yml", "up.yml"]


def test_the_workflows_pass_actionlint():
    result = lint()
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_fails_a_broken_workflow(tmp_path):
    broken = tmp_path / ".github/workflows"
    broken.mkdir(parents=True)
    text = (WORKFLOWS / "up.yml").read_text()
    # An expression naming a context that does not exist, as a typo would.
    (broken / "up.yml").write_text(
        text.replace("${{ steps.stack.outputs.region }}", "${{ step.stack.outputs.region }}")
    )
    result = lint(broken / "up.yml", cwd=tmp_path)
    assert result.returncode == 1 and 'undefined variable "step"' in result.stdout


def test_make_test_and_test_fast_run_actionlint_before_pytest():
    makefile = (REPO / "Makefile").read_text()
    for target in ("test", "test-fast"):
        recipe = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", makefile, re.M).group(1)
        assert recipe.index("$(ACTIONLINT)") < recipe.index("$(PYTEST)")
    assert re.search(
        r"^ACTIONLINT = \$\(VENV\)/bin/actionlint -shellcheck=\$\(VENV\)/bin/shellcheck", makefile, re.M
    )


@pytest.mark.parametrize("name", ["preview.yml", "up.yml", "destroy.yml"])
def test_every_action_is_pinned_by_commit_with_its_release_named(name):
    uses = re.findall(r"uses: (\S+)(.*)", (WORKFLOWS / name).read_text())
    assert uses
    for action, comment in uses:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", action), action
        assert re.fullmatch(r" # v\d+\.\d+\.\d+", comment), f"{action}{comment}"


@pytest.mark.parametrize("name", ["preview.yml", "up.yml", "destroy.yml"])
def test_the_workflow_grants_nothing_and_each_job_only_what_it_uses(name):
    document = workflow(name)
    assert document["permissions"] == {}
    for job in document["jobs"].values():
        uses_aws = any("configure-aws-credentials" in s.get("uses", "") for s in job["steps"])
        granted = job.get("permissions", {})
        assert granted.get("id-token") == ("write" if uses_aws else None)
        assert set(granted) <= {"contents", "id-token", "pull-requests"}
        assert granted.get("contents") in (None, "read")


@pytest.mark.parametrize("name", ["preview.yml", "up.yml", "destroy.yml"])
def test_aws_is_reached_only_through_a_role_never_a_key(name):
    text = (WORKFLOWS / name).read_text()
    assert "aws-access-key-id" not in text and "AWS_SECRET_ACCESS_KEY" not in text
    for step in (s for job in workflow(name)["jobs"].values() for s in job["steps"]):
        if "configure-aws-credentials" in step.get("uses", ""):
            assert step["with"]["role-to-assume"].startswith("${{ vars.AWS_")


@pytest.mark.parametrize(
    "name, job", [("preview.yml", "preview"), ("up.yml", "up"), ("destroy.yml", "destroy")]
)
def test_the_runner_is_checked_against_the_api_blocks_before_pulumi_runs(name, job):
    names = [s.get("run", "") + s.get("uses", "") for s in steps(workflow(name), job)]
    check = next(i for i, s in enumerate(names) if "python -m tools.api_reach" in s)
    pulumi = next(i for i, s in enumerate(names) if s.startswith("pulumi/actions@"))
    credentials = next(i for i, s in enumerate(names) if "configure-aws-credentials" in s)
    assert credentials < check < pulumi


def test_preview_runs_on_pull_requests_and_comments_the_diff():
    document = workflow("preview.yml")
    assert set(triggers(document)) == {"pull_request"}
    pulumi = next(s for s in steps(document, "preview") if s.get("uses", "").startswith("pulumi/actions@"))
    assert pulumi["with"]["command"] == "preview" and pulumi["with"]["comment-on-pr"] is True
    assert document["jobs"]["preview"]["permissions"]["pull-requests"] == "write"
    assert "AWS_PREVIEW_ROLE_ARN" in str(document) and "AWS_DEPLOY_ROLE_ARN" not in str(document)


def test_up_runs_on_main_behind_the_environment_then_verifies_from_the_outputs():
    document = workflow("up.yml")
    assert triggers(document) == {"push": {"branches": ["main"]}}
    assert document["jobs"]["up"]["environment"] == ENVIRONMENT
    runs = [s.get("run", "") + s.get("uses", "") for s in steps(document, "up")]
    up = next(i for i, s in enumerate(runs) if s.startswith("pulumi/actions@"))
    assert steps(document, "up")[up]["with"]["command"] == "up"
    verify = runs[-1]
    assert runs.index(verify) > up
    assert 'pulumi stack output --stack "$STACK" --json --show-secrets' in verify
    assert ".venv/bin/python -m tools.verify" in verify


def test_destroy_runs_by_hand_only_after_the_stack_name_is_typed():
    document = workflow("destroy.yml")
    assert set(triggers(document)) == {"workflow_dispatch"}
    assert triggers(document)["workflow_dispatch"]["inputs"]["confirm"]["required"] is True
    destroy = document["jobs"]["destroy"]
    assert destroy["needs"] == "confirm" and destroy["environment"] == ENVIRONMENT
    check = document["jobs"]["confirm"]["steps"][0]
    assert check["env"] == {"CONFIRM": "${{ inputs.confirm }}"} and '"$CONFIRM" != "$STACK"' in check["run"]


def test_the_typed_confirmation_refuses_another_name(tmp_path):
    check = workflow("destroy.yml")["jobs"]["confirm"]["steps"][0]["run"]
    run = [shutil.which("bash"), "-eo", "pipefail", "-c", check]
    refused = subprocess.run(run, env={"CONFIRM": "prod", "STACK": "dev"}, capture_output=True, text=True)
    assert refused.returncode == 1
    assert refused.stdout.strip() == "::error::typed 'prod', not the stack's name 'dev': nothing is destroyed"
    assert subprocess.run(run, env={"CONFIRM": "dev", "STACK": "dev"}).returncode == 0


BACKEND_STEP = "A state backend the team shares"


@pytest.mark.parametrize(
    "name, job", [("preview.yml", "preview"), ("up.yml", "up"), ("destroy.yml", "destroy")]
)
def test_every_pulumi_run_first_checks_for_a_state_backend_the_team_shares(name, job):
    names = [s.get("name", "") + s.get("uses", "") for s in steps(workflow(name), job)]
    assert names.index(BACKEND_STEP) < next(i for i, s in enumerate(names) if s.startswith("pulumi/actions@"))


@pytest.mark.parametrize(
    "project, token, code",
    [
        ("name: slinky-eks\nruntime: python\n", "", 1),
        ("name: slinky-eks\nruntime: python\nbackend:\n  url: s3://team-state?region=us-west-2\n", "", 0),
        ("name: slinky-eks\nruntime: python\n", "pul-0123", 0),
    ],
    ids=["none", "pulumi-yaml", "pulumi-cloud-token"],
)
def test_ci_refuses_state_that_only_its_runner_would_see(tmp_path, project, token, code):
    check = next(s for s in steps(workflow("up.yml"), "up") if s.get("name") == BACKEND_STEP)["run"]
    (tmp_path / "Pulumi.yaml").write_text(project)
    result = subprocess.run(
        [shutil.which("bash"), "-eo", "pipefail", "-c", check],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PULUMI_ACCESS_TOKEN": token},
        capture_output=True,
        text=True,
    )
    assert result.returncode == code
    if code:
        assert result.stdout.startswith(
            "::error::Pulumi.yaml names no backend.url and no PULUMI_ACCESS_TOKEN"
        )


@pytest.mark.parametrize("name", ["preview.yml", "up.yml", "destroy.yml"])
def test_the_pulumi_cli_the_action_installs_is_the_sdk_s_release(name):
    sdk = re.search(r"^pulumi==([\d.]+)$", (REPO / "requirements.txt").read_text(), re.M).group(1)
    actions = [
        s
        for job in workflow(name)["jobs"].values()
        for s in job["steps"]
        if s.get("uses", "").startswith("pulumi/")
    ]
    assert actions and {str(s["with"]["pulumi-version"]) for s in actions} == {sdk}


def secret_references(node) -> bool:
    return "secrets." in str(node)


@pytest.mark.parametrize("name", ["preview.yml", "up.yml", "destroy.yml"])
def test_no_job_outside_an_environment_references_a_secret(name):
    # A repository secret reaches every job of every branch; an environment's secrets only the
    # jobs its reviewers approved (docs/ci.md, "Setting it up, in order").
    document = workflow(name)
    assert not secret_references({k: v for k, v in document.items() if k != "jobs"})
    assert [
        j for j, job in document["jobs"].items() if secret_references(job) and not job.get("environment")
    ] == []


def test_preview_runs_in_its_own_environment_which_the_preview_role_trusts():
    job = workflow("preview.yml")["jobs"]["preview"]
    assert job["environment"] == "slinky-eks-preview" != ENVIRONMENT
    assert ci_role.preview_subject("acme/slinky-eks", job["environment"]) == (
        "repo:acme/slinky-eks:environment:slinky-eks-preview"
    )
