"""What a configuration rule finds: a problem at one of two levels. An error refuses the stack
before any resource is registered; a warning is accepted and reported (the habit of AWS
ParallelCluster's validators, which collect results with a failure level instead of raising:
aws/aws-parallelcluster cli/src/pcluster/validators/common.py, FailureLevel and
ValidationResult)."""

from __future__ import annotations

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
class Problem:
    level: str
    # As `pulumi config set` takes it: "gpuNodeCount", "gpuPools[1].name", or with its
    # namespace where it is not the project's ("aws:region").
    key: str
    value: Any
    # An error: what is allowed. A warning: the whole sentence the deployer reads.
    message: str

    @property
    def is_error(self) -> bool:
        return self.level == ERROR

    def render(self, project: str) -> str:
        """The line the deployer reads: an error names key, value and what is allowed."""
        if not self.is_error:
            return self.message
        key = self.key if ":" in self.key else f"{project}:{self.key}"
        if self.value is NOT_SET:
            return f"{key} is not set; {self.message}"
        if self.value is WITHHELD:
            return f"{key}: {self.message}"
        return f"{key} = {self.value!r}: {self.message}"


def error(key: str, value: Any, allowed: str) -> Problem:
    return Problem(ERROR, key, value, allowed)


def warning(key: str, value: Any, message: str) -> Problem:
    return Problem(WARNING, key, value, message)


# A rule looks at one value under its key and returns what it finds; it never raises or logs.
Rule = Callable[[str, Any], list[Problem]]
