"""Every `make <target>` the README, CONTRIBUTING.md and docs/ tell a reader to run is a target of
the Makefile: a recipe that names a target that does not exist (or no longer does) fails here."""

import re

from tests.support.paths import REPO

# `make up` in running text; in a fenced block, make at the start of a command.
_INLINE = re.compile(r"`make ([\w.-]+)")
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)
_COMMAND = re.compile(r"(?:^|&&|\(|;)\s*make ([\w.-]+)", re.M)
_TARGET = re.compile(r"^([\w.-]+):", re.M)


def named_targets(text: str) -> set[str]:
    return set(_INLINE.findall(text)) | {t for block in _FENCE.findall(text) for t in _COMMAND.findall(block)}


def pages() -> list:
    return [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").rglob("*.md"))]


def test_a_target_is_read_from_running_text_and_from_a_command_block():
    text = "Run `make up`, and make sure.\n\n```sh\n(cd ../base && make environment)\nmake test JOBS=1\n```\n"
    assert named_targets(text) == {"up", "environment", "test"}


def test_every_make_target_the_docs_name_is_in_the_makefile():
    targets = set(_TARGET.findall((REPO / "Makefile").read_text()))
    missing = {
        f"{page.relative_to(REPO)}: make {t}"
        for page in pages()
        if page.exists()
        for t in named_targets(page.read_text())
        if t not in targets
    }
    assert sorted(missing) == []
