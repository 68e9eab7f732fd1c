"""Rooms by role (docs/architecture.md, the layout): components/ holds ComponentResources, and
what only they use sits in its private package components/_parts/; chart values and pod specs are
built in model/builders/, never written in a component; the components depend on
nothing in tools/ (the operator's CLIs); the programs that run in the cluster (cluster_programs/)
import only the standard library and each other, since they run on a plain Python image. Each rule
is a function of source text, run on the repository and on a synthetic break."""

from __future__ import annotations

import ast
import pathlib
import sys

import pytest

from tests.support.paths import REPO

COMPONENTS = REPO / "components"
PROGRAMS = REPO / "cluster_programs"


def _imported(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, module) of every absolute import, at any depth (a function's lazy import too)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def component_module_problems(source: str) -> list[str]:
    """A public module of components/ that defines no ComponentResource subclass."""
    tree = ast.parse(source)
    if any(
        isinstance(node, ast.ClassDef)
        and any(ast.unparse(b) == "pulumi.ComponentResource" for b in node.bases)
        for node in tree.body
    ):
        return []
    return ["defines no pulumi.ComponentResource"]


# The keys only a pod spec has (Kubernetes API reference, PodSpec: containers, initContainers).
POD_SPEC_KEYS = frozenset({"containers", "initContainers"})


def _returns_a_dict_literal(function: ast.FunctionDef) -> bool:
    return any(
        isinstance(n, ast.Return) and isinstance(n.value, (ast.Dict, ast.DictComp))
        for n in ast.walk(function)
    )


def builder_problems(source: str) -> list[str]:
    """What a component module builds that belongs in model/builders/: a pod spec (a dict with
    containers or initContainers), chart values written inline (`values=` given a dict), or a
    function named *values that returns a dict it writes."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict) and any(
            isinstance(k, ast.Constant) and k.value in POD_SPEC_KEYS for k in node.keys
        ):
            found.append(f"line {node.lineno}: writes a pod spec")
        elif (
            isinstance(node, ast.keyword)
            and node.arg == "values"
            and isinstance(node.value, (ast.Dict, ast.DictComp))
        ):
            found.append(f"line {node.lineno}: writes chart values inline")
        elif (
            isinstance(node, ast.FunctionDef)
            and node.name.endswith("values")
            and _returns_a_dict_literal(node)
        ):
            found.append(f"line {node.lineno}: defines the values builder {node.name}")
    return found


def tools_dependencies(source: str) -> list[str]:
    """Each import of tools/ and each string that names a file under it (a path read at run time)."""
    tree = ast.parse(source)
    found = [
        f"line {line}: imports {name}" for line, name in _imported(tree) if name.split(".")[0] == "tools"
    ]
    for node in ast.walk(tree):
        # `<path> / "tools"`: the directory joined onto a path (a bare "tools" may be another name,
        # such as the readiness Job's pod-side package).
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Div)
            and isinstance(node.right, ast.Constant)
            and node.right.value == "tools"
        ):
            found.append(f"line {node.lineno}: joins the directory 'tools' onto a path")
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("tools/")
        ):
            found.append(f"line {node.lineno}: names the file {node.value!r}")
    return found


def non_stdlib_imports(source: str, own: set[str]) -> list[str]:
    """Imports of anything but the standard library and the package itself (its names in `own`)."""
    return [
        f"line {line}: imports {name}"
        for line, name in _imported(ast.parse(source))
        if name.split(".")[0] not in sys.stdlib_module_names and name.split(".")[0] not in own
    ]


def _public_component_modules() -> list[pathlib.Path]:
    return sorted(p for p in COMPONENTS.glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("path", _public_component_modules(), ids=lambda p: p.name)
def test_every_public_module_of_components_defines_a_component_resource(path):
    assert component_module_problems(path.read_text()) == []


def test_a_components_module_without_a_component_resource_is_found():
    assert component_module_problems("import pulumi\n\ndef merge(a, b):\n    return {**a, **b}\n") == [
        "defines no pulumi.ComponentResource"
    ]


def test_the_private_package_and_the_public_modules_are_all_looked_at():
    assert {"cluster.py", "slurm_readiness.py", "state_volume_guard.py"} <= {
        p.name for p in _public_component_modules()
    }
    assert (COMPONENTS / "_parts" / "helm.py").exists()


@pytest.mark.parametrize(
    "path", sorted(COMPONENTS.rglob("*.py")), ids=lambda p: str(p.relative_to(COMPONENTS))
)
def test_no_component_builds_chart_values_or_pod_specs(path):
    assert builder_problems(path.read_text()) == []


@pytest.mark.parametrize(
    "source, why",
    [
        (
            "def keda_values():\n    return {'nodeSelector': {'role': 'core'}}\n",
            "line 1: defines the values builder keda_values",
        ),
        (
            "pinned_release('x', CHART, values={'clusterName': name}, parent=self)\n",
            "line 1: writes chart values inline",
        ),
        (
            "SPEC = {'template': {'spec': {'containers': [{'name': 'guard'}]}}}\n",
            "line 1: writes a pod spec",
        ),
    ],
    ids=["builder-function", "inline-values", "pod-spec"],
)
def test_a_values_builder_or_pod_spec_in_a_component_is_found(source, why):
    assert builder_problems(source) == [why]


def test_calling_the_models_builders_passes():
    source = (
        "from model.builders import keda\n"
        "def _release(self):\n    return pinned_release('x', CHART, values=keda.release_values())\n"
        "def _values(self):\n    return pulumi.Output.all(a).apply(lambda k: slurm_values(k))\n"
    )
    assert builder_problems(source) == []


@pytest.mark.parametrize(
    "path", sorted(COMPONENTS.rglob("*.py")), ids=lambda p: str(p.relative_to(COMPONENTS))
)
def test_nothing_in_components_imports_tools_or_reads_files_under_it(path):
    assert tools_dependencies(path.read_text()) == []


@pytest.mark.parametrize(
    "source, why",
    [
        ("from tools import verify\n", "line 1: imports tools"),
        ("def f():\n    import tools.report\n", "line 2: imports tools.report"),
        ("SCRIPT = ROOT / 'tools' / 'verify.py'\n", "line 1: joins the directory 'tools' onto a path"),
        ("TEXT = (ROOT / 'tools/verify.py').read_text()\n", "line 1: names the file 'tools/verify.py'"),
    ],
    ids=["import", "lazy-import", "path-parts", "path"],
)
def test_a_component_depending_on_tools_is_found(source, why):
    assert tools_dependencies(source) == [why]


@pytest.mark.parametrize("path", sorted(PROGRAMS.glob("*.py")), ids=lambda p: p.name)
def test_the_cluster_programs_import_only_the_standard_library_and_themselves(path):
    assert non_stdlib_imports(path.read_text(), {"cluster_programs"}) == []


@pytest.mark.parametrize(
    "source, why",
    [
        ("import yaml\n", "line 1: imports yaml"),
        ("def main():\n    from kubernetes import client\n", "line 2: imports kubernetes"),
        ("from model.facts.contract import SLURM_NAMESPACE\n", "line 1: imports model.facts.contract"),
    ],
    ids=["third-party", "lazy-third-party", "first-party"],
)
def test_a_cluster_program_importing_beyond_the_standard_library_is_found(source, why):
    assert non_stdlib_imports(source, {"cluster_programs"}) == [why]


def test_the_standard_library_and_the_package_itself_pass():
    source = "from __future__ import annotations\nimport json\nfrom cluster_programs import rollout\n"
    assert non_stdlib_imports(source, {"cluster_programs"}) == []
