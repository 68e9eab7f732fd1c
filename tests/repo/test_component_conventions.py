"""The conventions components/__init__.py states, checked on every component: type tokens
`slinky-eks:<module>:<ClassName>` with <module> from the listed groups, one vocabulary for what to
wait for, `namespace` always a name, every args field and output attribute documented, every
`__init__` a short sequence of named steps. Each rule is a function that returns problems, run on
the real code and on a synthetic break."""

from __future__ import annotations

import ast
import collections.abc
import dataclasses
import importlib
import inspect
import pkgutil
import re
import runpy
import sys
import typing
from dataclasses import dataclass
from typing import Sequence

import pulumi
import pulumi_kubernetes as k8s
import pytest

import components
from devkit import offline_account
from devkit.offline_run import run_function, run_program
from tests.support import published_layer
from tests.support.paths import REPO

ROOT = REPO
COMPONENTS_DIR = ROOT / "components"
# Names that meant "what to wait for" before the one vocabulary of readiness names: none may come back.
RETIRED = {
    "ready",
    "system_ready",
    "gpu_ready",
    "system_nodes",
    "gpu_nodes",
    "cluster_ready",
    "after",
    "state_storage",
    "outlives",
    "namespace_resource",
    "pod_identity_agent",
    "load_balancer_controller",
}


def token_groups() -> set[str]:
    """The <module> groups as components/__init__.py lists them (its "- `group`: ..." lines)."""
    return set(re.findall(r"^- `([a-z]+)`: ", components.__doc__, re.MULTILINE))


def _component_classes(tree: ast.Module) -> list[ast.ClassDef]:
    return [
        node
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        and any(ast.unparse(base) == "pulumi.ComponentResource" for base in node.bases)
    ]


def _registered_token(cls: ast.ClassDef) -> str | None:
    """The first argument of the class's super().__init__(...) call."""
    for node in ast.walk(cls):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "__init__"
            and ast.unparse(node.func.value) == "super()"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            return node.args[0].value
    return None


def token_problems(source: str, groups: set[str]) -> list[str]:
    out = []
    for cls in _component_classes(ast.parse(source)):
        token = _registered_token(cls)
        parts = (token or "").split(":")
        if len(parts) != 3 or parts[0] != "slinky-eks" or parts[1] not in groups or parts[2] != cls.name:
            out.append(f"{cls.name}: token {token!r} is not slinky-eks:<one of {sorted(groups)}>:{cls.name}")
    return out


def component_tokens() -> dict[str, str]:
    """Class name -> token of every ComponentResource under components/."""
    out = {}
    for path in sorted(COMPONENTS_DIR.glob("*.py")):
        for cls in _component_classes(ast.parse(path.read_text())):
            out[cls.name] = _registered_token(cls)
    return out


def _modules():
    return [
        importlib.import_module(f"components.{m.name}") for m in pkgutil.iter_modules([str(COMPONENTS_DIR)])
    ]


def args_classes() -> list[type]:
    return [
        cls
        for module in _modules()
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if cls.__module__ == module.__name__
        and dataclasses.is_dataclass(cls)
        and cls.__name__.endswith("Args")
    ]


def component_classes() -> list[type]:
    return [
        cls
        for module in _modules()
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if cls.__module__ == module.__name__ and issubclass(cls, pulumi.ComponentResource)
    ]


def _mentions_resource(hint) -> bool:
    if isinstance(hint, type) and issubclass(hint, pulumi.Resource):
        return True
    return any(_mentions_resource(a) for a in typing.get_args(hint))


def _is_resource_sequence(hint) -> bool:
    return typing.get_origin(hint) is collections.abc.Sequence and typing.get_args(hint) == (pulumi.Resource,)


def _is_ordering_name(name: str) -> bool:
    return name == "depends_on" or name.endswith("_depends_on")


def args_problems(cls: type) -> list[str]:
    """Ordering fields are depends_on / <part>_depends_on, typed Sequence[pulumi.Resource]; the
    only other resource a field may hold is the provider; `namespace` is a name."""
    # pulumi.Input is Union[T, Awaitable[T], "Output[T]"] (pulumi/output.py): resolve its forward reference.
    hints, out = typing.get_type_hints(cls, localns={"Output": pulumi.Output, "T": pulumi.output.T}), []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        if f.name in RETIRED:
            out.append(f"{cls.__name__}.{f.name}: a retired name for what to wait for")
        elif _is_ordering_name(f.name):
            if not _is_resource_sequence(hint):
                out.append(f"{cls.__name__}.{f.name}: must be Sequence[pulumi.Resource]")
        elif f.name == "provider":
            if not (isinstance(hint, type) and issubclass(hint, pulumi.ProviderResource)):
                out.append(f"{cls.__name__}.provider: must be a provider")
        elif _mentions_resource(hint):
            out.append(f"{cls.__name__}.{f.name}: holds a resource; name it depends_on or <part>_depends_on")
        if f.name == "namespace" and hint is not str:
            out.append(f"{cls.__name__}.namespace: must be the namespace's name (str)")
    return out


# What ClusterContext (components/cluster.py) carries, as the separate args fields it replaced.
CLUSTER_FIELDS = frozenset(
    {"provider", "cluster_name", "region", "account_id", "cluster_security_group_id", "identity_depends_on"}
)
# The components the context is built from or that come up before the cluster exists.
BEFORE_THE_CONTEXT = frozenset({"NetworkArgs", "ClusterArgs", "ExistingClusterArgs", "SlurmdImageArgs"})


def context_problems(cls: type) -> list[str]:
    """An args field that carries one of the cluster's facts beside the ClusterContext."""
    if cls.__name__ in BEFORE_THE_CONTEXT:
        return []
    return [
        f"{cls.__name__}.{f.name}: the cluster's, passed as `cluster: ClusterContext`"
        for f in dataclasses.fields(cls)
        if f.name in CLUSTER_FIELDS
    ]


def _is_resource_list(hint) -> bool:
    return typing.get_origin(hint) is list and typing.get_args(hint) == (pulumi.Resource,)


def ready_problems(cls: type) -> list[str]:
    """What others may wait for is `ready` or `<part>_ready`, a list[pulumi.Resource]."""
    # The class's own annotations only: pulumi.Resource's are not evaluable outside pulumi.
    namespace = vars(sys.modules[cls.__module__])
    out = []
    for name, hint in cls.__dict__.get("__annotations__", {}).items():
        hint = eval(hint, namespace) if isinstance(hint, str) else hint
        waitable = name == "ready" or name.endswith("_ready")
        if waitable != _is_resource_list(hint):
            out.append(
                f"{cls.__name__}.{name}: what to wait for is ready / <part>_ready: list[pulumi.Resource]"
            )
    return out


def wiring_problems(source: str) -> list[str]:
    """Every *depends_on keyword in the program is built from components' ready lists only, or
    passes on an ordering its own caller handed in (`args.depends_on`: the Slurm layer's wiring,
    components/slurm_layer.py)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.keyword) and node.arg and _is_ordering_name(node.arg):
            value = node.value
            items = value.elts if isinstance(value, ast.List) else [value]
            for item in items:
                item = item.value if isinstance(item, ast.Starred) else item
                # An optional component's list, or nothing where the stack does not install it.
                if isinstance(item, ast.IfExp) and isinstance(item.orelse, ast.List) and not item.orelse.elts:
                    item = item.body
                if not (
                    isinstance(item, ast.Attribute)
                    and (
                        item.attr == "ready"
                        or item.attr.endswith("_ready")
                        or (ast.unparse(item.value) == "args" and _is_ordering_name(item.attr))
                    )
                ):
                    out.append(f"{node.arg}={ast.unparse(value)}: wait for a component's ready list")
    return out


def documentation_problems(source: str) -> list[str]:
    """Every *Args dataclass has a docstring, and every field a comment (on its line or the lines
    just above); a field with a default names it in that comment."""
    lines, out = source.splitlines(), []
    for cls in ast.parse(source).body:
        if not (isinstance(cls, ast.ClassDef) and cls.name.endswith("Args")):
            continue
        if ast.get_docstring(cls) is None:
            out.append(f"{cls.name}: no docstring")
        for field in (n for n in cls.body if isinstance(n, ast.AnnAssign)):
            name = ast.unparse(field.target)
            above, row = [], field.lineno - 2
            while row >= 0 and lines[row].strip().startswith("#"):
                above.append(lines[row])
                row -= 1
            comment = " ".join(above) + (
                lines[field.lineno - 1].split("#", 1)[1] if "#" in lines[field.lineno - 1] else ""
            )
            if not comment.strip():
                out.append(f"{cls.name}.{name}: undocumented")
            elif field.value is not None and "default" not in comment.lower():
                out.append(f"{cls.name}.{name}: has a default its comment does not name")
    return out


def _assigned_attributes(cls: ast.ClassDef) -> set[str]:
    return {
        t.attr
        for node in ast.walk(cls)
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Attribute) and ast.unparse(t.value) == "self" and not t.attr.startswith("_")
    }


def output_documentation_problems(source: str) -> list[str]:
    """Every public attribute a component sets is declared on the class with a comment."""
    lines, out = source.splitlines(), []
    for cls in _component_classes(ast.parse(source)):
        declared = {ast.unparse(n.target): n for n in cls.body if isinstance(n, ast.AnnAssign)}
        out += [
            f"{cls.name}.{a}: set but not declared on the class"
            for a in sorted(_assigned_attributes(cls) - set(declared))
        ]
        for name, node in declared.items():
            above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
            if "#" not in lines[node.lineno - 1] and not above.startswith("#"):
                out.append(f"{cls.name}.{name}: undescribed")
    return out


# Constructors of resources: a component's __init__ calls none of them itself.
RESOURCE_MODULES = ("aws.", "k8s.", "eks.", "random.", "docker_build.")
MAX_INIT_STATEMENTS = 16


def named_steps_problems(source: str) -> list[str]:
    """A component's __init__ reads as a short sequence of named steps: it registers no resource
    itself (each is made in a step method) and stays short."""
    out = []
    for cls in _component_classes(ast.parse(source)):
        init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if init is None:
            continue
        for node in ast.walk(init):
            if isinstance(node, ast.Call) and ast.unparse(node.func).startswith(RESOURCE_MODULES):
                out.append(f"{cls.name}.__init__ registers {ast.unparse(node.func)} itself: make it a step")
        if len(init.body) > MAX_INIT_STATEMENTS:
            out.append(f"{cls.name}.__init__ has {len(init.body)} statements (at most {MAX_INIT_STATEMENTS})")
    return out


# --- the rules hold on the code -------------------------------------------------------------


def test_every_component_token_is_slinky_eks_group_and_class_name():
    problems = [
        p
        for path in sorted(COMPONENTS_DIR.glob("*.py"))
        for p in token_problems(path.read_text(), token_groups())
    ]
    assert problems == []


def test_the_token_check_sees_every_component_the_dev_stack_registers(dev):
    # The scaling components exist only where a pool autoscales (docs/scaling.md); SlurmLayer only
    # in a program with its own cluster (examples/own-cluster), SlurmOnEks only where Pulumi's
    # component provider constructs it (provider/__main__.py).
    scaling = run_program("dev", {"gpuMinNodes": "0", "gpuMaxNodes": "4"})
    example = run_function(lambda: runpy.run_path(str(ROOT / "examples/own-cluster/__main__.py")))
    published = published_layer.run(published_layer.dev_settings())
    # The network component of a VPC the stack is given (README, "Into an existing VPC").
    existing_vpc = run_program(
        "dev",
        {
            "vpcId": offline_account.LANDING_ZONE_VPC,
            "privateSubnetIds": list(offline_account.LANDING_ZONE_PRIVATE.values()),
        },
        account=offline_account.LANDING_ZONE,
    )
    # The cluster component of an EKS cluster the stack is given (README, "Into an existing EKS
    # cluster").
    existing = run_program(
        "dev",
        {
            "existingClusterName": offline_account.EXISTING_CLUSTER_NAME,
            "vpcId": offline_account.LANDING_ZONE_VPC,
            "privateSubnetIds": list(offline_account.LANDING_ZONE_PRIVATE.values()),
            "publicSubnetIds": list(offline_account.LANDING_ZONE_PUBLIC.values()),
        },
        account=offline_account.EXISTING_CLUSTER,
    )
    # The network-topology writer only where a pool's type has a place (docs/topology.md).
    placed = run_program("dev", {"gpuInstanceType": "p5.48xlarge"})
    registered = {
        r.type
        for graph in (dev, scaling, example, published, existing_vpc, existing, placed)
        for r in graph.resources
        if r.type.startswith("slinky-eks:")
    }
    assert registered == set(component_tokens().values())


def test_every_listed_group_has_a_component():
    used = {token.split(":")[1] for token in component_tokens().values()}
    assert used == token_groups()


def test_args_fields_order_work_only_through_depends_on():
    assert args_classes(), "no args classes found"
    assert [p for cls in args_classes() for p in args_problems(cls)] == []


def test_components_take_the_cluster_as_one_context():
    assert [p for cls in args_classes() for p in context_problems(cls)] == []


def test_components_expose_what_to_wait_for_as_ready_lists():
    assert component_classes(), "no components found"
    assert [p for cls in component_classes() for p in ready_problems(cls)] == []


def test_the_program_wires_dependencies_from_ready_lists():
    assert wiring_problems((ROOT / "__main__.py").read_text()) == []
    assert wiring_problems((ROOT / "components" / "slurm_layer.py").read_text()) == []


def test_every_args_field_is_documented():
    assert [
        p for path in sorted(COMPONENTS_DIR.glob("*.py")) for p in documentation_problems(path.read_text())
    ] == []


def test_every_component_output_attribute_is_described():
    assert [
        p
        for path in sorted(COMPONENTS_DIR.glob("*.py"))
        for p in output_documentation_problems(path.read_text())
    ] == []


def test_every_component_init_reads_as_named_steps():
    assert [
        p for path in sorted(COMPONENTS_DIR.glob("*.py")) for p in named_steps_problems(path.read_text())
    ] == []


# --- each rule catches a break --------------------------------------------------------------

GOOD_TOKEN = """
import pulumi
class Pool(pulumi.ComponentResource):
    def __init__(self, name, args, opts=None):
        super().__init__("slinky-eks:nodes:Pool", name, None, opts)
"""


def test_the_token_rule_accepts_group_and_class_name():
    assert token_problems(GOOD_TOKEN, {"nodes"}) == []


@pytest.mark.parametrize(
    "token",
    ["slinky-eks:node_groups:Pool", "slinky-eks:nodes:NodePool", "other:nodes:Pool", "slinky-eks:Pool"],
)
def test_the_token_rule_rejects_an_unlisted_group_or_another_type(token):
    assert token_problems(GOOD_TOKEN.replace("slinky-eks:nodes:Pool", token), {"nodes"}) != []


@dataclass(frozen=True)
class _GoodArgs:
    """Every field is required (no defaults)."""

    namespace: str
    provider: k8s.Provider
    depends_on: Sequence[pulumi.Resource]
    release_depends_on: Sequence[pulumi.Resource]


@dataclass(frozen=True)
class _RetiredArgs:
    after: Sequence[pulumi.Resource]


@dataclass(frozen=True)
class _HiddenOrderArgs:
    operator: pulumi.Resource


@dataclass(frozen=True)
class _SingleDependencyArgs:
    depends_on: pulumi.Resource


@dataclass(frozen=True)
class _NamespaceObjectArgs:
    namespace: k8s.core.v1.Namespace


@dataclass(frozen=True)
class _SeparateClusterArgs:
    cluster_name: str
    provider: k8s.Provider


def test_the_context_rule_rejects_the_cluster_passed_field_by_field():
    assert context_problems(_SeparateClusterArgs) == [
        "_SeparateClusterArgs.cluster_name: the cluster's, passed as `cluster: ClusterContext`",
        "_SeparateClusterArgs.provider: the cluster's, passed as `cluster: ClusterContext`",
    ]


def test_the_args_rule_accepts_the_vocabulary():
    assert args_problems(_GoodArgs) == []


@pytest.mark.parametrize("cls", [_RetiredArgs, _HiddenOrderArgs, _SingleDependencyArgs, _NamespaceObjectArgs])
def test_the_args_rule_rejects_another_name_or_kind(cls):
    assert args_problems(cls) != []


class _Exposes(pulumi.ComponentResource):
    ready: list[pulumi.Resource]
    core_ready: list[pulumi.Resource]
    release: pulumi.Resource


class _ExposesSystemNodes(pulumi.ComponentResource):
    system_nodes: list[pulumi.Resource]


class _ExposesOneResourceAsReady(pulumi.ComponentResource):
    ready: pulumi.Resource


def test_the_ready_rule_accepts_ready_lists():
    assert ready_problems(_Exposes) == []


@pytest.mark.parametrize("cls", [_ExposesSystemNodes, _ExposesOneResourceAsReady])
def test_the_ready_rule_rejects_another_name_or_kind(cls):
    assert ready_problems(cls) != []


def test_the_wiring_rule_accepts_ready_lists():
    assert wiring_problems("X(depends_on=[*nodes.core_ready, *storage.namespace_ready])") == []


def test_the_wiring_rule_rejects_a_child_resource():
    assert wiring_problems("X(depends_on=[*nodes.core_ready, storage.namespace])") != []


def test_the_wiring_rule_passes_on_the_callers_ordering_and_nothing_else_of_its_args():
    assert wiring_problems("X(depends_on=args.depends_on)") == []
    assert wiring_problems("X(depends_on=args.cluster.pod_identity_ready)") == []
    assert wiring_problems("X(depends_on=[args.network])") != []
    assert wiring_problems("X(depends_on=other.depends_on)") != []


DOCUMENTED = '''
@dataclass(frozen=True)
class PoolArgs:
    """Every field is required unless its comment names a default."""
    # The pool's name.
    name: str
    count: int = 1   # nodes; default 1
'''


def test_the_documentation_rule_accepts_commented_fields():
    assert documentation_problems(DOCUMENTED) == []


@pytest.mark.parametrize(
    "broken",
    [
        DOCUMENTED.replace("    # The pool's name.\n", ""),
        DOCUMENTED.replace("# nodes; default 1", "# nodes"),
        DOCUMENTED.replace('    """Every field is required unless its comment names a default."""\n', ""),
    ],
)
def test_the_documentation_rule_rejects_an_undocumented_field_default_or_class(broken):
    assert documentation_problems(broken) != []


STEPS = """
import pulumi
from tests.support.paths import REPO
from tests.support.paths import REPO
class Pool(pulumi.ComponentResource):
    # The pool's node group.
    group: object
    size: int   # its node count

    def __init__(self, name, args, opts=None):
        super().__init__("slinky-eks:nodes:Pool", name, None, opts)
        self.group = self._group()
        self.size = 1

    def _group(self):
        return aws.eks.NodeGroup("g")
"""


def test_the_output_rule_accepts_declared_described_attributes():
    assert output_documentation_problems(STEPS) == []


@pytest.mark.parametrize(
    "broken",
    [STEPS.replace("    size: int   # its node count\n", ""), STEPS.replace("   # its node count", "")],
)
def test_the_output_rule_rejects_an_undeclared_or_undescribed_attribute(broken):
    assert output_documentation_problems(broken) != []


def test_the_steps_rule_accepts_an_init_of_steps():
    assert named_steps_problems(STEPS) == []


def test_the_steps_rule_rejects_a_resource_made_in_init():
    inline = STEPS.replace("self.group = self._group()", 'self.group = aws.eks.NodeGroup("g")')
    assert named_steps_problems(inline) != []


def test_the_steps_rule_rejects_a_long_init():
    long = STEPS.replace("        self.size = 1\n", "        self.size = 1\n" * (MAX_INIT_STATEMENTS + 1))
    assert named_steps_problems(long) != []
