"""No file of the repository names a number of the project's tracker: a tracker number tells a
reader nothing once the tracker is gone or moved, so comments and docs say what and why instead.
Upstream issues keep their repository and `#` ("SlinkyProject/slurm-operator issue #96"), which a
reader can open."""

import re
import subprocess

from tests.support.paths import REPO

# The word, a space and a bare number, no `#` before the number.
_TRACKER = re.compile(r"\bissues? \d+", re.I)
_WORD = "issue"


def code_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [p for p in listed if (REPO / p).is_file()]


def tracker_mentions(text: str) -> list[str]:
    return [m.group(0) for m in _TRACKER.finditer(text)]


def test_a_bare_tracker_number_is_found_and_an_upstream_issue_is_not():
    assert tracker_mentions(f"# scaling ({_WORD} 26): bounds") == [f"{_WORD} 26"]
    assert tracker_mentions("SlinkyProject/slurm-operator issue #96") == []


def test_no_file_names_a_tracker_number():
    found = []
    for path in code_files():
        try:
            text = (REPO / path).read_text()
        except UnicodeDecodeError:
            continue
        found += [f"{path}: {m}" for m in tracker_mentions(text)]
    assert found == []
