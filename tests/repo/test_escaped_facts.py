"""Facts the cluster depends on are spelled once, in their home; everything else imports them: the
/shared layout, the GPU and EFA resource names and kube-system (model/facts/contract.py), and Pulumi's
timeout annotation (components/_parts/jobs_await.py). A copy elsewhere would drift unseen.

Scanned: the program's own Python, as string values (docstrings are prose, and a comment is no
string). Not scanned: cluster_programs/ and jobs/, whose bytes are shipped into the cluster as
they are (they are in tests/data/dev-graph.json) and run on images without the model; their
/shared paths are held to the model's layout instead."""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

from model.facts.contract import SHARED_LAYOUT
from tests.support.paths import REPO

# Each fact: how a copy of it is recognised inside a string, and its home.
_PATH = r"(?<![\w./]){}(?![\w-])"  # a path, not the tail of another (../shared/ref)
FACTS = {
    "the /shared layout": (re.compile(_PATH.format("/shared")), "model/facts/contract.py"),
    "nvidia.com/gpu": (re.compile(r"\bnvidia\.com/gpu(?![\w.-])"), "model/facts/contract.py"),
    "vpc.amazonaws.com/efa": (re.compile(r"\bvpc\.amazonaws\.com/efa\b"), "model/facts/contract.py"),
    "kube-system": (re.compile(r"\bkube-system\b"), "model/facts/contract.py"),
    "pulumi.com/timeoutSeconds": (
        re.compile(r"\bpulumi\.com/timeoutSeconds\b"),
        "components/_parts/jobs_await.py",
    ),
}
PROGRAM = ("stack", "components", "model", "tools", "devkit")


def _strings(tree: ast.AST) -> list[ast.Constant]:
    """Every string value in the module, f-strings' literal parts included, docstrings left out."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    ]


def escaped_facts(source: str, path: str) -> list[str]:
    """Each string in `source` (the file at `path`, relative to the repository) that spells a fact
    outside its home."""
    found = []
    for node in _strings(ast.parse(source)):
        for fact, (pattern, home) in FACTS.items():
            if path != home and pattern.search(node.value):
                found.append(f"{path}:{node.lineno}: {fact} in {node.value!r} (its home is {home})")
    return found


def _program_files() -> list[pathlib.Path]:
    return sorted([REPO / "__main__.py", *(p for d in PROGRAM for p in (REPO / d).rglob("*.py"))])


def test_no_fact_is_spelled_outside_its_home():
    found = [f for p in _program_files() for f in escaped_facts(p.read_text(), str(p.relative_to(REPO)))]
    assert found == []


@pytest.mark.parametrize(
    "source, fact",
    [
        ('TARGET = "/shared/jobs"\n', "the /shared layout"),
        ('script = f"mkdir -p /shared/logs; ls {x}"\n', "the /shared layout"),
        ('mount = {"mountPath": "/shared"}\n', "the /shared layout"),
        ('want = {"nvidia.com/gpu": "4"}\n', "nvidia.com/gpu"),
        ('want = {"vpc.amazonaws.com/efa": "1"}\n', "vpc.amazonaws.com/efa"),
        ('NAMESPACE = "kube-system"\n', "kube-system"),
        ('annotations = {"pulumi.com/timeoutSeconds": "1500"}\n', "pulumi.com/timeoutSeconds"),
    ],
    ids=["path", "f-string", "mount", "gpu", "efa", "namespace", "timeout"],
)
def test_a_fact_spelled_outside_its_home_is_found(source, fact):
    (found,) = escaped_facts(source, "components/bad.py")
    assert found.startswith(f"components/bad.py:1: {fact} in ")


def test_the_home_docstrings_and_lookalikes_are_not_copies():
    assert escaped_facts('GPU_RESOURCE = "nvidia.com/gpu"\n', "model/facts/contract.py") == []
    assert escaped_facts('"""Stages jobs onto /shared/jobs."""\n', "components/bad.py") == []
    assert (
        escaped_facts(
            'REF = "../shared/ref"\nLABEL = "nvidia.com/gpu.present"\nNS = "kube-systems"\n', "devkit/bad.py"
        )
        == []
    )


# The shipped files (jobs/) spell the layout themselves: every /shared path they use is one the
# model names.
_SHARED_PATH = re.compile(_PATH.format(r"/shared(?:/[\w.-]+)?"))


def shared_paths_outside_the_layout(text: str) -> list[str]:
    return sorted({p for p in _SHARED_PATH.findall(text) if p not in SHARED_LAYOUT})


def test_the_shipped_jobs_use_only_the_models_shared_layout():
    found = {
        str(p.relative_to(REPO)): bad
        for p in sorted((REPO / "jobs").rglob("*"))
        if p.is_file()
        and "__pycache__" not in p.parts
        and (bad := shared_paths_outside_the_layout(p.read_text()))
    }
    assert found == {}


def test_a_shared_path_outside_the_layout_is_found():
    text = "#SBATCH --output=/shared/logs/%x-%j.out\nexport OUT=${OUT:-/shared/outputs}\nREF=../shared/ref\n"
    assert shared_paths_outside_the_layout(text) == ["/shared/outputs"]
