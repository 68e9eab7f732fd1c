"""The program, its tools and the devkit import the model and each other, never the tests: a fresh
install runs without tests/ (the readiness Job ships cluster_programs/ alone, and devkit/plan.py is
built on devkit/offline_run.py, which the tests import too)."""

import ast
import pathlib
import re

import pytest

from devkit.offline_run import PROJECT_DIR

TESTS = PROJECT_DIR / "tests"
# What a module under tests/ is importable as: tests/ is a package, so only `tests.<...>`.
TEST_MODULES = frozenset({"tests"})
# A line of Python code inside a string (a subprocess's `-c`) importing one of them.
EMBEDDED = re.compile(r"(?:^|;)\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))")
# ... or putting tests/ on its sys.path ('tests' quoted in that code).
EMBEDDED_PATH = re.compile(r"""['"](?:[\w./]*/)?tests/?['"]""")


def dependencies_on_tests(source: str) -> list[str]:
    """Why `source` depends on tests/: each import of a test module, in code or in code held in a
    string, and each path naming the tests directory (a sys.path entry)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value.rstrip("/").split("/")[-1] == "tests" or EMBEDDED_PATH.search(node.value):
                found.append(f"line {node.lineno}: the path {node.value!r}")
            names = [a or b for a, b in EMBEDDED.findall(node.value)]
        found += [
            f"line {node.lineno}: imports {name}" for name in names if name.split(".")[0] in TEST_MODULES
        ]
    return found


def _modules() -> list[pathlib.Path]:
    dirs = ("stack", "components", "model", "cluster_programs", "tools", "devkit")
    return sorted([PROJECT_DIR / "__main__.py", *(p for d in dirs for p in (PROJECT_DIR / d).rglob("*.py"))])


def test_the_program_and_tools_import_nothing_from_tests():
    found = {
        str(p.relative_to(PROJECT_DIR)): why
        for p in _modules()
        if (why := dependencies_on_tests(p.read_text()))
    }
    assert found == {}


def test_every_package_and_test_module_is_known():
    looked = {str(p.relative_to(PROJECT_DIR)) for p in _modules()}
    assert {
        "__main__.py",
        "stack/config.py",
        "components/slurm_readiness.py",
        "model/checks/gpu_pools.py",
        "cluster_programs/rollout.py",
        "tools/verify.py",
        "devkit/plan.py",
        "devkit/offline_run.py",
    } <= looked


@pytest.mark.parametrize(
    "source, why",
    [
        ("import tests.support.chart_walk\n", "line 1: imports tests.support.chart_walk"),
        ("from tests.support.rollout_fakes import nodeset\n", "line 1: imports tests.support.rollout_fakes"),
        ("from tests.conftest import dev\n", "line 1: imports tests.conftest"),
        ("import sys\nsys.path.insert(0, str(ROOT / 'tests'))\n", "line 2: the path 'tests'"),
        (
            'CODE = "import sys; from tests.support.local_slurm import LocalSlurm; run()"\n',
            "line 1: imports tests.support.local_slurm",
        ),
        (
            "CODE = \"import sys; sys.path[:0] = ['tests', '.']\"\n",
            "line 1: the path \"import sys; sys.path[:0] = ['tests', '.']\"",
        ),
    ],
    ids=["import", "from-import", "package", "sys-path", "embedded-code", "embedded-sys-path"],
)
def test_a_module_that_imports_from_tests_is_caught(source, why):
    assert dependencies_on_tests(source) == [why]


def test_imports_of_the_model_and_tools_pass():
    assert (
        dependencies_on_tests(
            "from model.facts.contract import RELEASE\nfrom cluster_programs import rollout\nimport pulumi\n"
        )
        == []
    )


# The program's own packages: what one of them imports from another is that module's public API.
FIRST_PARTY = frozenset({"stack", "components", "model", "cluster_programs", "tools", "devkit"})


def private_imports(source: str) -> list[str]:
    """Each `from <first-party module> import _name`: a private name used outside its module."""
    return [
        f"line {node.lineno}: {alias.name} from {node.module}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom)
        and node.level == 0
        and node.module
        and node.module.split(".")[0] in FIRST_PARTY
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]


def test_no_module_imports_another_modules_private_names():
    found = {
        str(p.relative_to(PROJECT_DIR)): why for p in _modules() if (why := private_imports(p.read_text()))
    }
    assert found == {}


def test_a_private_name_imported_from_another_module_is_caught():
    source = (
        "from devkit.plan import Graph, _edges, run_program\nfrom helm_python import _native\n"
        "from __future__ import annotations\n"
    )
    assert private_imports(source) == ["line 1: _edges from devkit.plan"]
