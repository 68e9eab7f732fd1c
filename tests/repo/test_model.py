"""The model package: pure facts (no Pulumi), one taint from which the toleration and the node
group form are derived, and components that take shared constants from the model, never from
each other."""

import ast
import pathlib

import pytest

from model.facts.contract import GPU_TAINT, Taint, label_selector
from tests.support.paths import REPO

ROOT = REPO


def _imports(path: pathlib.Path) -> list[tuple[str, list[str]]]:
    """(module, names) of every `from X import names` and (module, []) of every `import X`."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
    return out


def _component_modules() -> set[str]:
    """components/ modules that define a ComponentResource."""
    return {
        f"components.{p.stem}"
        for p in (ROOT / "components").glob("*.py")
        if "pulumi.ComponentResource" in p.read_text()
    }


def cross_component_constants(paths) -> list[str]:
    components = _component_modules()
    found = []
    for path in paths:
        own = f"components.{path.stem}"
        for module, names in _imports(path):
            if module in components and module != own:
                found += [f"{path.name}: {name} from {module}" for name in names if name.isupper()]
    return found


def test_no_component_takes_a_constant_from_another_components_module():
    assert cross_component_constants(sorted((ROOT / "components").glob("*.py"))) == []


def test_a_constant_taken_from_another_component_is_found(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from components.node_groups import NodeGroups\nfrom components.shared_storage import GP3\n"
    )
    assert cross_component_constants([bad]) == ["bad.py: GP3 from components.shared_storage"]


@pytest.mark.parametrize("path", sorted((ROOT / "model").rglob("*.py")), ids=lambda p: p.name)
def test_the_model_imports_no_pulumi(path):
    assert [m for m, _ in _imports(path) if m.split(".")[0].startswith("pulumi")] == []


# The program's other packages, each built on the model: the stack's adapters (stack/account.py
# answers model/checks/preflight.py's Account), the components, the operator's tools, the devkit.
_ABOVE_THE_MODEL = ("stack", "components", "cluster_programs", "tools", "devkit", "tests")


def outside_the_model(path: pathlib.Path) -> list[str]:
    """What a model module imports from the program's other packages (the model is their base)."""
    return [m for m, _ in _imports(path) if m.split(".")[0] in _ABOVE_THE_MODEL]


@pytest.mark.parametrize("path", sorted((ROOT / "model").rglob("*.py")), ids=lambda p: p.name)
def test_the_model_imports_nothing_from_the_packages_above_it(path):
    assert outside_the_model(path) == []


def test_a_model_module_importing_a_component_is_found(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from model import catalog\nfrom components.image_references import registry_host\n")
    assert outside_the_model(bad) == ["components.image_references"]


def test_a_model_module_importing_the_stacks_account_adapter_is_found(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from model.checks.problems import error\nfrom stack.account import PermissionDenied\n"
        "import devkit.offline_account\n"
    )
    assert outside_the_model(bad) == ["stack.account", "devkit.offline_account"]


def test_the_gpu_toleration_tolerates_the_gpu_taint():
    toleration = GPU_TAINT.toleration
    assert (toleration["key"], toleration["effect"], toleration["operator"]) == (
        GPU_TAINT.key,
        GPU_TAINT.effect,
        "Exists",
    )


@pytest.mark.parametrize(
    "effect, eks",
    [("NoSchedule", "NO_SCHEDULE"), ("NoExecute", "NO_EXECUTE"), ("PreferNoSchedule", "PREFER_NO_SCHEDULE")],
)
def test_the_node_group_taint_spells_the_effect_as_the_eks_api(effect, eks):
    assert Taint("k", "v", effect).node_group == {"key": "k", "value": "v", "effect": eks}


def test_a_label_selector_matches_every_label():
    assert (
        label_selector({"role": "gpu", "slinky-eks/gpu-pool": "train"})
        == "role=gpu,slinky-eks/gpu-pool=train"
    )
