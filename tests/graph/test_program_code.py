"""components/_parts/program_code.py: every in-cluster program reaches the cluster one way. Each
code ConfigMap the program writes is the package `cluster_programs` (its __init__.py and the modules
a pod runs), every pod that mounts one runs `python3 -m cluster_programs.<module>` from /app with
the ConfigMap at /app/cluster_programs, and each shipped module runs in that layout with the
standard library alone, importing its neighbours by their package name."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from devkit.offline_run import run_program
from model.builders.program_job import PACKAGE

# A stack with an autoscaling pool ships the floor wait too (docs/scaling.md).
SCALED = {"gpuMinNodes": "0", "gpuMaxNodes": "4"}


@pytest.fixture(scope="module")
def graphs():
    return [run_program("dev"), run_program("dev", SCALED)]


def _code_configmaps(graph) -> dict[str, dict[str, str]]:
    """ConfigMap name -> files of every ConfigMap that holds the package's __init__.py."""
    return {
        r.inputs["metadata"]["name"]: r.inputs["data"]
        for r in graph.of_type("kubernetes:core/v1:ConfigMap")
        if "__init__.py" in r.inputs.get("data", {})
    }


def _pods(graph) -> list[dict]:
    found = []
    for r in [*graph.of_type("kubernetes:batch/v1:Job"), *graph.of_type("kubernetes:apps/v1:Deployment")]:
        found.append(r.inputs["spec"]["template"]["spec"])
    return found


def _shipped(graphs) -> list[tuple[str, dict[str, str]]]:
    return sorted({name: files for g in graphs for name, files in _code_configmaps(g).items()}.items())


def aliased_imports(files: dict[str, str]) -> list[str]:
    """Each import in the shipped files that is neither the standard library nor a shipped module
    of the package, by its own name (a pod-side alias such as `tools` is one)."""
    shipped = {name.removesuffix(".py") for name in files if name != "__init__.py"}
    found = []
    for file, text in sorted(files.items()):
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = (
                    [node.module] if node.module != PACKAGE else [f"{PACKAGE}.{a.name}" for a in node.names]
                )
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                top, _, rest = name.partition(".")
                if top in sys.stdlib_module_names or (top == PACKAGE and rest.split(".")[0] in shipped):
                    continue
                found.append(f"{file} line {node.lineno}: imports {name}")
    return found


def test_the_program_writes_the_four_code_configmaps(graphs):
    prefixes = {name.rsplit("-", 1)[0] for name, _ in _shipped(graphs)}
    assert prefixes == {
        "slurm-rollout-wait",
        "slurm-accounting-database-user-code",
        "slurm-accounting-registration-code",
        "slurm-state-volume-guard-code",
    }


def test_every_pod_mounting_code_runs_a_shipped_module_of_the_package(graphs):
    for graph in graphs:
        code = _code_configmaps(graph)
        for pod in _pods(graph):
            mounted = [v["configMap"]["name"] for v in pod.get("volumes", []) if v.get("name") == "code"]
            if not mounted:
                continue
            (container,) = pod["containers"]
            python, flag, module = container["command"][:3]
            assert (python, flag) == ("python3", "-m") and container["workingDir"] == "/app"
            package, _, program = module.partition(".")
            assert package == PACKAGE and f"{program}.py" in code[mounted[0]]
            assert {"name": "code", "mountPath": f"/app/{PACKAGE}", "readOnly": True} in container[
                "volumeMounts"
            ]


def test_no_shipped_module_imports_through_an_alias(graphs):
    assert [p for _, files in _shipped(graphs) for p in aliased_imports(files)] == []


def test_an_import_through_a_pod_side_alias_is_found():
    files = {
        "__init__.py": "",
        "rollout.py": "def main():\n    from tools import incluster\n",
        "incluster.py": "",
    }
    assert aliased_imports(files) == ["rollout.py line 2: imports tools"]


def test_imports_of_the_standard_library_and_shipped_neighbours_pass():
    files = {
        "__init__.py": "",
        "rollout.py": "import json\nfrom cluster_programs import incluster\n",
        "incluster.py": "",
    }
    assert aliased_imports(files) == []


def test_an_import_of_a_module_left_out_of_the_configmap_is_found():
    files = {"__init__.py": "", "pool_floor.py": "from cluster_programs import rollout\n"}
    assert aliased_imports(files) == ["pool_floor.py line 1: imports cluster_programs.rollout"]


def test_each_shipped_module_runs_in_the_pods_layout_with_the_standard_library_alone(graphs, tmp_path):
    for name, files in _shipped(graphs):
        app = tmp_path / name
        (app / PACKAGE).mkdir(parents=True)
        for file, text in files.items():
            (app / PACKAGE / file).write_text(text)
        for file in files:
            if file == "__init__.py":
                continue
            # -S -E: no site-packages and no PYTHONPATH, so only the standard library and the
            # shipped package in the working directory (as /app in the pod) can be imported.
            module = f"{PACKAGE}.{file.removesuffix('.py')}"
            result = subprocess.run(
                [sys.executable, "-S", "-E", "-m", module, "--help"], cwd=app, capture_output=True, text=True
            )
            assert result.returncode == 0, f"{name}: {module}: {result.stderr}"
