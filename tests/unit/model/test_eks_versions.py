"""The Kubernetes versions EKS offers on a given day (model/facts/eks_versions.py). Its two rules'
problems are specified with the other small rules in tests/unit/model/test_rules.py."""

import datetime

from model.facts.eks_versions import CALENDAR, EksVersion, offered

V = EksVersion("1.99", datetime.date(2030, 1, 31), datetime.date(2031, 1, 31))


def test_a_version_is_in_standard_support_through_its_last_standard_day():
    assert V.support_on(datetime.date(2030, 1, 31)) == "standard"


def test_a_version_is_in_extended_support_after_its_standard_support_through_its_last_day():
    assert V.support_on(datetime.date(2030, 2, 1)) == "extended"
    assert V.support_on(datetime.date(2031, 1, 31)) == "extended"


def test_a_version_past_its_extended_support_is_no_longer_offered():
    assert V.support_on(datetime.date(2031, 2, 1)) is None


def test_every_calendar_version_has_twelve_months_of_extended_support_after_its_standard_support():
    for v in CALENDAR:
        standard, extended = v.end_of_standard_support, v.end_of_extended_support
        assert extended == standard.replace(year=standard.year + 1), v.version


def test_the_calendar_runs_oldest_first_so_offered_versions_do_too():
    versions = [v.version for v in CALENDAR]
    assert versions == sorted(versions, key=lambda s: tuple(map(int, s.split("."))))
    assert offered(datetime.date(2026, 1, 1)) == versions
