"""An offline plan: run the program under Pulumi's mocks for a stack's config and write the
resource graph, a picture of it and the values of every Helm release, so a pull request can be
reviewed without cloud credentials.

    python -m devkit.plan --stack dev --out plan/ [--set gpuInstanceType=p5.48xlarge ...]
        [--set-json 'sshAllowedCidrs=["198.51.100.7/32"]']

--set KEY=VALUE gives VALUE as a string, as `pulumi config set KEY VALUE` does (the program parses
numbers and booleans itself, so kubernetesVersion=1.30 stays "1.30"); --set-json KEY=JSON is for
lists and objects. Exit status: 0 planned; 1 the program refused the config (its warnings printed
first, its error after); 2 a bad --set.

Prints first every warning the program logged for the stack (the lines `pulumi preview` shows as
warnings: stack/config.py logs each with pulumi.log.warn), under their own heading, then what it
wrote and what the nodes cost.

Writes plan/graph.json (resources, inputs with secrets redacted, dependency edges, the warnings), plan/graph.mmd
(Mermaid), plan/graph.png, plan/values/<release>.yaml and plan/manifests/<release>.yaml (what each
release installs, rendered from the upstream chart at its pinned version: devkit/chart_render.py).
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

from devkit import chart_render, offline_account, reference_data  # noqa: E402
from devkit.offline_run import Graph, is_secret, run_program  # noqa: E402  (the same mock run the tests assert on)
from model.facts import cost  # noqa: E402

REDACTED = "[secret]"
# What a chart makes up at install time when `lookup` finds nothing (keys, certificates, CA bundles).
GENERATED = "[generated at install]"


def integers(value):
    """Numbers cross the engine's wire as protobuf doubles (google/protobuf/struct.proto:
    number_value), so the program's 2 comes back as 2.0; the providers send whole doubles as
    integers again (encoding/json writes float64 2 as `2`), and so does the plan."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: integers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integers(v) for v in value]
    return value


def direct_dependencies(graph: Graph) -> dict[str, set[str]]:
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
    edges = direct_dependencies(graph)
    resources = []
    for r in sorted(graph.resources, key=lambda r: r.urn):
        inputs = {k: (REDACTED if k in r.secret_inputs else integers(v)) for k, v in sorted(r.inputs.items())}
        resources.append(
            {
                "name": r.name,
                "type": r.type,
                "urn": r.urn,
                "parent": by_urn.get(r.parent),
                "component": not r.custom,
                "dependsOn": sorted(by_urn[d] for d in edges[r.urn]),
                "inputs": inputs,
            }
        )
    outputs = {k: (REDACTED if is_secret(v) else integers(v)) for k, v in sorted(graph.stack_outputs.items())}
    if isinstance(outputs.get("costPerHour"), dict):
        outputs["costPerHour"] = offline_prices(outputs["costPerHour"])
    return {
        "resources": resources,
        "outputs": outputs,
        "counts": counts(graph),
        "warnings": list(graph.warnings),
    }


def engine_resources(graph: Graph) -> set[str]:
    """What the engine creates: custom resources and remote components (the EKS cluster), not
    this program's own grouping components."""
    return {r.urn for r in graph.resources if r.custom or r.remote}


def levels(graph: Graph) -> dict[str, int]:
    """Longest-path depth of each custom resource: what `pulumi up` can do side by side."""
    edges = direct_dependencies(graph)
    custom = engine_resources(graph)
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
    edges = direct_dependencies(graph)
    lines = ["flowchart LR"]
    children = defaultdict(list)
    nodes = engine_resources(graph)
    for r in sorted(graph.resources, key=lambda r: r.urn):  # URNs are unique: the same order every run
        if r.urn in nodes:
            children[r.parent].append(r)
    for parent, members in sorted(children.items(), key=lambda kv: (names.get(kv[0], ""), kv[0])):
        label = names.get(parent)
        if label:
            lines.append(f'  subgraph {ids[parent]}["{label}"]')
        lines += [f'    {ids[r.urn]}["{r.name}<br/><small>{short_type(r.type)}</small>"]' for r in members]
        if label:
            lines.append("  end")
    for urn in sorted(nodes):
        lines += [f"  {ids[d]} --> {ids[urn]}" for d in sorted(edges[urn]) if d in nodes]
    return "\n".join(lines) + "\n"


def short_type(type_: str) -> str:
    """A type token as people say it: aws:ec2/subnet:Subnet -> aws ec2.Subnet,
    kubernetes:helm.sh/v3:Release -> k8s helm.Release."""
    package, module, kind = (type_.split(":") + ["", ""])[:3]
    module = module.split("/")[0].split(".")[0]
    package = {"kubernetes": "k8s", "pulumi": "pulumi"}.get(package, package)
    return f"{package} {kind}" if module in ("index", "providers", "") else f"{package} {module}.{kind}"


def top_component(graph: Graph, r) -> str:
    """The program's component a resource belongs to (its ancestor right under the stack)."""
    by_urn = {x.urn: x for x in graph.resources}
    while r.parent in by_urn and not by_urn[r.parent].type.startswith("pulumi:pulumi:"):
        r = by_urn[r.parent]
    return r.name


def counts(graph: Graph) -> dict[str, int]:
    """What the program registers, and what `pulumi preview` counts on top: the stack itself and one
    default provider per package used without an explicit provider (the engine creates those, so
    mocks never see them). A remote component's own children (pulumi-eks' Cluster) are created by
    its provider at deploy time and are not in either number."""
    custom = sum(1 for r in graph.resources if r.custom)
    components = len(graph.resources) - custom
    default_providers = {
        r.type.split(":")[0]
        for r in graph.resources
        if (r.custom or r.remote) and not r.provider and not r.type.startswith("pulumi:")
    }
    return {
        "registered": len(graph.resources),
        "custom": custom,
        "components": components,
        "defaultProviders": len(default_providers),
        "preview": 1 + len(graph.resources) + len(default_providers),
    }


def reduced_edges(graph: Graph) -> dict[str, set[str]]:
    """Dependencies between drawn nodes without the ones another path already implies (a
    transitive reduction): the picture shows order, graph.json keeps every edge."""
    nodes = engine_resources(graph)
    direct = {
        u: {d for d in deps if d in nodes} for u, deps in direct_dependencies(graph).items() if u in nodes
    }
    reach: dict[str, set[str]] = {}

    def below(urn: str) -> set[str]:
        if urn not in reach:
            reach[urn] = set()
            for d in direct[urn]:
                reach[urn] |= {d} | below(d)
        return reach[urn]

    return {
        u: {d for d in deps if not any(d in below(o) for o in deps if o != d)} for u, deps in direct.items()
    }


PER_ROW = 6  # boxes per row: 1600 px / 6 leaves room for a 9 pt two-line label


def to_png(graph: Graph, path: pathlib.Path) -> None:
    """Waves top to bottom (a wave waits for the ones above it), arrows from a dependency to what
    needs it, each box named and typed and coloured by component; sized for a 1600 px wide screen."""
    depth = levels(graph)
    by_urn = {r.urn: r for r in graph.resources}
    waves = defaultdict(list)
    for urn in sorted(depth):
        waves[depth[urn]].append(urn)
    pos, row, wave_rows = {}, 0, []
    for d in sorted(waves):
        urns = sorted(waves[d], key=lambda u: (top_component(graph, by_urn[u]), by_urn[u].name, u))
        wave_rows.append((d, row))
        for i in range(0, len(urns), PER_ROW):
            chunk = urns[i : i + PER_ROW]
            for j, urn in enumerate(chunk):
                pos[urn] = (j - (len(chunk) - 1) / 2, -row)
            row += 1
        row += 0.35  # a gap between waves
    components = sorted({top_component(graph, by_urn[u]) for u in pos})
    palette = (
        plt.get_cmap("tab20").colors[1::2] + plt.get_cmap("Pastel2").colors
    )  # light: black text stays legible
    colour = {c: palette[i % len(palette)] for i, c in enumerate(components)}

    fig, ax = plt.subplots(figsize=(16, 1.5 + 0.95 * row), dpi=100)
    for urn, deps in sorted(reduced_edges(graph).items()):
        for d in sorted(deps):
            ax.annotate(
                "",
                xy=pos[urn],
                xytext=pos[d],
                zorder=1,
                arrowprops={
                    "arrowstyle": "-|>",
                    "color": "0.55",
                    "lw": 0.8,
                    "mutation_scale": 12,
                    "shrinkA": 17,
                    "shrinkB": 17,
                    "connectionstyle": "arc3,rad=0.08",
                },
            )
    for urn, (x, y) in sorted(pos.items()):
        r = by_urn[urn]
        ax.text(
            x,
            y,
            f"{r.name}\n{short_type(r.type)}",
            fontsize=9,
            ha="center",
            va="center",
            zorder=2,
            bbox={
                "boxstyle": "round,pad=0.35",
                "fc": colour[top_component(graph, r)],
                "ec": "0.3",
                "lw": 0.6,
            },
        )
    for d, y in wave_rows:
        ax.text(-PER_ROW / 2 - 0.05, -y, f"wave {d}", fontsize=9, ha="right", va="center", color="0.35")
    n = counts(graph)
    ax.set_title(
        f"{len(pos)} resources the engine creates, in {len(waves)} waves (top to bottom; an arrow "
        f"points from a dependency to what waits for it)\nThe program registers {n['registered']}: "
        f"{n['custom']} custom, {n['components']} components; `pulumi preview` also counts the stack and "
        f"{n['defaultProviders']} default providers: {n['preview']}",
        fontsize=11,
        loc="left",
    )
    ax.legend(
        handles=[plt.Rectangle((0, 0), 1, 1, fc=colour[c], ec="0.3") for c in components],
        labels=components,
        loc="upper center",
        bbox_to_anchor=(0.5, 1.0),
        ncol=min(len(components), 12),
        fontsize=9,
        frameon=False,
        title="component",
        title_fontsize=9,
    )
    ax.axis("off")
    ax.set_xlim(-PER_ROW / 2 - 0.9, PER_ROW / 2 - 0.3)
    ax.set_ylim(-row + 0.3, 1.2)
    fig.tight_layout()
    # No metadata: the same graph gives the same bytes.
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)


def write_plan(graph: Graph, out: pathlib.Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "graph.json").write_text(json.dumps(to_json(graph), indent=2, sort_keys=True, default=str) + "\n")
    (out / "graph.mmd").write_text(to_mermaid(graph))
    to_png(graph, out / "graph.png")
    values = out / "values"
    values.mkdir(exist_ok=True)
    for r in graph.of_type("kubernetes:helm.sh/v3:Release"):
        body = REDACTED if "values" in r.secret_inputs else integers(r.inputs.get("values", {}))
        header = (
            f"# {r.inputs.get('chart')} {r.inputs.get('version')} (release {r.inputs.get('name')}, "
            f"namespace {r.inputs.get('namespace')})\n"
        )
        (values / f"{r.name}.yaml").write_text(header + yaml.safe_dump(body, sort_keys=True))


def parse_overrides(strings: list[str], json_values: list[str]) -> dict:
    """--set values stay strings; --set-json values are parsed. A malformed item is a ValueError."""
    overrides = {}
    for item, as_json in [(i, False) for i in strings] + [(i, True) for i in json_values]:
        key, eq, value = item.partition("=")
        flag = "--set-json" if as_json else "--set"
        if not eq or not key:
            raise ValueError(f"{flag} {item!r}: expected KEY=VALUE")
        if as_json:
            try:
                overrides[key] = json.loads(value)
            except json.JSONDecodeError as e:
                raise ValueError(
                    f"{flag} {key}: {value!r} is not JSON ({e.msg}); quote it for the shell, "
                    f"e.g. --set-json '{key}=[\"198.51.100.7/32\"]'"
                ) from None
        else:
            overrides[key] = value
    return overrides


def _generated_as_marker(first, second, where: str):
    """`first` with every value that differs in `second` (a render of the same input) replaced by
    GENERATED: what a chart generates at random is all that changes between two renders."""
    if isinstance(first, dict) and isinstance(second, dict) and first.keys() == second.keys():
        return {k: _generated_as_marker(first[k], second[k], f"{where}.{k}") for k in first}
    if isinstance(first, list) and isinstance(second, list) and len(first) == len(second):
        return [
            _generated_as_marker(a, b, f"{where}[{i}]")
            for i, (a, b) in enumerate(zip(first, second, strict=True))
        ]
    if type(first) is type(second) and not isinstance(first, (dict, list)):
        return first if first == second else GENERATED
    raise chart_render.ChartRenderError(f"{where}: two renders of the same input differ in shape")


def stable_manifests(graph: Graph) -> dict[str, list[tuple[str, dict]]]:
    """(source, object) of every release, rendered twice so that what the charts generate at random
    (the LBC webhook certificate, slurm's keys if the chart made them) reads GENERATED: the same
    bytes on every run, and a plan diff shows only what the program changed."""
    first = chart_render.render_graph_release_sources(graph)
    second = chart_render.render_graph_release_sources(graph)
    return {
        release: [
            (source, _generated_as_marker(obj, again, f"{release}:{source}"))
            for (source, obj), (_, again) in zip(objects, second[release], strict=True)
        ]
        for release, objects in first.items()
    }


def write_manifests(graph: Graph, out: pathlib.Path, rendered: dict[str, list[tuple[str, dict]]]) -> None:
    """plan/manifests/<release>.yaml: every object a release installs, as `helm template` lists it
    (`rendered`: stable_manifests of the same graph)."""
    manifests = out / "manifests"
    manifests.mkdir(parents=True, exist_ok=True)
    for r in graph.of_type(chart_render.RELEASE_TYPE):
        request = chart_render.release_request(r)
        name = request["release_name"]
        header = (
            f"# {request['chart']} {request['version']} (release {name}, namespace {request['namespace']}), "
            f"rendered with the values in values/{r.name}.yaml\n"
        )
        if "values" in r.secret_inputs:
            body = f"# {REDACTED}: the values are secret\n"
        else:
            body = "".join(
                f"---\n# Source: {source}\n" + yaml.safe_dump(obj, sort_keys=True)
                for source, obj in rendered[name]
            )
        (manifests / f"{name}.yaml").write_text(header + body)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="plan", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--stack", default="dev")
    p.add_argument("--out", type=pathlib.Path, default=pathlib.Path("plan"))
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key with a string, as `pulumi config set` does",
    )
    p.add_argument(
        "--set-json",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="override a config key with a JSON list or object: --set-json 'sshAllowedCidrs=[\"198.51.100.7/32\"]'",
    )
    args = p.parse_args(argv)
    try:
        overrides = parse_overrides(args.set, args.set_json)
    except ValueError as e:
        print(f"plan: {e}", file=sys.stderr)
        return 2
    try:
        graph = run_program(args.stack, overrides)
    except Exception as error:  # noqa: BLE001 - the program's own error (e.g. invalid config) is the answer
        # A refused stack logs its warnings too (stack/config.py logs them before it refuses), as
        # `pulumi preview` shows them: the same run again, keeping what it logged.
        print(warnings_section(run_program(args.stack, overrides, expect_error=True)))
        print(error, file=sys.stderr)
        return 1
    try:  # rendered before anything is written: a failure leaves no half plan
        rendered = stable_manifests(graph)
    except (reference_data.ReferenceDataMissing, chart_render.ChartRenderError) as error:
        print(f"cannot render the manifests: {error}", file=sys.stderr)
        return 1
    print(warnings_section(graph))
    write_plan(graph, args.out)
    write_manifests(graph, args.out, rendered)
    n = counts(graph)
    print(
        f"{n['registered']} resources ({n['custom']} custom, {n['components']} components; `pulumi preview` "
        f"counts {n['preview']} with the stack and {n['defaultProviders']} default providers), "
        f"{len(graph.of_type('kubernetes:helm.sh/v3:Release'))} Helm releases -> "
        f"{args.out}/graph.json, graph.mmd, graph.png, values/, manifests/"
    )
    print(cost_line(graph))
    return 0


def warnings_section(graph: Graph) -> str:
    """Every warning the program logged, in the order it logged them, under one heading: what a
    reviewer of the plan must see before the resources (`pulumi preview` prints the same lines)."""
    if not graph.warnings:
        return "warnings the program logged: none"
    lines = [f"warnings the program logged ({len(graph.warnings)}):"]
    lines += [f"  - {w}" for w in graph.warnings]
    return "\n".join(lines)


def offline_prices(cost_output: dict) -> dict:
    """The costPerHour output as the plan shows it: a price the program took from the Price List
    was the offline account's answer (devkit/offline_account.py), and is labelled so."""

    def labelled(entry: dict) -> dict:
        if entry.get("priceSource") != cost.PRICE_LIST:
            return entry
        return {**entry, "priceSource": offline_account.PRICE_SOURCE}

    return {
        **cost_output,
        "gpuPools": [labelled(p) for p in cost_output["gpuPools"]],
        "core": labelled(cost_output["core"]),
    }


# What each label the plan shows means, printed beside the figures.
PRICE_SOURCE_NOTES = {
    offline_account.PRICE_SOURCE: offline_account.PRICE_SOURCE_NOTE,
    cost.TABLE: f"{cost.LIST_PRICE_SOURCE}, us-east-1's list prices, because the Price List could not answer",
}


def cost_line(graph: Graph) -> str:
    """The costPerHour output in one line, for the reviewer of a plan (graph.json has it whole),
    with where its prices came from."""
    out = offline_prices(graph.output("costPerHour"))
    unpriced = f"; no price for {', '.join(out['unpriced'])}" if out["unpriced"] else ""
    sources = sorted(
        {e["priceSource"] for e in [*out["gpuPools"], out["core"]] if e["pricePerNodeHour"] is not None}
    )
    said = "; ".join(f"{s}: {PRICE_SOURCE_NOTES[s]}" for s in sources) or "nowhere: no type has a price"
    return (
        f"nodes at on-demand list price: ${out['clusterAtMinNodes']:.2f}/h at minNodes, "
        f"${out['clusterAtMaxNodes']:.2f}/h at maxNodes (EC2 instances only{unpriced})\n"
        f"  prices from {said}"
    )


if __name__ == "__main__":
    sys.exit(main())
