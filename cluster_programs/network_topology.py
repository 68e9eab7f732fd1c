"""The network-topology writer: keeps the Controller's topology.yaml and each GPU node's
`topology.slinky.slurm.net/spec` annotation current as nodes come and go. Standard library only
(it runs on the plain Python image, beside incluster.py); model/builders/topology.py calls the
same pure functions at deploy time, and docs/decisions/network-topology-writer.md says why it is
ours and not NVIDIA Topograph.

How Slinky carries it (SlinkyProject/slurm-operator v1.2.1 docs/usage/topology.md): the Controller
mounts topology.yaml; the operator copies a node's annotation, `<topology>:<unit>` pairs joined by
commas (e.g. `topo-switch:s1,topo-block:b1`), onto the Slurm node running on it
(internal/controller/nodeset/nodeset_sync.go syncSlurmTopology -> UpdateNodeTopology).

topology.yaml (https://slurm.schedmd.com/topology.yaml.html, Slurm 25.05 and later): a list of
topologies, each `topology: <name>` first, `cluster_default`, and one of `tree` (switches with
`children`), `block` (`block_sizes`, `blocks`) or `flat: true`. What the skeleton holds, and why:
- no `nodes:`: the Slurm nodes are dynamic, and a file naming a node before it registers is
  refused; each node gets its place from its annotation instead.
- `flat`, the one cluster default: the partitions of pools EC2 gives no place and the `all`
  partition keep running multi-node jobs as today (a tree or block partition refuses a multi-node
  job on nodes without a place).
- `tree`: a root switch over every layer-1 network node, each network node over those below it,
  the bottom-layer nodes the leaves annotations name; every leaf at one depth, so a node's switch
  path always matches the skeleton's. Without the root Slurm would not span a job across two
  top-layer nodes ("Jobs can only span nodes connected by the same switch fabric": topology.conf(5)).
- `block`: one block per Capacity Block pool, named after its reservation, the base block size its
  instance count.

The order that keeps a node valid: a switch reaches the ConfigMap one pass before any node is
annotated with it (a node naming a switch the Controller does not know registers INVAL).
The order that lets the Controller start: on a first install the program's first pass (its
pod's init container, `--once`) runs before the Slurm release and creates the chart's ConfigMap
with topology.yaml in it, for the release to adopt; slurmctld refuses to start while a partition
names a topology the file does not hold ("Requested topology configuration is not available").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.parse
from typing import Iterable, Mapping, Sequence

TREE = "tree"
BLOCK = "block"
FLAT = "flat"
KINDS = (TREE, BLOCK, FLAT)
SPEC_ANNOTATION = "topology.slinky.slurm.net/spec"
# The switch above every top-layer network node. Network node ids are `nn-` and hex digits (EC2
# API Reference, InstanceTopology.NetworkNodes), so this name cannot collide with one.
ROOT_SWITCH = "network"


def switch_path(labels: Mapping[str, str], label_keys: Sequence[str]) -> tuple[str, ...] | None:
    """A node's network nodes, top layer first, read from `label_keys`; None unless all are set."""
    path = tuple(labels.get(key, "") for key in label_keys)
    return path if path and all(path) else None


def _tree(paths: Iterable[tuple[str, ...]], known: Mapping[str, set[str]]) -> dict:
    children: dict[str, set[str]] = {ROOT_SWITCH: set()}
    for name, below in known.items():
        children.setdefault(name, set()).update(below)
        for child in below:
            children.setdefault(child, set())
    for path in paths:
        parent = ROOT_SWITCH
        for switch in path:
            children.setdefault(parent, set()).add(switch)
            children.setdefault(switch, set())
            parent = switch
    switches = []
    for name in [ROOT_SWITCH, *sorted(set(children) - {ROOT_SWITCH})]:
        entry: dict = {"switch": name}
        if children[name]:
            entry["children"] = ",".join(sorted(children[name]))
        switches.append(entry)
    return {"switches": switches}


def skeleton(
    placements: Sequence[Mapping],
    paths: Iterable[tuple[str, ...]],
    known: Mapping[str, set[str]] | None = None,
) -> list[dict]:
    """topology.yaml as data. `placements`: one {"pool", "kind", "block", "block_size"} per pool.
    flat (the cluster default) always; tree when a pool is on it or on a Capacity Block (whose
    nodes are on the tree too), with every switch path in `paths` and every switch already in
    `known` (switch -> the switches below it: known_tree of the file as it is); block when a pool
    is on a Capacity Block, the base size the smallest block's instance count. No node is named."""
    out: list[dict] = [{"topology": FLAT, "cluster_default": True, "flat": True}]
    if any(p["kind"] in (TREE, BLOCK) for p in placements):
        out.append({"topology": TREE, "cluster_default": False, "tree": _tree(paths, known or {})})
    blocks = sorted({(p["block"], p["block_size"]) for p in placements if p["kind"] == BLOCK})
    if blocks:
        out.append(
            {
                "topology": BLOCK,
                "cluster_default": False,
                "block": {
                    "block_sizes": [min(size for _, size in blocks)],
                    "blocks": [{"block": name} for name, _ in blocks],
                },
            }
        )
    return out


def _scalar(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    # Quoted as JSON: a JSON string is a YAML double-quoted scalar (YAML 1.2, section 1.3).
    return json.dumps(value)


def render(doc: list[dict]) -> str:
    """The skeleton as topology.yaml's text: block-style YAML of the few shapes it holds (maps of
    scalars, lists of maps, lists of scalars), every string quoted."""
    lines = ["---"]

    def mapping(m: Mapping, indent: int, first_prefix: str) -> None:
        pad = " " * indent
        for i, (key, value) in enumerate(m.items()):
            lead = first_prefix if i == 0 else pad
            if isinstance(value, dict):
                lines.append(f"{lead}{key}:")
                mapping(value, indent + 2, " " * (indent + 2))
            elif isinstance(value, list):
                lines.append(f"{lead}{key}:")
                for item in value:
                    if isinstance(item, dict):
                        mapping(item, indent + 4, " " * (indent + 2) + "- ")
                    else:
                        lines.append(f"{' ' * (indent + 2)}- {_scalar(item)}")
            else:
                lines.append(f"{lead}{key}: {_scalar(value)}")

    for topology in doc:
        mapping(topology, 2, "- ")
    return "\n".join(lines) + "\n"


def node_spec(placement: Mapping, labels: Mapping[str, str], label_keys: Sequence[str]) -> str:
    """The annotation value for a node of the pool: `tree:<bottom-layer node>` where its labels give
    a whole switch path (a tree or block pool's node), `block:<reservation>` on a Capacity Block
    pool, joined by a comma; "" for a node with no place (no annotation is written)."""
    parts = []
    path = switch_path(labels, label_keys)
    if placement["kind"] in (TREE, BLOCK) and path is not None:
        parts.append(f"{TREE}:{path[-1]}")
    if placement["kind"] == BLOCK:
        parts.append(f"{BLOCK}:{placement['block']}")
    return ",".join(parts)


def known_tree(text: str) -> dict[str, set[str]]:
    """The switches a topology.yaml this program rendered holds, each with the switches below it.
    A switch once written stays: network node ids are stable, and a file that shrank with every
    scale-in would restart slurmctld each time and could drop a switch a Slurm node still names."""
    tree: dict[str, set[str]] = {}
    current = None
    for line in text.splitlines():
        item = line.strip()
        if item.startswith("- switch: "):
            current = json.loads(item[len("- switch: ") :])
            tree[current] = set()
        elif item.startswith("children: ") and current is not None:
            tree[current] = set(json.loads(item[len("children: ") :]).split(","))
        elif not item.startswith("children: "):
            current = None
    return tree


def known_switches(text: str) -> set[str]:
    """The switch names a topology.yaml this program rendered already holds."""
    tree = known_tree(text)
    return set(tree) | {child for below in tree.values() for child in below}


def plan(
    placements: Sequence[Mapping],
    nodes: Sequence[Mapping],
    label_keys: Sequence[str],
    pool_label: str,
    current_text: str,
) -> tuple[str, dict[str, str]]:
    """One pass: the topology.yaml text to hold, and the annotations to set now by node name.
    `nodes` are Kubernetes Node objects; a node's pool is its `pool_label` label (the only pool
    when there is one). A node is annotated only once its leaf switch is already in
    `current_text` (the ConfigMap as read at the start of the pass)."""
    by_pool = {p["pool"]: p for p in placements}
    only = placements[0] if len(placements) == 1 else None
    paths, annotations = [], {}
    known = known_switches(current_text)
    for node in nodes:
        meta = node.get("metadata", {})
        labels = meta.get("labels", {}) or {}
        place = by_pool.get(labels.get(pool_label, ""), only)
        if place is None or place["kind"] == FLAT:
            continue
        path = switch_path(labels, label_keys)
        if path is not None:
            paths.append(path)
        spec = node_spec(place, labels, label_keys)
        if path is not None and path[-1] not in known:
            continue  # its switch reaches the Controller first, the annotation next pass
        current = (meta.get("annotations") or {}).get(SPEC_ANNOTATION, "")
        if spec and spec != current:
            annotations[meta["name"]] = spec
    return render(skeleton(placements, paths, known_tree(current_text))), annotations


def writer_api(env: Mapping[str, str]):
    """incluster.Api with a JSON merge patch (RFC 7386; Kubernetes "Update API Objects in Place
    Using kubectl patch": application/merge-patch+json): only the keys given change; a create; and
    a read that tells a missing object from an error. Kept here, not in incluster.py, which every
    other program ships too."""
    from cluster_programs import incluster

    class WriterApi(incluster.Api):
        def _send(self, method: str, path: str, body: Mapping | None, content_type: str) -> tuple[int, bytes]:
            conn = self._connect()
            headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
            if body is not None:
                headers["Content-Type"] = content_type
            try:
                conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
                resp = conn.getresponse()
                return resp.status, resp.read()
            except OSError as e:
                raise incluster.ApiError(f"{method} {path}: {e}") from None
            finally:
                conn.close()

        def _answer(self, method: str, path: str, status: int, answer: bytes, ok: tuple[int, ...]) -> dict:
            if status not in ok:
                raise incluster.ApiError(
                    f"{method} {path}: HTTP {status} {answer[:300].decode(errors='replace')}"
                )
            return json.loads(answer)

        def find(self, path: str) -> dict | None:
            """The object at `path`, None where there is none (HTTP 404)."""
            status, answer = self._send("GET", path, None, "")
            return None if status == 404 else self._answer("GET", path, status, answer, (200,))

        def create(self, path: str, body: Mapping) -> dict:
            status, answer = self._send("POST", path, body, "application/json")
            return self._answer("POST", path, status, answer, (201,))

        def patch(self, path: str, body: Mapping) -> dict:
            status, answer = self._send("PATCH", path, body, "application/merge-patch+json")
            return self._answer("PATCH", path, status, answer, (200,))

    return WriterApi.from_service_account(env)


def release_owned(name: str, namespace: str, release: str, data: Mapping[str, str]) -> dict:
    """A ConfigMap the Helm release `release` in `namespace` adopts as its own at install: Helm
    (3.2 and later) takes over an object that already exists only when it carries the release's
    ownership label and annotations (helm/helm v3 pkg/action/validate.go checkOwnership), and then
    patches it three-way with the chart's own object as the original (pkg/action/install.go,
    pkg/kube/client.go createPatch), which keeps every key the chart does not render."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "Helm"},
            "annotations": {
                "meta.helm.sh/release-name": release,
                "meta.helm.sh/release-namespace": namespace,
            },
        },
        "data": dict(data),
    }


def run_once(api, config: Mapping) -> None:
    """One pass. Where the chart's ConfigMap is not there yet (a first install: the Slurm release
    waits for this program's first pass), the pass creates it holding topology.yaml, owned by the
    release, so the Controller starts with the file its partitions name."""
    namespace, configmap, key = config["namespace"], config["configMap"], config["key"]
    cm_path = f"/api/v1/namespaces/{namespace}/configmaps/{configmap}"
    found = api.find(cm_path)
    current = ((found or {}).get("data") or {}).get(key, "")
    selector = urllib.parse.urlencode({"labelSelector": config["nodeSelector"]})
    nodes = api.get(f"/api/v1/nodes?{selector}").get("items", [])
    text, annotations = plan(config["placements"], nodes, config["labelKeys"], config["poolLabel"], current)
    if found is None:
        api.create(
            f"/api/v1/namespaces/{namespace}/configmaps",
            release_owned(configmap, namespace, config["release"], {key: text}),
        )
        print(
            f"topology.yaml written in {namespace}/{configmap}, created for release {config['release']}",
            flush=True,
        )
    elif text != current:
        api.patch(cm_path, {"data": {key: text}})
        print(f"topology.yaml updated in {namespace}/{configmap}", flush=True)
    for name, spec in sorted(annotations.items()):
        api.patch(f"/api/v1/nodes/{name}", {"metadata": {"annotations": {SPEC_ANNOTATION: spec}}})
        print(f"node {name}: {SPEC_ANNOTATION}={spec}", flush=True)


def main(argv: list[str] | None = None) -> int:
    from cluster_programs import incluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--config",
        required=True,
        help="JSON: placements, labelKeys, poolLabel, nodeSelector, namespace, configMap, key, release",
    )
    parser.add_argument("--interval", type=int, default=30, help="seconds between passes")
    parser.add_argument("--once", action="store_true", help="one pass, exit 1 if it fails")
    args = parser.parse_args(argv)
    try:
        config = json.loads(args.config)
        api = writer_api(os.environ)
    except (ValueError, incluster.ApiError) as e:
        print(f"network_topology: {e}", file=sys.stderr)
        return 2
    if args.once:
        try:
            run_once(api, config)
        except incluster.ApiError as e:
            print(f"network_topology: {e}", file=sys.stderr, flush=True)
            return 1
        return 0
    while True:
        try:
            run_once(api, config)
        except incluster.ApiError as e:
            print(f"network_topology: {e}", file=sys.stderr, flush=True)
        time.sleep(args.interval)


if __name__ == "__main__":
    sys.exit(main())
