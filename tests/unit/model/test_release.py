"""The release (model/facts/release.py): a semantic version with an entry in CHANGELOG.md and a section in
docs/upgrading.md, so a stack's `projectVersion` output always leads somewhere; the changelog's
releases run newest first, each dated but the one being built."""

import re

from model.facts import release
from tests.support.paths import REPO

# "## 0.5.0 - 2026-12-03" or "## 0.6.0 (unreleased)" (Keep a Changelog 1.1.0's release headings).
_ENTRY = re.compile(r"^## (\d+\.\d+\.\d+)(?: - (\d{4}-\d{2}-\d{2})| \((unreleased)\))$", re.M)
# "## 0.3.0: secure by default" or "## 0.6.0 (unreleased)".
_SECTION = re.compile(r"^## (\d+\.\d+\.\d+)\b", re.M)


def entries(text: str) -> list[tuple[str, str, str]]:
    """(version, date, 'unreleased' or '') of each release heading of a changelog."""
    return _ENTRY.findall(text)


def _key(version: str) -> tuple[int, ...]:
    return tuple(map(int, version.split(".")))


def test_the_version_is_a_semantic_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+", release.VERSION)


def test_a_release_heading_is_read_with_its_date_or_as_unreleased():
    text = "## 0.6.0 (unreleased)\n\n## 0.5.0 - 2026-12-03\n\n## Not a release\n"
    assert entries(text) == [("0.6.0", "", "unreleased"), ("0.5.0", "2026-12-03", "")]


def test_the_changelog_has_an_entry_for_the_version():
    assert release.VERSION in [version for version, _, _ in entries((REPO / "CHANGELOG.md").read_text())]


def test_the_changelogs_releases_run_newest_first_each_once():
    versions = [version for version, _, _ in entries((REPO / "CHANGELOG.md").read_text())]
    assert versions == sorted(set(versions), key=_key, reverse=True)


def test_only_the_newest_release_may_be_unreleased_and_it_is_the_version():
    found = entries((REPO / "CHANGELOG.md").read_text())
    unreleased = [version for version, _, mark in found if mark]
    assert unreleased in ([], [found[0][0]]) and found[0][0] == release.VERSION


def test_the_upgrade_notes_have_a_section_for_every_release_but_the_first():
    changelog = [version for version, _, _ in entries((REPO / "CHANGELOG.md").read_text())]
    sections = _SECTION.findall((REPO / "docs/upgrading.md").read_text())
    assert sorted(sections, key=_key) == sorted(changelog, key=_key)[1:]
