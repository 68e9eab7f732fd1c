"""The alert rules (observability/alerts/*.yaml, one AMP rule group namespace each) through
Debian's promtool 3.5.3 from the sid root: they parse, their unit tests pass, and every alert has
a unit test where it fires and one where it stays quiet."""

from __future__ import annotations

import shutil

import pytest
import yaml

from tests.support.local_prometheus import promtool
from tests.support.local_slurm import RootMissing
from tests.support.observability_queries import ALERT_TESTS_DIR, rule_files, rules


def _promtool(*args, cwd=None):
    try:
        return promtool(*args, cwd=cwd)
    except RootMissing as e:
        pytest.fail(str(e))


def _unit_tests() -> list:
    return sorted(ALERT_TESTS_DIR.glob("*.yaml"))


@pytest.mark.slurm_root
def test_every_rule_file_passes_promtool_check_rules():
    result = _promtool("check", "rules", *map(str, rule_files()))
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_rule_file_is_one_namespace_with_its_own_unit_tests():
    tested = {f for t in _unit_tests() for f in yaml.safe_load(t.read_text())["rule_files"]}
    assert tested == {f"../{p.name}" for p in rule_files()}


@pytest.mark.slurm_root
def test_the_rule_unit_tests_pass_promtool_test_rules():
    result = _promtool("test", "rules", *map(str, _unit_tests()))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slurm_root
def test_a_rule_that_breaks_its_unit_test_fails_it(tmp_path):
    """The unit tests can fail: the drained-node alert without its 15 minutes fires for the
    rollout's drain, and promtool says so."""
    shutil.copytree(ALERT_TESTS_DIR.parent, tmp_path / "alerts")
    rules_file = tmp_path / "alerts/slurm.yaml"
    text = rules_file.read_text()
    assert "expr: slurm_partition_nodes_drained > 0\n        for: 15m" in text
    rules_file.write_text(
        text.replace(
            "expr: slurm_partition_nodes_drained > 0\n        for: 15m",
            "expr: slurm_partition_nodes_drained > 0\n        for: 1m",
        )
    )
    result = _promtool("test", "rules", str(tmp_path / "alerts/tests/slurm_test.yaml"))
    assert (
        result.returncode != 0
        and "a rollout's drain fires no SlurmNodesDrained" in result.stdout + result.stderr
    )


def _cases() -> dict[str, set[bool]]:
    """alertname -> whether its unit tests expect it firing (True), quiet (False), or both."""
    found: dict[str, set[bool]] = {}
    for path in _unit_tests():
        for case in yaml.safe_load(path.read_text())["tests"]:
            for check in case.get("alert_rule_test", []):
                found.setdefault(check["alertname"], set()).add(bool(check.get("exp_alerts")))
    return found


def test_every_alert_has_a_firing_and_a_quiet_unit_test():
    cases = _cases()
    alerts = sorted(r["alert"] for r in rules() if "alert" in r)
    assert alerts
    lacking = [a for a in alerts if cases.get(a) != {True, False}]
    assert not lacking, f"alerts without both a firing and a quiet unit test: {lacking}"


def test_the_drained_node_alert_is_tested_on_an_admins_drain_and_a_rollouts():
    names = {case["name"] for path in _unit_tests() for case in yaml.safe_load(path.read_text())["tests"]}
    assert {
        "an admin's drain fires SlurmNodesDrained",
        "a rollout's drain fires no SlurmNodesDrained",
    } <= names
