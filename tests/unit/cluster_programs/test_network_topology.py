"""The network-topology writer's pass (cluster_programs/network_topology.py): what it writes to
the Controller's topology.yaml and which nodes it annotates, and in what order."""

import yaml

from cluster_programs import network_topology as writer

KEYS = ("l1", "l2", "l3")
POOL_LABEL = "slinky-eks/gpu-pool"
TREE = {"pool": "train", "kind": "tree", "block": "", "block_size": 0}
FLAT = {"pool": "infer", "kind": "flat", "block": "", "block_size": 0}
BLOCK = {"pool": "burst", "kind": "block", "block": "cr-0123456789abcdef0", "block_size": 2}


def node(name: str, pool: str, leaf: str | None, spec: str = "") -> dict:
    labels = {POOL_LABEL: pool}
    if leaf:
        labels.update({"l1": "nn-top", "l2": "nn-mid", "l3": leaf})
    annotations = {writer.SPEC_ANNOTATION: spec} if spec else {}
    return {"metadata": {"name": name, "labels": labels, "annotations": annotations}}


def test_a_new_switch_reaches_the_file_before_any_node_names_it():
    text, annotations = writer.plan([TREE], [node("n1", "train", "nn-a")], KEYS, POOL_LABEL, "")
    assert '- switch: "nn-a"' in text
    assert annotations == {}


def test_a_node_whose_switch_the_file_holds_is_annotated_with_it():
    first, _ = writer.plan([TREE], [node("n1", "train", "nn-a")], KEYS, POOL_LABEL, "")
    text, annotations = writer.plan([TREE], [node("n1", "train", "nn-a")], KEYS, POOL_LABEL, first)
    assert text == first
    assert annotations == {"n1": "tree:nn-a"}


def test_a_node_already_annotated_is_left_alone():
    first, _ = writer.plan([TREE], [node("n1", "train", "nn-a")], KEYS, POOL_LABEL, "")
    _, annotations = writer.plan([TREE], [node("n1", "train", "nn-a", "tree:nn-a")], KEYS, POOL_LABEL, first)
    assert annotations == {}


def test_a_flat_pools_node_is_neither_in_the_tree_nor_annotated():
    nodes = [node("n1", "infer", "nn-x")]
    text, annotations = writer.plan([TREE, FLAT], nodes, KEYS, POOL_LABEL, "")
    assert "nn-x" not in text
    again, annotations = writer.plan([TREE, FLAT], nodes, KEYS, POOL_LABEL, text)
    assert annotations == {}


def test_a_block_pools_node_without_labels_gets_its_block_at_once():
    _, annotations = writer.plan([BLOCK], [node("n1", "burst", None)], KEYS, POOL_LABEL, "")
    assert annotations == {"n1": "block:cr-0123456789abcdef0"}


def test_with_one_pool_a_node_without_the_pool_label_is_that_pools():
    bare = {"metadata": {"name": "n1", "labels": dict(zip(KEYS, ("nn-top", "nn-mid", "nn-a"), strict=True))}}
    first, _ = writer.plan([TREE], [bare], KEYS, POOL_LABEL, "")
    _, annotations = writer.plan([TREE], [bare], KEYS, POOL_LABEL, first)
    assert annotations == {"n1": "tree:nn-a"}


def test_the_rendered_file_is_the_skeleton_as_yaml():
    doc = writer.skeleton([TREE, BLOCK], [("nn-top", "nn-mid", "nn-a")])
    assert yaml.safe_load(writer.render(doc)) == doc


def test_the_switches_the_file_holds_are_read_back():
    text = writer.render(writer.skeleton([TREE], [("nn-top", "nn-mid", "nn-a")]))
    assert writer.known_switches(text) == {"network", "nn-top", "nn-mid", "nn-a"}


class FakeApi:
    """The two GETs a pass makes and the PATCHes it sends."""

    def __init__(self, configmap_text: str, nodes: list[dict]):
        self.text, self.nodes, self.patches = configmap_text, nodes, []

    def get(self, path: str) -> dict:
        if path.startswith("/api/v1/nodes?"):
            return {"items": self.nodes}
        return {"data": {"topology.yaml": self.text}}

    def patch(self, path: str, body: dict) -> dict:
        self.patches.append((path, body))
        return {}


CONFIG = {
    "placements": [TREE],
    "labelKeys": list(KEYS),
    "poolLabel": POOL_LABEL,
    "nodeSelector": "role=gpu",
    "namespace": "slurm",
    "configMap": "slurm-config-extra",
    "key": "topology.yaml",
}


def test_a_pass_writes_the_config_map_and_nothing_else_when_a_switch_is_new():
    api = FakeApi("", [node("n1", "train", "nn-a")])
    writer.run_once(api, CONFIG)
    ((path, body),) = api.patches
    assert path == "/api/v1/namespaces/slurm/configmaps/slurm-config-extra"
    assert '- switch: "nn-a"' in body["data"]["topology.yaml"]


def test_a_pass_over_a_current_file_only_annotates():
    text, _ = writer.plan([TREE], [node("n1", "train", "nn-a")], KEYS, POOL_LABEL, "")
    api = FakeApi(text, [node("n1", "train", "nn-a")])
    writer.run_once(api, CONFIG)
    assert api.patches == [
        ("/api/v1/nodes/n1", {"metadata": {"annotations": {writer.SPEC_ANNOTATION: "tree:nn-a"}}})
    ]
