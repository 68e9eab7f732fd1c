"""The PromQL of observability/: every dashboard panel's and template variable's query and every
rule's expression, where it sits, and the series each one names (what the tests hold to the series
the exporters really export)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import yaml

from model.builders.metrics import ALERTS_DIR, DASHBOARDS_DIR, DCGM_COUNTERS_FILE

# The promtool unit tests of the rule files (observability/alerts/tests/*.yaml).
ALERT_TESTS_DIR = ALERTS_DIR / "tests"

# What a test gives Grafana's variables: every value of the label, and a range over the scrapes.
GRAFANA_SUBSTITUTIONS = {"$__rate_interval": "5m", "$partition": ".*", "$node": ".*", "$job": ".*"}

# PromQL words that are not series: keywords, modifiers, aggregations and functions are told
# apart by what follows them, these by themselves.
_KEYWORDS = frozenset(
    {
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "bool",
        "and",
        "or",
        "unless",
        "offset",
        "atan2",
        "inf",
        "nan",
    }
)
_NAME = r"[A-Za-z_:][A-Za-z0-9_:]*"


@dataclass(frozen=True)
class Query:
    where: str  # file and panel, variable or rule
    expr: str

    def runnable(self) -> str:
        """The expression as Prometheus takes it: Grafana's variables replaced, a variable's
        label_values(<selector>, <label>) as its selector."""
        expr = self.expr
        for name, value in GRAFANA_SUBSTITUTIONS.items():
            expr = expr.replace(name, value)
        if m := re.fullmatch(r"label_values\((.+),\s*\w+\s*\)", expr.strip(), re.S):
            expr = m.group(1)
        return expr

    @property
    def listed_label(self) -> str | None:
        """The label a variable's label_values(<selector>, <label>) lists the values of."""
        m = re.fullmatch(r"label_values\((.+),\s*(\w+)\s*\)", self.expr.strip(), re.S)
        return m.group(2) if m else None


def series_names(expr: str) -> set[str]:
    """The metric names an expression selects: bare names (not functions, not keywords, not
    label names), and the alternatives of a {__name__=~"a|b"} matcher."""
    expr = re.sub(
        r"\blabel_values\((.+),\s*\w+\s*\)", r"\1", expr, flags=re.S
    )  # Grafana's: a label, no series
    names = {alt for pattern in re.findall(r'__name__\s*=~?\s*"([^"]*)"', expr) for alt in pattern.split("|")}
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings
    text = re.sub(r"\{[^}]*\}", "{}", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "[]", text)  # ranges
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    for match in re.finditer(rf"(?<![\w:.]){_NAME}", text):
        word, after = match.group(0), text[match.end() :].lstrip()
        if word in _KEYWORDS or after.startswith("("):
            continue
        names.add(word)
    return names


def dashboards() -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in sorted(DASHBOARDS_DIR.glob("*.json"))}


def dashboard_queries() -> list[Query]:
    found = []
    for name, board in dashboards().items():
        for var in board.get("templating", {}).get("list", []):
            if var.get("type") == "query":
                found.append(Query(f"{name} variable {var['name']}", var["query"]["query"]))
        for panel in board.get("panels", []):
            for target in panel.get("targets", []):
                found.append(Query(f"{name} panel {panel['title']!r} {target['refId']}", target["expr"]))
    return found


def rule_files() -> list:
    return sorted(ALERTS_DIR.glob("*.yaml"))


def rules() -> list[dict]:
    return [
        rule
        for path in rule_files()
        for group in yaml.safe_load(path.read_text())["groups"]
        for rule in group["rules"]
    ]


def rule_queries() -> list[Query]:
    return [
        Query(f"{path.name} {rule.get('alert') or rule.get('record')}", rule["expr"])
        for path in rule_files()
        for group in yaml.safe_load(path.read_text())["groups"]
        for rule in group["rules"]
    ]


def recorded_names() -> set[str]:
    return {rule["record"] for rule in rules() if "record" in rule}


def is_gpu_query(query: Query) -> bool:
    return any(name.startswith("DCGM_") for name in series_names(query.expr))


def exported_dcgm_series(counters_csv: str) -> set[str]:
    """The metrics the DCGM exporter exports from a counters file: one per field line (its first
    column, the field name, is the metric name); comments and blank lines are none."""
    return {
        line.split(",", 1)[0].strip()
        for line in counters_csv.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    }


def unexported_gpu_series(queries: list[Query], counters_csv: str | None = None) -> list[str]:
    """'<where>: <name>' for each DCGM series a query names that the counters file does not export."""
    exported = exported_dcgm_series(DCGM_COUNTERS_FILE.read_text() if counters_csv is None else counters_csv)
    return [
        f"{q.where}: {name}"
        for q in queries
        for name in sorted(series_names(q.expr))
        if name.startswith("DCGM_") and name not in exported
    ]
