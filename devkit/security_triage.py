"""The security review's triage table: every finding of checkov and parliament over the dev
stack's plan (devkit/security_review.py) that is not fixed, with why. Placeholder while main is
reviewed."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Triage:
    tool: str
    check: str
    resource: str
    verdict: str
    reason: str
    section: str
    detail: str = "*"


TRIAGE: tuple[Triage, ...] = ()
