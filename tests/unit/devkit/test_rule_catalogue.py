"""The rule catalogue (devkit/rule_catalogue.py): every problem the code can report names a rule
declared at the problem's level, every declared rule is reported somewhere and guards at least
one key, and each id is listed once."""

import ast
import importlib
import subprocess
import sys

from devkit import rule_catalogue
from model.checks.problems import RULE_IDS, RuleId
from tests.support.paths import REPO


def reported() -> list[tuple[str, int, str, object]]:
    """Each error()/warning() call of model/: (file, line, the function, the rule it passes)."""
    found = []
    for path in sorted((REPO / "model").rglob("*.py")):
        module = importlib.import_module(".".join(path.relative_to(REPO).with_suffix("").parts))
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            if node.func.id not in ("error", "warning") or path.stem == "problems":
                continue
            first = node.args[0] if node.args else None
            rule = getattr(module, first.id, None) if isinstance(first, ast.Name) else first
            found.append((path.name, node.lineno, node.func.id, rule))
    return found


def test_every_problem_reported_names_a_declared_rule_of_its_level():
    wrong = [
        f"{file}:{line} {call}({rule!r})"
        for file, line, call, rule in reported()
        if not isinstance(rule, RuleId) or RULE_IDS.get(rule.id) is not rule or rule.level != call
    ]
    assert reported() and wrong == []


def test_every_declared_rule_is_reported_somewhere():
    used = {rule.id for *_, rule in reported() if isinstance(rule, RuleId)}
    assert sorted(set(RULE_IDS) - used) == []


def test_every_rule_guards_at_least_one_key():
    assert [rule.id for rule, keys in rule_catalogue.rules() if not keys] == []


def test_each_id_is_listed_once():
    listed = [rule.id for rule, _ in rule_catalogue.rules()]
    assert len(listed) == len(set(listed)) == len(RULE_IDS)


def test_a_rule_the_key_table_applies_lists_the_keys_it_is_applied_to():
    keys = rule_catalogue.guarded_keys()
    assert {"gpuNodeCount", "coreNodeCount", "gpuPools[].nodeCount"} <= set(keys["whole-number"])
    assert "sshAllowedCidrs" in keys["required"] and "clusterName" not in keys["required"]


def test_the_command_prints_the_table():
    result = subprocess.run(
        [sys.executable, "-m", "devkit.rule_catalogue"], cwd=REPO, capture_output=True, text=True
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, rule_catalogue.table(), "")


def test_the_command_refuses_an_option_it_does_not_have_in_one_line():
    result = subprocess.run(
        [sys.executable, "-m", "devkit.rule_catalogue", "--level", "error"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines()[-1].endswith("error: unrecognized arguments: --level error")
