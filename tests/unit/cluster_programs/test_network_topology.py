"""The network-topology writer's pass (cluster_programs/network_topology.py): what it writes to
the Controller's topology.yaml and which nodes it annotates, and in what order."""

import json

import pytest
import yaml

from cluster_programs import network_topology as writer
from model.facts.instance_topology import NETWORK_NODE_LABELS

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
    """The two reads a pass makes and the PATCHes and creates it sends; `configmap_text` None
    for a ConfigMap that is not there."""

    def __init__(self, configmap_text: str | None, nodes: list[dict]):
        self.text, self.nodes, self.patches, self.creates = configmap_text, nodes, [], []

    def get(self, path: str) -> dict:
        assert path.startswith("/api/v1/nodes?"), path
        return {"items": self.nodes}

    def find(self, path: str) -> dict | None:
        return None if self.text is None else {"data": {"topology.yaml": self.text}}

    def patch(self, path: str, body: dict) -> dict:
        self.patches.append((path, body))
        return {}

    def create(self, path: str, body: dict) -> dict:
        self.creates.append((path, body))
        return body


CONFIG = {
    "placements": [TREE],
    "labelKeys": list(KEYS),
    "poolLabel": POOL_LABEL,
    "nodeSelector": "role=gpu",
    "namespace": "slurm",
    "configMap": "slurm-config-extra",
    "key": "topology.yaml",
    "release": "slurm",
}


def test_a_pass_writes_the_config_map_and_nothing_else_when_a_switch_is_new():
    api = FakeApi("", [node("n1", "train", "nn-a")])
    writer.run_once(api, CONFIG)
    ((path, body),) = api.patches
    assert path == "/api/v1/namespaces/slurm/configmaps/slurm-config-extra"
    assert '- switch: "nn-a"' in body["data"]["topology.yaml"]


def test_a_first_pass_before_the_release_creates_the_config_map_for_the_release_to_adopt():
    # No GPU node yet: the skeleton alone (the flat default and the tree's root), which slurmctld
    # accepts, in the ConfigMap the chart would create, with the ownership Helm adopts it by.
    api = FakeApi(None, [])
    writer.run_once(api, CONFIG)
    assert (api.patches, api.creates) == (
        [],
        [
            (
                "/api/v1/namespaces/slurm/configmaps",
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": "slurm-config-extra",
                        "namespace": "slurm",
                        "labels": {"app.kubernetes.io/managed-by": "Helm"},
                        "annotations": {
                            "meta.helm.sh/release-name": "slurm",
                            "meta.helm.sh/release-namespace": "slurm",
                        },
                    },
                    "data": {"topology.yaml": writer.render(writer.skeleton([TREE], []))},
                },
            )
        ],
    )


def test_a_pass_over_the_charts_config_map_patches_it_and_creates_nothing():
    api = FakeApi("", [])
    writer.run_once(api, CONFIG)
    assert (len(api.patches), api.creates) == (1, [])


def test_a_pass_over_a_current_file_only_annotates():
    text, _ = writer.plan([TREE], [node("n1", "train", "nn-a")], KEYS, POOL_LABEL, "")
    api = FakeApi(text, [node("n1", "train", "nn-a")])
    writer.run_once(api, CONFIG)
    assert api.patches == [
        ("/api/v1/nodes/n1", {"metadata": {"annotations": {writer.SPEC_ANNOTATION: "tree:nn-a"}}})
    ]


# The skeleton and the annotation, with the labels EKS sets (model/facts/instance_topology.py).

CB = "cr-0123456789abcdef0"


def eks(l1: str, l2: str, l3: str) -> dict[str, str]:
    return dict(zip(NETWORK_NODE_LABELS, (l1, l2, l3), strict=True))


UNDER_A = eks("nn-top", "nn-mid", "nn-a")
UNDER_B = eks("nn-top", "nn-mid", "nn-b")
BLOCK4 = {"pool": "burst", "kind": "block", "block": CB, "block_size": 4}


def path(labels):
    return writer.switch_path(labels, NETWORK_NODE_LABELS)


def test_a_nodes_switch_path_is_its_three_network_nodes_top_first():
    assert path(UNDER_A) == ("nn-top", "nn-mid", "nn-a")


def test_a_node_missing_a_layer_has_no_switch_path():
    partial = dict(UNDER_A)
    del partial["topology.k8s.aws/network-node-layer-2"]
    assert path(partial) is None


def test_flat_is_the_one_cluster_default():
    doc = writer.skeleton([TREE, FLAT, BLOCK4], [])
    assert [t["topology"] for t in doc if t["cluster_default"]] == ["flat"]
    assert doc[0] == {"topology": "flat", "cluster_default": True, "flat": True}


def test_the_tree_is_a_root_over_the_layers_with_the_leaves_named_by_no_node():
    doc = writer.skeleton([TREE], [path(UNDER_A), path(UNDER_B)])
    tree = next(t for t in doc if t["topology"] == "tree")
    assert tree["tree"]["switches"] == [
        {"switch": "network", "children": "nn-top"},
        {"switch": "nn-a"},
        {"switch": "nn-b"},
        {"switch": "nn-mid", "children": "nn-a,nn-b"},
        {"switch": "nn-top", "children": "nn-mid"},
    ]


def test_the_skeleton_names_no_node():
    assert "nodes" not in writer.render(writer.skeleton([TREE, BLOCK4], [path(UNDER_A)]))


def test_the_block_holds_the_capacity_block_sized_by_its_instance_count():
    block = next(t for t in writer.skeleton([BLOCK4], []) if t["topology"] == "block")
    assert block["block"] == {"block_sizes": [4], "blocks": [{"block": CB}]}


def test_a_stack_of_flat_pools_has_only_the_flat_topology():
    assert [t["topology"] for t in writer.skeleton([FLAT], [])] == ["flat"]


@pytest.mark.parametrize(
    ("place", "labels", "spec"),
    [
        (TREE, UNDER_A, "tree:nn-a"),
        (BLOCK4, UNDER_B, f"tree:nn-b,block:{CB}"),
        (FLAT, UNDER_A, ""),
        (TREE, {}, ""),
    ],
    ids=["tree-leaf", "block-and-leaf", "flat-none", "unlabelled-none"],
)
def test_a_nodes_spec_names_its_leaf_switch_and_its_block(place, labels, spec):
    assert writer.node_spec(place, labels, NETWORK_NODE_LABELS) == spec


def test_a_switch_once_written_stays_when_its_last_node_goes():
    first, _ = writer.plan(
        [TREE], [node("n1", "train", "nn-a"), node("n2", "train", "nn-b")], KEYS, POOL_LABEL, ""
    )
    text, _ = writer.plan([TREE], [node("n2", "train", "nn-b")], KEYS, POOL_LABEL, first)
    assert text == first


def test_the_tree_the_file_holds_is_read_back_with_its_edges():
    text = writer.render(writer.skeleton([TREE], [("nn-top", "nn-mid", "nn-a")]))
    assert writer.known_tree(text) == {
        "network": {"nn-top"},
        "nn-top": {"nn-mid"},
        "nn-mid": {"nn-a"},
        "nn-a": set(),
    }


def test_a_configuration_that_is_not_json_is_one_line_and_exit_2(capsys):
    assert writer.main(["--config", "{not json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("network_topology: ") and err.count("\n") == 1


def test_a_single_pass_exits_0_once_written_and_1_when_the_api_refuses(monkeypatch, capsys):
    # The init container's `--once`: the pod waits (the kubelet retries it) until a pass succeeds.
    from cluster_programs import incluster

    class Refusing(FakeApi):
        def find(self, path: str) -> dict | None:
            raise incluster.ApiError(f"GET {path}: HTTP 403 forbidden")

    config = json.dumps(CONFIG)
    monkeypatch.setattr(writer, "writer_api", lambda env: FakeApi(None, []))
    assert writer.main(["--config", config, "--once"]) == 0
    monkeypatch.setattr(writer, "writer_api", lambda env: Refusing(None, []))
    assert writer.main(["--config", config, "--once"]) == 1
    assert capsys.readouterr().err.startswith("network_topology: GET ")
