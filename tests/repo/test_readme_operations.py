"""The operator notes (docs/operations.md): what an `up` that replaces nodes needs first, and the
API-CIDR trap on teardown."""

import re

from devkit.offline_run import PROJECT_DIR

OPERATIONS = (PROJECT_DIR / "docs/operations.md").read_text()


def section(title: str) -> str:
    start = OPERATIONS.index(title)
    end = re.compile(r"^#{2,3} ", re.M).search(OPERATIONS, start + len(title))
    return " ".join(OPERATIONS[start : end.start() if end else None].split())


def test_the_upgrade_note_says_to_drain_slurm_before_a_launch_template_change():
    note = section("## Upgrading: changes that replace every node")
    assert "launch template" in note and "IMDS hop limit 1" in note
    assert "`MINIMAL`" in note and "terminates a GPU node *before* its replacement" in note
    assert re.search(r"scontrol update nodename=\S+ state=drain", note)


def test_the_teardown_section_names_the_api_cidr_trap():
    teardown = section("## Teardown")
    assert "`apiAllowedCidrs`" in teardown and "`sshAllowedCidrs`" in teardown
    assert "leaves the login NLB" in teardown and "`make destroy` checks" in teardown


def test_the_section_reader_stops_at_the_next_heading():
    upgrading = section("## Upgrading: changes that replace every node")
    assert "`make up`" in upgrading and "## Teardown" not in upgrading and "make destroy" not in upgrading
