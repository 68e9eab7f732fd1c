"""Tests named after their unit: every module of components/ (its private package _parts/ included)
has tests/graph/test_<module>.py, where the program runs under Pulumi's mocks, and every module of
model/ (facts/, checks/, builders/) has tests/unit/model/test_<module>.py, where its pure functions
are called. Topic and scenario tests live beside these under their own names. A module without its
file is either given one or listed below, on purpose, with the reason."""

from __future__ import annotations

import pathlib

from tests.support.paths import REPO

# (source folder, the folder its modules' test files live in), relative to the repository root.
LAYERS = (("components", "tests/graph"), ("model", "tests/unit/model"))

# Modules with no test file of their own name, each with the reason. A module leaves this list
# when its file is written (test_exceptions_are_still_needed fails until it does).
EXCEPTIONS: dict[str, str] = {
    # None today: every component and model module has its file. A module listed here names why
    # it has none (e.g. a module wholly specified by a scenario test).
}


def _modules(root: pathlib.Path, source: str) -> list[pathlib.Path]:
    return sorted(p for p in (root / source).rglob("*.py") if p.name != "__init__.py")


def modules_without_tests(root: pathlib.Path) -> list[str]:
    """Each module under `root`'s layers (repository-relative path) whose layer holds no
    test_<module>.py."""
    missing = []
    for source, tests in LAYERS:
        for module in _modules(root, source):
            if not (root / tests / f"test_{module.stem}.py").is_file():
                missing.append(module.relative_to(root).as_posix())
    return missing


def test_every_component_and_model_module_has_its_test_file_or_is_a_listed_exception():
    unlisted = [m for m in modules_without_tests(REPO) if m not in EXCEPTIONS]
    assert unlisted == [], "write tests/<layer>/test_<module>.py for these, or list them with a reason"


def test_exceptions_are_still_needed():
    # A listed module that now has its file, or no longer exists, leaves the list.
    stale = sorted(set(EXCEPTIONS) - set(modules_without_tests(REPO)))
    assert stale == []


def test_every_exception_gives_its_reason():
    assert all(reason.strip() for reason in EXCEPTIONS.values())


def _tree(root: pathlib.Path, files: list[str]) -> pathlib.Path:
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    return root


def test_a_new_component_module_without_its_graph_test_is_reported(tmp_path):
    root = _tree(
        tmp_path, ["components/__init__.py", "components/_parts/queue.py", "tests/graph/test_other.py"]
    )
    assert modules_without_tests(root) == ["components/_parts/queue.py"]


def test_a_new_model_module_without_its_unit_test_is_reported(tmp_path):
    root = _tree(tmp_path, ["model/facts/__init__.py", "model/facts/tariff.py"])
    assert modules_without_tests(root) == ["model/facts/tariff.py"]


def test_a_module_is_matched_only_by_a_test_file_in_its_own_layer(tmp_path):
    # A graph test named after a model module does not count for it: the layers are apart.
    root = _tree(tmp_path, ["model/builders/keda.py", "tests/graph/test_keda.py"])
    assert modules_without_tests(root) == ["model/builders/keda.py"]


def test_a_module_with_its_test_file_is_not_reported(tmp_path):
    root = _tree(tmp_path, ["components/network.py", "tests/graph/test_network.py"])
    assert modules_without_tests(root) == []
