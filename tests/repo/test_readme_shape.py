"""The README stays the way in: at most 300 lines, the quick start with its measured
timings, the two generated tables between their markers, and a link to each docs page, where the
rest lives."""

import re

from tests.support.paths import REPO

MAX_LINES = 300
PAGES = (
    "docs/architecture.md",
    "docs/operations.md",
    "docs/extending.md",
    "docs/security.md",
    "docs/upgrading.md",
    "docs/decisions/README.md",
)
MARKED = ("config-table", "outputs-table")


def readme_problems(text: str) -> list[str]:
    found = []
    if len(text.splitlines()) > MAX_LINES:
        found.append(f"{len(text.splitlines())} lines, more than {MAX_LINES}")
    for block in MARKED:
        if not re.search(rf"<!-- {block}[^>]*-->\n.*?\n<!-- /{block} -->", text, re.S):
            found.append(f"no <!-- {block} --> ... <!-- /{block} --> block")
    if "\n\nMeasured on a fresh clone" not in text:
        found.append("no paragraph starting 'Measured on a fresh clone'")
    found += [f"no link to {page}" for page in PAGES if f"]({page})" not in text]
    return found


def test_the_readme_is_short_and_leads_to_the_docs():
    assert readme_problems((REPO / "README.md").read_text()) == []


def test_a_long_readme_or_one_without_its_tables_or_links_is_found():
    text = (REPO / "README.md").read_text()
    assert readme_problems(text + "x\n" * MAX_LINES) == [
        f"{len(text.splitlines()) + MAX_LINES} lines, more than 300"
    ]
    assert readme_problems(text.replace("<!-- /outputs-table -->", "")) == [
        "no <!-- outputs-table --> ... <!-- /outputs-table --> block"
    ]
    for changed in ("\n\nOn a fresh clone", " Measured on a fresh clone"):
        assert readme_problems(text.replace("\n\nMeasured on a fresh clone", changed)) == [
            "no paragraph starting 'Measured on a fresh clone'"
        ]
    assert readme_problems(text.replace("](docs/extending.md)", "](docs/extend.md)")) == [
        "no link to docs/extending.md"
    ]
