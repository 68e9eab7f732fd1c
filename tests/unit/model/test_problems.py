"""A problem (model/checks/problems.py): the line the deployer reads names the key, the value as it was
written and what is allowed, and ends with the id of the rule that found it; an id is declared
once, at one level, and only a rule of that level reports it."""

import pytest

from model.checks import rules
from model.checks.problems import (
    ERROR,
    NOT_SET,
    RULE_IDS,
    WARNING,
    WITHHELD,
    RuleId,
    error,
    identify,
    warning,
)

AN_ERROR = RuleId("an-error", ERROR, "something")
A_WARNING = RuleId("a-warning", WARNING, "something")


def test_an_error_names_key_value_and_what_is_allowed_and_ends_with_its_rule():
    assert (
        error(AN_ERROR, "gpuNodeCount", "0", "a whole number").render("slinky-eks")
        == "slinky-eks:gpuNodeCount = '0': a whole number [an-error]"
    )


def test_an_error_of_another_namespace_keeps_its_own():
    assert (
        error(AN_ERROR, "aws:region", "mars-1", "a region").render("slinky-eks")
        == "aws:region = 'mars-1': a region [an-error]"
    )


def test_an_unset_key_is_reported_as_not_set():
    assert (
        error(AN_ERROR, "sshPublicKey", NOT_SET, "it is required").render("p")
        == "p:sshPublicKey is not set; it is required [an-error]"
    )


def test_a_withheld_value_is_never_shown():
    assert (
        error(AN_ERROR, "sshPublicKey", WITHHELD, "a private key").render("p")
        == "p:sshPublicKey: a private key [an-error]"
    )


def test_a_warning_is_its_sentence_and_its_rule():
    assert warning(A_WARNING, "k", "v", "k v costs more").render("p") == "k v costs more [a-warning]"


@pytest.mark.parametrize(
    "value, shown",
    [(False, "false"), (True, "true"), (None, "null"), (0, "0"), (["a", "b"], '["a", "b"]')],
)
def test_a_value_is_shown_as_yaml_writes_it_not_as_python_does(value, shown):
    assert error(AN_ERROR, "metrics", value, "true").render("p") == f"p:metrics = {shown}: true [an-error]"


def test_a_problem_has_the_level_of_its_rule():
    assert (error(AN_ERROR, "k", 1, "x").level, warning(A_WARNING, "k", 1, "x").level) == (ERROR, WARNING)


def test_a_warning_rule_cannot_report_an_error():
    with pytest.raises(ValueError, match="a-warning is declared at level warning"):
        error(A_WARNING, "k", 1, "x")


def test_an_error_rule_cannot_report_a_warning():
    with pytest.raises(ValueError, match="an-error is declared at level error"):
        warning(AN_ERROR, "k", 1, "x")


def test_an_id_declared_twice_is_refused():
    taken = rules.WHOLE_NUMBER.id
    assert taken in RULE_IDS
    with pytest.raises(ValueError, match=f"rule id '{taken}' is declared twice"):
        identify(taken, ERROR, "the same again")


@pytest.mark.parametrize("id", ["Pool-Name", "pool name", "pool--name", "-pool", ""])
def test_an_id_that_is_not_lower_case_words_joined_by_a_dash_is_refused(id):
    with pytest.raises(ValueError, match="lower-case words"):
        identify(id, ERROR, "something")
