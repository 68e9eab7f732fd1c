"""The Kubernetes versions EKS offers, and at what price, on a given day.

EKS gives each minor version 14 months of standard support from its EKS release, then 12 months
of extended support, after which it no longer offers it ("Understand the Kubernetes version
lifecycle on EKS", with the release calendar:
https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html). A cluster in
extended support pays $0.60 per hour for its control plane instead of $0.10: six times the
standard price (https://aws.amazon.com/eks/pricing/). The rules take the day as an argument so
that what they say is true on the day `pulumi up` runs, and testable on any other.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from model.checks.problems import Problem, Rule, error, warning


@dataclass(frozen=True)
class EksVersion:
    version: str
    end_of_standard_support: datetime.date  # the last day at the standard price
    end_of_extended_support: datetime.date  # the last day EKS offers it

    def support_on(self, day: datetime.date) -> str | None:
        """'standard', 'extended', or None once EKS no longer offers it."""
        if day <= self.end_of_standard_support:
            return "standard"
        return "extended" if day <= self.end_of_extended_support else None


_d = datetime.date
# The release calendar of the EKS versions page above. For 1.36 (on EKS since 2026-06-02) the end
# dates follow the page's rule of 14 months standard then 12 months extended support. Add a
# version here when EKS releases it; one whose extended support has ended is refused without
# being removed.
CALENDAR = (
    EksVersion("1.32", _d(2026, 3, 23), _d(2027, 3, 23)),
    EksVersion("1.33", _d(2026, 7, 29), _d(2027, 7, 29)),
    EksVersion("1.34", _d(2026, 12, 2), _d(2027, 12, 2)),
    EksVersion("1.35", _d(2027, 3, 27), _d(2028, 3, 27)),
    EksVersion("1.36", _d(2027, 8, 2), _d(2028, 8, 2)),
)
_BY_VERSION = {v.version: v for v in CALENDAR}


def offered(day: datetime.date) -> list[str]:
    """The versions EKS offers on `day`, in standard or extended support, oldest first."""
    return [v.version for v in CALENDAR if v.support_on(day)]


def in_standard_support(day: datetime.date) -> list[str]:
    return [v.version for v in CALENDAR if v.support_on(day) == "standard"]


def offered_on(day: datetime.date) -> Rule:
    """A version EKS offers on `day`."""

    def rule(key: str, value: Any) -> list[Problem]:
        known = _BY_VERSION.get(value)
        if known is None or known.support_on(day) is None:
            return [error(key, value, f"a Kubernetes version EKS offers: {', '.join(offered(day))}")]
        return []

    return rule


def standard_support_on(day: datetime.date) -> Rule:
    """Warns of a version in extended support on `day`: accepted, at six times the price."""

    def rule(key: str, value: Any) -> list[Problem]:
        known = _BY_VERSION.get(value)
        if known is None or known.support_on(day) != "extended":
            return []
        return [
            warning(
                key,
                value,
                f"{key} {value} is in EKS extended support: the control plane costs "
                "six times the standard price (https://aws.amazon.com/eks/pricing/); "
                f"standard support: {', '.join(in_standard_support(day))}",
            )
        ]

    return rule
