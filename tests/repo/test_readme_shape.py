"""The README is the deployer's way in: at most 300 lines; a quick start first, with what a
deployer needs, the make commands of a stack's life, how to make a stack other than dev, the
offline plan, and the walkthrough the design comes from; the two generated tables between their
markers; a link to each docs page. The contributor's detail (root filesystems, caches, benchmark
timings) lives in CONTRIBUTING.md, which the README links."""

import re

from tests.support.paths import REPO

MAX_LINES = 300
PAGES = (
    "docs/architecture.md",
    "docs/operations.md",
    "docs/extending.md",
    "docs/security.md",
    "docs/rules.md",
    "docs/upgrading.md",
    "docs/decisions/README.md",
    "CHANGELOG.md",
    "CONTRIBUTING.md",
)
MARKED = ("config-table", "outputs-table")
WALKTHROUGH = "https://route179.dev/2026/08/16/slurm-on-kubernetes-with-slinky/"
# What the quick start must hold: the prerequisites, the commands, another stack, the offline plan.
QUICK_START = (
    "[Pulumi CLI](",
    "[AWS CLI](",
    "Docker with buildx",
    "make preview",
    "make up",
    "make destroy",
    "STACK=",
    "](docs/operations.md#an-offline-plan-for-code-review)",
)
# The contributor's detail, which belongs in CONTRIBUTING.md.
CONTRIBUTOR_DETAIL = ("mmdebstrap", "Measured on a fresh clone", "XDG_CACHE_HOME", "pytest-xdist")


def quick_start(text: str) -> str:
    found = re.search(r"^## Quick start\n(.*?)(?=^## )", text, re.M | re.S)
    return found.group(1) if found else ""


def readme_problems(text: str) -> list[str]:
    found = []
    if len(text.splitlines()) > MAX_LINES:
        found.append(f"{len(text.splitlines())} lines, more than {MAX_LINES}")
    first = re.search(r"^## (.*)$", text, re.M)
    if not first or first.group(1) != "Quick start":
        found.append("the first section is not the quick start")
    found += [f"the quick start lacks {need}" for need in QUICK_START if need not in quick_start(text)]
    if f"]({WALKTHROUGH})" not in text:
        found.append("no link to the walkthrough")
    found += [f"contributor's detail in the README: {d}" for d in CONTRIBUTOR_DETAIL if d in text]
    for block in MARKED:
        if not re.search(rf"<!-- {block}[^>]*-->\n.*?\n<!-- /{block} -->", text, re.S):
            found.append(f"no <!-- {block} --> ... <!-- /{block} --> block")
    found += [f"no link to {page}" for page in PAGES if f"]({page})" not in text]
    return found


def test_the_readme_is_short_starts_with_the_deployer_and_leads_to_the_docs():
    assert readme_problems((REPO / "README.md").read_text()) == []


def test_a_long_readme_is_found():
    text = (REPO / "README.md").read_text()
    assert readme_problems(text + "x\n" * MAX_LINES) == [
        f"{len(text.splitlines()) + MAX_LINES} lines, more than 300"
    ]


def test_a_readme_without_a_generated_table_is_found():
    text = (REPO / "README.md").read_text()
    assert readme_problems(text.replace("<!-- /outputs-table -->", "")) == [
        "no <!-- outputs-table --> ... <!-- /outputs-table --> block"
    ]


def test_a_readme_without_a_link_to_a_page_is_found():
    text = (REPO / "README.md").read_text()
    assert readme_problems(text.replace("](docs/extending.md)", "](docs/extend.md)")) == [
        "no link to docs/extending.md"
    ]


def test_a_quick_start_that_is_not_first_or_lacks_what_a_deployer_needs_is_found():
    text = (REPO / "README.md").read_text()
    moved = text.replace("## Quick start\n", "## Before you start\n\nRead on.\n\n## Quick start\n", 1)
    assert readme_problems(moved) == ["the first section is not the quick start"]
    assert readme_problems(text.replace("STACK=", "STACK ")) == ["the quick start lacks STACK="]


def test_a_readme_without_the_walkthrough_is_found():
    text = (REPO / "README.md").read_text()
    assert readme_problems(text.replace(WALKTHROUGH, "https://example.com/")) == [
        "no link to the walkthrough"
    ]


def test_contributor_detail_in_the_readme_is_found():
    text = (REPO / "README.md").read_text() + "\nThe roots are built with mmdebstrap.\n"
    assert readme_problems(text) == ["contributor's detail in the README: mmdebstrap"]


def test_the_contributing_page_keeps_the_measured_timings_with_their_commit():
    text = (REPO / "CONTRIBUTING.md").read_text()
    assert re.search(r"\n\nMeasured on a fresh clone, .*?\sat [0-9a-f]{7}\b", text, re.S)
