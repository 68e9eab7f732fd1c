"""Files of this repository that the model's comments and the docs (README.md, docs/**/*.md) point
at exist: a reader sent to a file that was moved (charts-values/versions.yaml became
model/facts/versions.py, tools/plan.py became devkit/plan.py) finds nothing there. The docs' module
commands (`python -m devkit.plan`) and their links between pages, anchors included, are held the
same way."""

import pathlib
import re

from tests.support.paths import REPO

ROOT = REPO
# The repository's top-level folders, as the restructure laid them out.
_FOLDERS = "charts-values|cluster_programs|components|devkit|image|jobs|model|stack|tests|tools"
# A path of this repository: one of its top-level folders, not the tail of an upstream path.
_CITED = re.compile(
    rf"(?<![\w/.-])(?:{_FOLDERS})/[\w./-]*\w"
    r"\.(?:py|yaml|sh|json|md|sbatch|txt|packages)\b"
)
# A first-party module run with `python -m` (`python -m devkit.plan`, `python3 -m model.facts.versions`).
_MODULE = re.compile(rf"\bpython3? -m ((?:{_FOLDERS.replace('-', '_')})(?:\.\w+)+)")
# A Markdown link that is not to the web: [text](target), target a path and/or a #anchor.
_LINK = re.compile(r"\]\((?!https?:|mailto:)([^)\s]+)\)")
# HTML comments are the generated tables' markers; the tables' generator owns what they name.
_COMMENT = re.compile(r"<!--.*?-->", re.S)


def missing_citations(text: str, root: pathlib.Path) -> list[str]:
    return sorted({p for p in _CITED.findall(text) if not (root / p).exists()})


def missing_modules(text: str, root: pathlib.Path) -> list[str]:
    return sorted({m for m in _MODULE.findall(text) if not (root / (m.replace(".", "/") + ".py")).exists()})


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but `-` and `_` dropped, spaces
    as `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    return {anchor(h) for h in re.findall(r"^#{1,6} (.+)$", markdown, re.M)}


def broken_links(text: str, doc: pathlib.Path) -> list[str]:
    """Links of the Markdown file `doc` (its text `text`) to a file that is not there, or to a
    heading its target does not have."""
    found = []
    for target in _LINK.findall(text):
        path, _, fragment = target.partition("#")
        linked = (doc.parent / path).resolve() if path else doc
        if path and not linked.exists():
            found.append(target)
        elif fragment and (linked.is_dir() or fragment not in anchors(linked.read_text() if path else text)):
            found.append(target)
    return sorted(set(found))


def doc_problems(doc: pathlib.Path, root: pathlib.Path, text: str | None = None) -> list[str]:
    text = _COMMENT.sub("", doc.read_text() if text is None else text)
    return (
        [f"no such file: {p}" for p in missing_citations(text, root)]
        + [f"no such module: {m}" for m in missing_modules(text, root)]
        + [f"broken link: {t}" for t in broken_links(text, doc)]
    )


def docs(root: pathlib.Path) -> list[pathlib.Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def test_every_repository_file_the_model_cites_exists():
    cited = [(f.name, missing_citations(f.read_text(), ROOT)) for f in sorted((ROOT / "model").rglob("*.py"))]
    assert [(name, missing) for name, missing in cited if missing] == []


def test_a_cited_file_that_is_gone_is_found():
    text = "pairing (charts-values/versions.yaml slinkyPairing); pins in model/facts/versions.py"
    assert missing_citations(text, ROOT) == ["charts-values/versions.yaml"]


def test_the_tail_of_an_upstream_path_is_not_taken_for_a_repository_file():
    text = (
        "aws/eks-charts stable/aws-efa-k8s-device-plugin/templates/daemonset.yaml and helm/slurm/tools/x.py"
    )
    assert missing_citations(text, ROOT) == []


def test_every_path_module_and_link_the_docs_name_exists():
    assert len(docs(ROOT)) >= 5
    assert [(d.relative_to(ROOT).as_posix(), p) for d in docs(ROOT) for p in doc_problems(d, ROOT)] == []


def test_a_doc_naming_a_moved_file_a_moved_module_or_a_missing_page_is_found():
    doc = ROOT / "docs" / "synthetic.md"
    text = (
        "Plan offline (`tools/plan.py`, `.venv/bin/python -m tools.plan`; the tests in\n"
        "tests/test_plan.py, the harness in devkit/plan.py); see [the guide](guide.md),\n"
        "[teardown](operations.md#teardown) and [no such part](operations.md#tear-up).\n"
    )
    assert doc_problems(doc, ROOT, text) == [
        "no such file: tests/test_plan.py",
        "no such file: tools/plan.py",
        "no such module: tools.plan",
        "broken link: guide.md",
        "broken link: operations.md#tear-up",
    ]


def test_a_link_to_a_heading_of_the_same_page_is_checked_against_that_page():
    doc = ROOT / "README.md"
    text = "## Quick start\n\nsee [start](#quick-start) and [pools](#gpu-pool)\n"
    assert broken_links(text, doc) == ["#gpu-pool"]


def test_headings_get_the_anchors_github_gives_them():
    assert anchor("Upgrading: changes that replace every node") == "upgrading-changes-that-replace-every-node"
    assert anchor("Verify a cluster (CI or by hand)") == "verify-a-cluster-ci-or-by-hand"
    assert anchor("The `slurmd` image") == "the-slurmd-image"


def test_the_generated_tables_markers_are_left_to_their_generator():
    text = "<!-- outputs-table: generated from model/not_yet.py; do not edit here -->\n"
    assert doc_problems(ROOT / "README.md", ROOT, text) == []
    assert doc_problems(ROOT / "README.md", ROOT, text.replace("<!--", "")) == [
        "no such file: model/not_yet.py"
    ]
