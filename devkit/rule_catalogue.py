"""Every configuration rule by its id: its level, the keys it guards and what it holds a value to.
The ids are declared where the rules are written (model/checks/problems.py `identify`); the keys of a
rule that the key table applies to several keys are read off that table (model/checks/config_schema.py).
docs/rules.md carries the same table, written by `python -m devkit.project_docs`.

    python -m devkit.rule_catalogue     # the table, as Markdown
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import pkgutil
import sys

import model

# Imported for the ids they declare: every module that reports a problem.
from model.checks import config_schema
from model.checks.problems import RULE_IDS, RuleId

# A rule's id is declared when its module is imported: every module of the model is, so the
# catalogue lists the rules of modules nothing else here imports (the preflight's, say).
for _module in pkgutil.walk_packages(model.__path__, "model."):
    importlib.import_module(_module.name)

# A fixed day: the calendar's rules are the same functions on any day, and no day is written out.
_DAY = datetime.date(2026, 1, 1)


def guarded_keys(day: datetime.date = _DAY) -> dict[str, tuple[str, ...]]:
    """Each rule id -> the keys it guards: those it declares, then the key table's keys that
    apply it (or, for `required`, that have no default), in the table's order."""
    keys = {rule.id: list(rule.guards) for rule in RULE_IDS.values()}
    for key in config_schema.schema(day):
        applied = [id for rule in key.rules for id in getattr(rule, "rule_ids", ())]
        if key.default is config_schema.REQUIRED:
            applied.append(config_schema.REQUIRED_KEY)
        for rule in applied:
            if key.name not in keys[rule.id]:
                keys[rule.id].append(key.name)
    return {id: tuple(found) for id, found in keys.items()}


def rules() -> list[tuple[RuleId, tuple[str, ...]]]:
    """Every declared rule with its keys, by id."""
    keys = guarded_keys()
    return [(RULE_IDS[id], keys[id]) for id in sorted(RULE_IDS)]


def table() -> str:
    rows = ["| rule | level | keys | checks |", "| --- | --- | --- | --- |"]
    rows += [
        f"| `{rule.id}` | {rule.level} | {', '.join(f'`{k}`' for k in keys)} | {rule.checks} |"
        for rule, keys in rules()
    ]
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m devkit.rule_catalogue", description=__doc__.split("\n")[0]
    )
    parser.parse_args(argv)  # no options: an unknown one exits 2 naming it
    sys.stdout.write(table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
