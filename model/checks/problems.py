"""What a configuration rule finds: a problem at one of two levels. An error refuses the stack
before any resource is registered; a warning is accepted and reported (the habit of AWS
ParallelCluster's validators, which collect results with a failure level instead of raising:
aws/aws-parallelcluster cli/src/pcluster/validators/common.py, FailureLevel and
ValidationResult). Every problem names the rule that found it by a stable id, declared once where
the rule is written (`identify`); `python -m devkit.rule_catalogue` lists them all, and the
deployer's line ends with the id, to look up in docs/rules.md."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable

ERROR = "error"
WARNING = "warning"


class _Marker:
    """A value a problem must not show as given: unset, or withheld (a pasted private key)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


NOT_SET = _Marker("NOT_SET")
WITHHELD = _Marker("WITHHELD")


@dataclass(frozen=True)
class RuleId:
    """A rule's identity: what the deployer looks up, stable across releases (a renamed id is a
    new rule). `guards` names the keys it looks at, as `pulumi config` spells them, `[]` for any
    entry of a list; the keys the key table (model/checks/config_schema.py) applies a rule to need not
    be named here: the catalogue reads them off the table."""

    id: str
    level: str
    checks: str  # what it holds a value to, in a few words
    guards: tuple[str, ...] = ()


# Every id declared, by id: the catalogue's rows.
RULE_IDS: dict[str, RuleId] = {}
# Lower-case words joined by `-`, as a docs anchor and a grep both keep it.
_ID = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


def identify(id: str, level: str, checks: str, *guards: str) -> RuleId:
    """Declare a rule's id; a second declaration of the same id is refused at import."""
    if not _ID.fullmatch(id) or level not in (ERROR, WARNING):
        raise ValueError(
            f"rule id {id!r} at level {level!r}; allowed: lower-case words joined by '-', "
            f"at level {ERROR} or {WARNING}"
        )
    if id in RULE_IDS:
        raise ValueError(f"rule id {id!r} is declared twice; allowed: each id once")
    RULE_IDS[id] = found = RuleId(id, level, checks, guards)
    return found


def applies(*ids: RuleId) -> Callable[[Callable], Callable]:
    """Mark a rule function with the ids it can report, so the catalogue finds the keys the key
    table applies it to."""

    def marked(rule: Callable) -> Callable:
        rule.rule_ids = ids  # type: ignore[attr-defined]
        return rule

    return marked


def as_written(value: Any) -> str:
    """A value as the deployer wrote it in YAML: `false`, not Python's `False`; a string quoted."""
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (bool, int, float, list, dict)) or value is None:
        try:
            return json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            return repr(value)
    return repr(value)


@dataclass(frozen=True)
class Problem:
    rule: RuleId  # the rule that found it; its level is the problem's
    # As `pulumi config set` takes it: "gpuNodeCount", "gpuPools[1].name", or with its
    # namespace where it is not the project's ("aws:region").
    key: str
    value: Any
    # An error: what is allowed. A warning: the whole sentence the deployer reads.
    message: str

    @property
    def level(self) -> str:
        return self.rule.level

    @property
    def is_error(self) -> bool:
        return self.level == ERROR

    def render(self, project: str) -> str:
        """The line the deployer reads: an error names key, value and what is allowed; either
        ends with the rule's id."""
        return f"{self._sentence(project)} [{self.rule.id}]"

    def _sentence(self, project: str) -> str:
        if not self.is_error:
            return self.message
        key = self.key if ":" in self.key else f"{project}:{self.key}"
        if self.value is NOT_SET:
            return f"{key} is not set; {self.message}"
        if self.value is WITHHELD:
            return f"{key}: {self.message}"
        return f"{key} = {as_written(self.value)}: {self.message}"


def error(rule: RuleId, key: str, value: Any, allowed: str) -> Problem:
    if rule.level != ERROR:
        raise ValueError(f"rule {rule.id} is declared at level {rule.level}; it cannot report an error")
    return Problem(rule, key, value, allowed)


def warning(rule: RuleId, key: str, value: Any, message: str) -> Problem:
    if rule.level != WARNING:
        raise ValueError(f"rule {rule.id} is declared at level {rule.level}; it cannot report a warning")
    return Problem(rule, key, value, message)


# A rule looks at one value under its key and returns what it finds; it never raises or logs.
Rule = Callable[[str, Any], list[Problem]]
