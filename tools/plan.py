"""An offline plan: run the program under Pulumi's mocks for a stack's config and write the
resource graph, a picture of it and the values of every Helm release, so a pull request can be
reviewed without cloud credentials.

    python -m tools.plan --stack dev --out plan/ [--set gpuInstanceType=p5.48xlarge ...]

Writes plan/graph.json (resources, inputs with secrets redacted, dependency edges), plan/graph.mmd
(Mermaid), plan/graph.png, plan/values/<release>.yaml and plan/manifests/<release>.yaml (what each
release installs, rendered from the upstream chart at its pinned version: tools/chart_render.py).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import yaml  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from harness import Graph, is_secret, run_program  # noqa: E402  (the same mock run the tests assert on)
from tools import chart_render, reference_data  # noqa: E402

REDACTED = "[secret]"
# What a chart makes up at install time when `lookup` finds nothing (keys, certificates, CA bundles).
GENERATED = "[generated at install]"


def _edges(graph: Graph) -> dict[str, set[str]]:
    """Direct dependencies by URN: explicit, through inputs, and the provider."""
    urns = {r.urn for r in graph.resources}
    out = {}
    for r in graph.resources:
        deps = set(r.dependencies) | {u for us in r.property_dependencies.values() for u in us}
        if r.provider:
            deps.add(r.provider.rsplit("::", 1)[0])
        out[r.urn] = {d for d in deps if d in urns and d != r.urn}
    return out


def to_json(graph: Graph) -> dict:
    by_urn = {r.urn: r.name for r in graph.resources}
    edges = _edges(graph)
    resources = []
    for r in sorted(graph.resources, key=lambda r: r.urn):
        inputs = {k: (REDACTED if k in r.secret_inputs else v) for k, v in sorted(r.inputs.items())}
        resources.append({"name": r.name, "type": r.type, "urn": r.urn,
                          "parent": by_urn.get(r.parent), "component": not r.custom,
                          "dependsOn": sorted(by_urn[d] for d in edges[r.urn]), "inputs": inputs})
    outputs = {k: (REDACTED if is_secret(v) else v)
               for k, v in sorted(graph.stack_outputs.items())}
    return {"resources": resources, "outputs": outputs}


def _nodes(graph: Graph) -> set[str]:
    """What the engine creates: custom resources and remote components (the EKS cluster), not
    this program's own grouping components."""
    return {r.urn for r in graph.resources if r.custom or r.remote}


def levels(graph: Graph) -> dict[str, int]:
    """Longest-path depth of each custom resource: what `pulumi up` can do side by side."""
    edges = _edges(graph)
    custom = _nodes(graph)
    depth: dict[str, int] = {}

    def visit(urn: str, seen: tuple = ()) -> int:
        if urn not in depth:
            deps = [d for d in edges[urn] if d in custom and d not in seen]
            depth[urn] = 1 + max((visit(d, seen + (urn,)) for d in deps), default=-1)
        return depth[urn]

    for urn in custom:
        visit(urn)
    return depth


def to_mermaid(graph: Graph) -> str:
    names = {r.urn: r.name for r in graph.resources}
    ids = {r.urn: f"r{i}" for i, r in enumerate(sorted(graph.resources, key=lambda r: r.urn))}
    edges = _edges(graph)
    lines = ["flowchart LR"]
    children = defaultdict(list)
    nodes = _nodes(graph)
    for r in sorted(graph.resources, key=lambda r: r.urn):  # registration order varies between runs
        if r.urn in nodes:
            children[r.parent].append(r)
    for parent, members in sorted(children.items(), key=lambda kv: names.get(kv[0], "")):
        label = names.get(parent)
        if label:
            lines.append(f'  subgraph {ids[parent]}["{label}"]')
        lines += [f'    {ids[r.urn]}["{r.name}<br/><small>{r.type.split(":")[-1]}</small>"]' for r in members]
        if label:
            lines.append("  end")
    for urn in sorted(nodes):
        lines += [f"  {ids[d]} --> {ids[urn]}" for d in sorted(edges[urn]) if d in nodes]
    return "\n".join(lines) + "\n"


def to_png(graph: Graph, path: pathlib.Path) -> None:
    depth = levels(graph)
    names = {r.urn: r.name for r in graph.resources}
    columns = defaultdict(list)
    for urn, d in sorted(depth.items(), key=lambda kv: (names[kv[0]], kv[0])):  # names repeat
        columns[d].append(urn)
    pos = {urn: (d, -i) for d, urns in columns.items() for i, urn in enumerate(urns)}
    tallest = max(len(u) for u in columns.values())
    fig, ax = plt.subplots(figsize=(3.2 * len(columns), max(4, 0.32 * tallest)))
    edges = _edges(graph)
    for urn, deps in sorted(edges.items()):  # drawing order decides overlapping pixels
        for d in sorted(deps):
            if urn in pos and d in pos:
                ax.annotate("", xy=pos[urn], xytext=pos[d],
                            arrowprops={"arrowstyle": "->", "color": "0.75", "lw": 0.6})
    for urn, (x, y) in pos.items():
        ax.text(x, y, names[urn], fontsize=6.5, ha="center", va="center",
                bbox={"boxstyle": "round", "fc": "white", "ec": "0.4", "lw": 0.5})
    ax.set_title(f"{len(pos)} resources in {len(columns)} waves (left to right: what can run side by side)")
    ax.axis("off")
    ax.set_xlim(-0.7, len(columns) - 0.3)
    ax.set_ylim(-tallest, 1)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_plan(graph: Graph, out: pathlib.Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "graph.json").write_text(json.dumps(to_json(graph), indent=2, sort_keys=True, default=str) + "\n")
    (out / "graph.mmd").write_text(to_mermaid(graph))
    to_png(graph, out / "graph.png")
    values = out / "values"
    values.mkdir(exist_ok=True)
    for r in graph.of_type("kubernetes:helm.sh/v3:Release"):
        body = REDACTED if "values" in r.secret_inputs else r.inputs.get("values", {})
        header = f"# {r.inputs.get('chart')} {r.inputs.get('version')} (release {r.inputs.get('name')}, " \
                 f"namespace {r.inputs.get('namespace')})\n"
        (values / f"{r.name}.yaml").write_text(header + yaml.safe_dump(body, sort_keys=True))


def _generated_as_marker(first, second, where: str):
    """`first` with every value that differs in `second` (a render of the same input) replaced by
    GENERATED: what a chart generates at random is all that changes between two renders."""
    if isinstance(first, dict) and isinstance(second, dict) and first.keys() == second.keys():
        return {k: _generated_as_marker(first[k], second[k], f"{where}.{k}") for k in first}
    if isinstance(first, list) and isinstance(second, list) and len(first) == len(second):
        return [_generated_as_marker(a, b, f"{where}[{i}]") for i, (a, b) in enumerate(zip(first, second, strict=True))]
    if type(first) is type(second) and not isinstance(first, (dict, list)):
        return first if first == second else GENERATED
    raise chart_render.ChartRenderError(f"{where}: two renders of the same input differ in shape")


def stable_manifests(graph: Graph) -> dict[str, list[tuple[str, dict]]]:
    """(source, object) of every release, rendered twice so that what the charts generate at random
    (the LBC webhook certificate, slurm's keys if the chart made them) reads GENERATED: the same
    bytes on every run, and a plan diff shows only what the program changed."""
    first = chart_render.render_graph_release_sources(graph)
    second = chart_render.render_graph_release_sources(graph)
    return {release: [(source, _generated_as_marker(obj, again, f"{release}:{source}"))
                      for (source, obj), (_, again) in zip(objects, second[release], strict=True)]
            for release, objects in first.items()}


def write_manifests(graph: Graph, out: pathlib.Path) -> None:
    """plan/manifests/<release>.yaml: every object a release installs, as `helm template` lists it."""
    manifests = out / "manifests"
    manifests.mkdir(parents=True, exist_ok=True)
    rendered = stable_manifests(graph)
    for r in graph.of_type(chart_render.RELEASE_TYPE):
        request = chart_render.release_request(r)
        name = request["release_name"]
        header = (f"# {request['chart']} {request['version']} (release {name}, namespace {request['namespace']}), "
                  f"rendered with the values in values/{r.name}.yaml\n")
        if "values" in r.secret_inputs:
            body = f"# {REDACTED}: the values are secret\n"
        else:
            body = "".join(f"---\n# Source: {source}\n" + yaml.safe_dump(obj, sort_keys=True)
                           for source, obj in rendered[name])
        (manifests / f"{name}.yaml").write_text(header + body)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="plan", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stack", default="dev")
    p.add_argument("--out", type=pathlib.Path, default=pathlib.Path("plan"))
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key (JSON values allowed: --set 'sshAllowedCidrs=[\"198.51.100.0/24\"]')")
    args = p.parse_args(argv)
    overrides = {}
    for item in args.set:
        key, _, value = item.partition("=")
        try:
            overrides[key] = json.loads(value)
        except json.JSONDecodeError:
            overrides[key] = value
    try:
        graph = run_program(args.stack, overrides)
    except Exception as error:  # noqa: BLE001 - the program's own error (e.g. invalid config) is the answer
        print(error, file=sys.stderr)
        return 1
    write_plan(graph, args.out)
    try:
        write_manifests(graph, args.out)
    except (reference_data.ReferenceDataMissing, chart_render.ChartRenderError) as error:
        print(f"cannot render the manifests: {error}", file=sys.stderr)
        return 1
    print(f"{len(graph.resources)} resources, {len(graph.of_type('kubernetes:helm.sh/v3:Release'))} "
          f"Helm releases -> {args.out}/graph.json, graph.mmd, graph.png, values/, manifests/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
