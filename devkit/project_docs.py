"""Write what the model declares into the files that repeat it: Pulumi.yaml's `config:` block
(the rest of the file kept byte for byte), the README's config and outputs tables (between
their markers), from model/checks/config_schema.py and model/facts/outputs.py; docs/rules.md's table of
the configuration rules' ids (devkit/rule_catalogue.py); and docs/architecture.md's inventories
(between their markers) from the code itself: the component graph and the component table from
__main__.py's wiring and each component's token and docstring, the token groups from
components/__init__.py, the model's modules, the in-cluster programs and the repository layout from
each module's or package's docstring; and docs/deploy-time.md's tables (between their markers):
the modelled first `up` of the dev stack by builder and deployer's link, and the sizes and rates
it uses, from devkit/bench_timeline.py (which runs the repository's program under the mocks,
whatever --root says).

    python -m devkit.project_docs            # rewrite the stale files
    python -m devkit.project_docs --check    # write nothing; one line per stale file, exit 1

The output depends on the tables only, never on the day or the machine.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import pathlib
import re
import sys
from typing import Any

import yaml

from devkit import rule_catalogue
from model.builders.charts import BUILDERS
from model.checks import config_schema
from model.facts.outputs import OUTPUTS, Output

REPO = pathlib.Path(__file__).resolve().parent.parent
PROJECT_FILE, README, RULES_PAGE, ARCHITECTURE, DEPLOY_TIME = (
    "Pulumi.yaml",
    "README.md",
    "docs/rules.md",
    "docs/architecture.md",
    "docs/deploy-time.md",
)
COMMAND = "python -m devkit.project_docs"
# A fixed day: only the Kubernetes version's rules read the calendar, and no rule is written out.
_DAY = datetime.date(2026, 1, 1)


class StaleDocError(Exception):
    """A file the generator cannot write into (a marker or the config block missing)."""


def _yaml_scalar(value: Any) -> str:
    """value as YAML that reads back as itself: plain where YAML reads it so (g6.12xlarge), else
    double-quoted ("1.36" would read as a float, "" as null); JSON's strings are YAML's
    double-quoted scalars (YAML 1.2, section 7.3.1)."""
    plain = value if isinstance(value, str) else json.dumps(value)
    try:
        reads_as_itself = bool(plain) and yaml.safe_load(f"k: {plain}\n") == {"k": value}
    except yaml.YAMLError:  # e.g. ': ' inside, which starts a mapping
        reads_as_itself = False
    return plain if reads_as_itself else json.dumps(value, ensure_ascii=False)


def config_block(keys: tuple[config_schema.Key, ...]) -> str:
    """Pulumi.yaml's `config:` block: the project's own keys (aws:region is the AWS provider's)."""
    lines = ["config:"]
    for key in keys:
        if ":" in key.name:
            continue
        lines += [f"  {key.name}:", f"    type: {key.type}"]
        if key.items:
            lines += ["    items:", f"      type: {key.items}"]
        if key.default is not config_schema.REQUIRED:
            lines.append(f"    default: {_yaml_scalar(key.default)}")
        lines.append(f"    description: {_yaml_scalar(key.description)}")
    block = "\n".join(lines) + "\n"
    _reads_back(block, keys)
    return block


def _reads_back(block: str, keys: tuple[config_schema.Key, ...]) -> None:
    """Refuse a block YAML would read other than the table says (a scalar quoted wrong)."""
    read = yaml.safe_load(block)["config"]
    for key in keys:
        if ":" in key.name:
            continue
        want = {
            "type": key.type,
            "description": key.description,
            **({"items": {"type": key.items}} if key.items else {}),
            **({} if key.default is config_schema.REQUIRED else {"default": key.default}),
        }
        if read[key.name] != want:
            raise StaleDocError(
                f"{PROJECT_FILE}: key {key.name} reads back as {read[key.name]!r}, "
                f"the table declares {want!r}"
            )


def project_file(text: str, keys: tuple[config_schema.Key, ...]) -> str:
    """Pulumi.yaml with its top-level `config:` block (up to the next top-level key) replaced."""
    start = re.search(r"^config:[ \t]*$", text, re.M)
    if not start:
        raise StaleDocError(f"{PROJECT_FILE}: no top-level 'config:' line to write the keys under")
    end = re.compile(r"^[^\s#]", re.M).search(text, start.end())
    return text[: start.start()] + config_block(keys) + (text[end.start() :] if end else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _default_cell(key: config_schema.Key) -> str:
    if key.default is config_schema.REQUIRED:
        return "(stack)"
    shown = key.default if isinstance(key.default, str) and key.default else json.dumps(key.default)
    return f"`{shown}`" + (f" (= {key.unset_means})" if key.unset_means else "")


def config_table(keys: tuple[config_schema.Key, ...]) -> str:
    rows = ["| key | default | meaning | changing it on a running stack |", "| --- | --- | --- | --- |"]
    rows += [
        f"| `{k.name}` | {_cell(_default_cell(k))} | {_cell(' '.join(filter(None, (k.description, k.doc))))} "
        f"| {_cell(k.on_change)} |"
        for k in keys
    ]
    return "\n".join(rows) + "\n"


def outputs_table(outputs: tuple[Output, ...]) -> str:
    rows = ["| output | what |", "| --- | --- |"]
    rows += [f"| `{o.name}` | {_cell(o.description)} |" for o in outputs]
    return "\n".join(rows) + "\n"


def _between_markers(text: str, marker: str, body: str, name: str = README) -> str:
    """text with the lines between `<!-- marker: ... -->` and `<!-- /marker -->` replaced by body."""
    found = re.search(rf"^<!-- {marker}:[^\n]*-->\n(.*?)^<!-- /{marker} -->$", text, re.M | re.S)
    if not found:
        raise StaleDocError(f"{name}: no '<!-- {marker}: ... -->' ... '<!-- /{marker} -->' block")
    return text[: found.start(1)] + body + text[found.end(1) :]


def readme(text: str, keys: tuple[config_schema.Key, ...], outputs: tuple[Output, ...]) -> str:
    text = _between_markers(text, "config-table", config_table(keys))
    return _between_markers(text, "outputs-table", outputs_table(outputs))


def rules_page(text: str) -> str:
    """docs/rules.md with its table of every rule id between the rules-table markers."""
    return _between_markers(text, "rules-table", rule_catalogue.table(), RULES_PAGE)


# --- docs/architecture.md: its inventories, from the code's own docstrings and wiring ----------

# Top-level directories that are not Python packages, and what each holds; a package's row is its
# __init__.py docstring. A directory with Python in neither is a missing row: the check fails.
LAYOUT_OTHERS = {
    "charts-values/": "reviewed base values of the upstream charts, one file per chart (their versions: "
    "`model/facts/versions.py`; what each release gets over them: `model/builders/`)",
    "docs/": "these pages; `docs/decisions/` one decision per file",
    "examples/": "programs of their own that compose the package's components: `own-cluster/` declares "
    "its VPC and EKS cluster and adds Slurm with SlurmLayer (`components/slurm_layer.py`)",
    "provider/": "the component provider that serves SlurmOnEks (`components/slurm_on_eks.py`) to Pulumi "
    "programs in any language (`pulumi package add <this repository>/provider@<tag>`)",
    "image/": "the slurmd Dockerfile, its build-time assertions and a standalone build script",
    "jobs/": "the Slurm jobs staged onto the shared volume (sanity, nccl-tests, fine-tune)",
    "observability/": "the alert rules, the Grafana dashboards and the DCGM counter list the metrics "
    "components ship (`model/builders/metrics.py`, `model/builders/dashboards.py`)",
}
TOKEN = re.compile(r'"slinky-eks:(\w+):(\w+)"')
# Where components are wired to each other: the program, and the Slurm layer's one wiring, which
# __main__.py calls as the function and SlurmLayer wraps (components/slurm_layer.py); a call of the
# function is drawn as the component.
WIRING = ("__main__.py", "components/slurm_layer.py")
WIRING_FUNCTIONS = {"declare_slurm_layer": "SlurmLayer"}


def _first_sentence(doc: str | None, where: str) -> str:
    """The docstring's first sentence on one line; a module without one is a missing row."""
    if not doc or not doc.strip():
        raise StaleDocError(f"{where}: no docstring, so no row in {ARCHITECTURE}; give it one")
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    sentence = re.match(r"(.+?\.)(?:\s|$)", paragraph)
    return _cell((sentence.group(1) if sentence else paragraph).rstrip("."))


def _docstring(path: pathlib.Path, root: pathlib.Path) -> str:
    return _first_sentence(ast.get_docstring(ast.parse(path.read_text())), str(path.relative_to(root)))


def _modules(root: pathlib.Path, package: str) -> list[pathlib.Path]:
    return sorted(p for p in (root / package).rglob("*.py") if "__pycache__" not in p.parts)


def module_table(root: pathlib.Path) -> str:
    """Every module of model/, package by package, with its docstring's first sentence."""
    rows = ["| module | what |", "| --- | --- |"]
    rows += [f"| `{p.relative_to(root)}` | {_docstring(p, root)} |" for p in _modules(root, "model")]
    return "\n".join(rows) + "\n"


def program_table(root: pathlib.Path) -> str:
    """Every in-cluster program of cluster_programs/ with its docstring's first sentence."""
    rows = ["| program | what |", "| --- | --- |"]
    rows += [
        f"| `{p.relative_to(root)}` | {_docstring(p, root)} |"
        for p in _modules(root, "cluster_programs")
        if p.name != "__init__.py"
    ]
    return "\n".join(rows) + "\n"


def layout_table(root: pathlib.Path) -> str:
    """Each top-level directory (and __main__.py): a package's docstring, or its LAYOUT_OTHERS row."""
    rows = [
        "| path | role |",
        "| --- | --- |",
        f"| `__main__.py` | {_docstring(root / '__main__.py', root)} |",
    ]
    # A directory .gitignore names at the top (`/build/`, where `pip install .` builds the package)
    # is no part of the layout, whatever it holds on this machine.
    ignore = root / ".gitignore"
    ignored = set(re.findall(r"^/([^/*\s]+)/$", ignore.read_text(), re.M)) if ignore.exists() else set()
    for directory in sorted(
        d
        for d in root.iterdir()
        if d.is_dir() and not d.name.startswith((".", "_")) and d.name not in ignored
    ):
        name, init = f"{directory.name}/", directory / "__init__.py"
        if name in LAYOUT_OTHERS:
            rows.append(f"| `{name}` | {_cell(LAYOUT_OTHERS[name])} |")
        elif init.exists():
            rows.append(f"| `{name}` | {_docstring(init, root)} |")
        elif any(directory.rglob("*.py")):
            raise StaleDocError(
                f"{name}: holds Python but is neither a package nor in LAYOUT_OTHERS ({COMMAND})"
            )
    return "\n".join(rows) + "\n"


def token_groups(root: pathlib.Path) -> list[tuple[str, str]]:
    """(group, what) of each token group components/__init__.py lists."""
    doc = ast.get_docstring(ast.parse((root / "components" / "__init__.py").read_text())) or ""
    return re.findall(r"^- `([a-z]+)`: (.+?)(?=\n- |\n\n|\Z)", doc, re.M | re.S)


def components(root: pathlib.Path) -> list[tuple[str, str, str, str]]:
    """(group, class, module path, what) of each component, by its registered token."""
    found = []
    for path in _modules(root, "components"):
        if path.parent.name != "components" or path.name.startswith("_"):
            continue
        for group, cls in TOKEN.findall(path.read_text()):
            found.append((group, cls, str(path.relative_to(root)), _docstring(path, root)))
    return sorted(found)


def component_table(root: pathlib.Path) -> str:
    rows = ["| token | module | what |", "| --- | --- | --- |"]
    rows += [f"| `slinky-eks:{g}:{c}` | `{m}` | {w} |" for g, c, m, w in components(root)]
    return "\n".join(rows) + "\n"


def token_group_list(root: pathlib.Path) -> str:
    return "".join(f"- `{g}`: {' '.join(w.split())}\n" for g, w in token_groups(root))


def wiring(root: pathlib.Path) -> list[tuple[str, str]]:
    """(from class, to class) for each component whose args name another component's attribute
    where components are wired (WIRING), and for each component that declares another inside
    itself."""
    classes = {c for _, c, _, _ in components(root)}
    called = {**{c: c for c in classes}, **WIRING_FUNCTIONS}
    tree = ast.Module(
        body=[n for f in WIRING for n in ast.parse((root / f).read_text()).body], type_ignores=[]
    )
    made: dict[str, str] = {}  # variable -> component class
    calls: list[tuple[str, ast.Call]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in called:
            calls.append((called[node.func.id], node))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            for cls, call in calls:
                if any(n is call for n in ast.walk(node.value)):
                    made[node.targets[0].id] = cls
    edges = set()
    for cls, call in calls:
        for n in ast.walk(call):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in made:
                if made[n.value.id] != cls:
                    edges.add((made[n.value.id], cls))
    for _, parent, path, _ in components(root):
        source = (root / path).read_text()
        edges |= {(parent, c) for c in classes if c != parent and re.search(rf"\b{c}\(", source)}
    return sorted(edges)


def component_graph(root: pathlib.Path) -> str:
    """A mermaid flowchart: the components in their token groups, and what waits for what."""
    lines = ["```mermaid", "flowchart LR"]
    by_group: dict[str, list[str]] = {}
    for group, cls, _, _ in components(root):
        by_group.setdefault(group, []).append(cls)
    for group, _ in token_groups(root):
        lines.append(f"  subgraph {group}")
        lines += [f"    {cls}" for cls in by_group.get(group, [])]
        lines.append("  end")
    lines += [f"  {a} --> {b}" for a, b in wiring(root)]
    return "\n".join(lines + ["```"]) + "\n"


def chart_table() -> str:
    """Each chart: its reviewed base values and the builder of what its release gets over them."""
    rows = ["| chart | base values | builder |", "| --- | --- | --- |"]
    rows += [
        f"| {chart} | `charts-values/{chart}.yaml` | `model/builders/{builder.rpartition('.')[0]}.py` "
        f"`{builder.rpartition('.')[2]}` |"
        for chart, builder in sorted(BUILDERS.items())
    ]
    return "\n".join(rows) + "\n"


def architecture(text: str, root: pathlib.Path) -> str:
    for marker, body in (
        ("chart-table", chart_table()),
        ("component-graph", component_graph(root)),
        ("token-groups", token_group_list(root)),
        ("component-table", component_table(root)),
        ("module-table", module_table(root)),
        ("program-table", program_table(root)),
        ("layout-table", layout_table(root)),
    ):
        text = _between_markers(text, marker, body, ARCHITECTURE)
    return text


def deploy_time(text: str) -> str:
    """docs/deploy-time.md with the modelled `up` by builder and link, and the build's inputs."""
    from devkit import bench_timeline  # runs the program under the mocks: only when this page is written

    graph = bench_timeline.run_program("dev")
    for marker, body in (
        ("deploy-time-table", bench_timeline.deploy_time_table(graph)),
        ("image-build-inputs", bench_timeline.image_inputs_markdown()),
    ):
        text = _between_markers(text, marker, body, DEPLOY_TIME)
    return text


def written(root: pathlib.Path) -> dict[str, tuple[str, str]]:
    """Each file's name -> (its text now, the text the tables give)."""
    keys = config_schema.schema(_DAY)
    out = {}
    for name, write in (
        (PROJECT_FILE, lambda t: project_file(t, keys)),
        (README, lambda t: readme(t, keys, OUTPUTS)),
        (RULES_PAGE, rules_page),
        (ARCHITECTURE, lambda t: architecture(t, root)),
        (DEPLOY_TIME, deploy_time),
    ):
        now = (root / name).read_text()
        out[name] = (now, write(now))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each stale file")
    parser.add_argument(
        "--root", type=pathlib.Path, default=REPO, help="the project directory (default: this one)"
    )
    args = parser.parse_args(argv)
    try:
        files = written(args.root)
    except (StaleDocError, OSError) as e:
        print(e, file=sys.stderr)
        return 2
    stale = [name for name, (now, then) in files.items() if now != then]
    for name in stale:
        if args.check:
            print(
                f"{name}: stale, differs from what the code declares (model/checks/config_schema.py, "
                f"model/facts/outputs.py, the modules' docstrings, the components' wiring, "
                f"devkit/bench_timeline.py); run {COMMAND}"
            )
        else:
            (args.root / name).write_text(files[name][1])
            print(f"{name}: written")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
