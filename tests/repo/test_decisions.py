"""docs/decisions/: one decision per file, each with its context, the decision, its consequences
and its sources; and every decision the code points at (`docs/decisions/<topic>.md` in a comment
or docstring) is there, so the one sentence of why left in the code leads somewhere."""

import pathlib
import re

from tests.support.paths import REPO

DECISIONS = REPO / "docs" / "decisions"
# The index of the decisions; every other file there is one decision.
INDEX = DECISIONS / "README.md"
SECTIONS = ("## Context", "## Decision", "## Consequences", "## Sources")
# The code that may point at a decision: every first-party Python file.
_CODE = ("__main__.py", "stack", "components", "cluster_programs", "model", "tools", "devkit", "tests")
_POINTER = re.compile(r"docs/decisions/[\w-]+\.md")


def missing_sections(text: str) -> list[str]:
    """The four sections a decision lacks, or has out of order; a title must come first."""
    found = [] if text.startswith("# ") else ["a '# ' title on the first line"]
    headings = re.findall(r"^## .+$", text, re.M)
    present = [h for h in headings if h in SECTIONS]
    found += [f"section {s!r}" for s in SECTIONS if s not in present]
    if not found and present != list(SECTIONS):
        found.append(f"sections in the order {', '.join(SECTIONS)} (found {', '.join(present)})")
    return found


def pointers_to_missing_decisions(text: str, root: pathlib.Path) -> list[str]:
    return sorted({p for p in _POINTER.findall(text) if not (root / p).is_file()})


def _code_files() -> list[pathlib.Path]:
    files = []
    for name in _CODE:
        path = REPO / name
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return files


def decisions() -> list[pathlib.Path]:
    return sorted(d for d in DECISIONS.glob("*.md") if d != INDEX)


def unlisted(index: str, names: list[str]) -> list[str]:
    """Decisions the index does not link to."""
    return [n for n in names if f"]({n})" not in index]


def test_every_decision_has_context_decision_consequences_and_sources():
    decisions_ = decisions()
    assert len(decisions_) >= 6
    assert [
        (d.name, missing_sections(d.read_text())) for d in decisions_ if missing_sections(d.read_text())
    ] == []


def test_the_index_links_every_decision():
    assert unlisted(INDEX.read_text(), [d.name for d in decisions()]) == []


def test_a_decision_the_index_leaves_out_is_found():
    index = INDEX.read_text().replace("](imds-hop-limit.md)", "]()")
    assert unlisted(index, [d.name for d in decisions()]) == ["imds-hop-limit.md"]


def test_a_decision_without_its_sources_or_out_of_order_is_found():
    whole = "# A choice\n\n## Context\n\nx\n\n## Decision\n\ny\n\n## Consequences\n\nz\n\n## Sources\n\n- s\n"
    assert missing_sections(whole) == []
    assert missing_sections(whole.replace("## Sources", "## Links")) == ["section '## Sources'"]
    assert missing_sections(whole.replace("# A choice\n\n", "")) == ["a '# ' title on the first line"]
    swapped = (
        whole.replace("## Decision", "## TMP")
        .replace("## Context", "## Decision")
        .replace("## TMP", "## Context")
    )
    assert missing_sections(swapped) == [
        "sections in the order ## Context, ## Decision, ## Consequences, ## Sources "
        "(found ## Decision, ## Context, ## Consequences, ## Sources)"
    ]


def test_every_decision_the_code_points_at_exists():
    pointed = [
        (f.relative_to(REPO).as_posix(), pointers_to_missing_decisions(f.read_text(), REPO))
        for f in _code_files()
    ]
    assert len(_code_files()) > 50
    assert [(name, missing) for name, missing in pointed if missing] == []


def test_a_pointer_to_a_decision_not_written_is_found():
    # Put together here, so that this file itself points at no missing decision.
    unwritten = "docs/decisions/" + "imds-hop-limit-2.md"
    text = f"# IMDSv2, hop limit 1 (docs/decisions/imds-hop-limit.md; {unwritten})"
    assert pointers_to_missing_decisions(text, REPO) == [unwritten]
