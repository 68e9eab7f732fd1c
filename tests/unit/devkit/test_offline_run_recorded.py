"""run_program runs one configuration once per process (devkit/offline_run.py _RECORDED): what
a caller gets is its own copy, and whatever decides the graph (config, account, the calendar day,
an expected error) keys it."""

import datetime

import pytest

from devkit import offline_account, offline_run
from devkit.offline_run import run_program
from stack import config as stack_config


def test_a_caller_that_changes_its_graph_does_not_change_the_next_callers():
    first = run_program("dev")
    name = first.resources[0].name
    first.resources[0].inputs["changed-by-a-test"] = True
    first.resources.clear()
    first.stack_outputs.clear()
    second = run_program("dev")
    assert second.resources and second.stack_outputs
    assert "changed-by-a-test" not in second.named(name).inputs


def test_without_the_copy_a_change_would_leak(monkeypatch):
    """The failing case of the test above: handing out the recorded graph itself leaks."""
    monkeypatch.setattr(offline_run, "_copy", lambda graph: graph)
    first = run_program("dev")
    first.resources[0].inputs["changed-by-a-test"] = True
    try:
        assert "changed-by-a-test" in run_program("dev").resources[0].inputs
    finally:
        del first.resources[0].inputs["changed-by-a-test"]


def test_a_repeated_configuration_is_not_run_again(monkeypatch):
    run_program("dev", {"clusterName": "recorded-once"})
    runs = []
    monkeypatch.setattr(offline_run, "_run_program", lambda *a: runs.append(a))
    run_program("dev", {"clusterName": "recorded-once"})
    assert runs == []


@pytest.mark.parametrize(
    "name, change",
    [
        ("recorded-overrides", {"overrides": {"clusterName": "recorded-other"}}),
        ("recorded-preview", {"preview": True}),
        (
            "recorded-account",
            {"account": offline_account.DEV.but(quotas={**offline_account.DEV.quotas, "L-DB2E81BA": 1000.0})},
        ),
    ],
)
def test_what_decides_the_graph_makes_a_new_run(monkeypatch, name, change):
    # A cluster name of this test's own: no other test in the process has run either configuration.
    run_program("dev", {"clusterName": name})
    runs = []
    real = offline_run._run_program
    monkeypatch.setattr(offline_run, "_run_program", lambda *a: runs.append(a) or real(*a))
    run_program("dev", **{"overrides": {"clusterName": name}, **change})
    assert len(runs) == 1


def test_the_calendar_day_makes_a_new_run(monkeypatch):
    monkeypatch.setattr(stack_config, "today", lambda: datetime.date(2026, 12, 1))
    on_the_first = run_program("dev", {"kubernetesVersion": "1.33"})
    monkeypatch.setattr(stack_config, "today", lambda: datetime.date(2026, 12, 3))
    on_the_third = run_program("dev", {"kubernetesVersion": "1.33"})
    assert on_the_first.warnings != on_the_third.warnings


def test_an_expected_error_is_kept_with_its_traceback():
    broken = {"clusterName": "Not A Valid Name!"}
    first = run_program("dev", broken, expect_error=True)
    again = run_program("dev", broken, expect_error=True)
    assert first.error is not None and again.error is first.error
    assert again.error.__traceback__ is not None
