"""In a cluster the stack shares (existingClusterName), every pod it declares or its charts render
runs on its own nodes only, and its core nodes take only its pods: the transformation of
components/_parts/stack_placement.py over the whole layer. The stack's own cluster is unchanged."""

import pytest

from devkit.chart_render import render_graph_releases
from devkit.offline_account import (
    EXISTING_CLUSTER,
    EXISTING_CLUSTER_NAME,
    LANDING_ZONE_PRIVATE,
    LANDING_ZONE_PUBLIC,
    LANDING_ZONE_VPC,
)
from devkit.offline_run import run_program
from model.facts import shared_addons
from model.facts.contract import CORE_LABELS, STACK_LABEL
from tests.support.rendered_checks import pod_specs

# The dev stack's clusterName (unset: slinky-eks-<stack>).
CLUSTER_NAME = "slinky-eks-dev"
TAINT = {"key": STACK_LABEL, "value": CLUSTER_NAME, "effect": "NO_SCHEDULE"}
TOLERATION = {"key": STACK_LABEL, "operator": "Exists", "effect": "NoSchedule"}


@pytest.fixture(scope="module")
def shared():
    # Every shared add-on listed and a pool that autoscales: every chart the stack can install.
    return run_program(
        "dev",
        {
            "existingClusterName": EXISTING_CLUSTER_NAME,
            "vpcId": LANDING_ZONE_VPC,
            "privateSubnetIds": list(LANDING_ZONE_PRIVATE.values()),
            "publicSubnetIds": list(LANDING_ZONE_PUBLIC.values()),
            "installSharedAddons": list(shared_addons.KEYS),
            "gpuMinNodes": 0,
            "gpuMaxNodes": 2,
        },
        account=EXISTING_CLUSTER,
    )


def pods(graph) -> dict[str, dict]:
    """Every pod spec of the graph's Kubernetes objects and of its releases as their charts render."""
    declared = [
        {"kind": r.type.rsplit(":", 1)[-1], **r.inputs}
        for r in graph.resources
        if r.type.startswith("kubernetes:") and not r.type.startswith("kubernetes:helm.sh")
    ]
    out = dict(pod_specs(declared))
    for release, objects in render_graph_releases(graph).items():
        out.update({f"{release}:{where}": spec for where, spec in pod_specs(objects)})
    return out


def test_every_pod_of_the_stack_selects_its_own_nodes(shared):
    found = pods(shared)
    assert len(found) > 20
    assert {
        w for w, spec in found.items() if (spec.get("nodeSelector") or {}).get(STACK_LABEL) != CLUSTER_NAME
    } == set()


def test_every_pod_on_the_core_nodes_tolerates_their_taint(shared):
    core = {
        w: spec
        for w, spec in pods(shared).items()
        if all((spec.get("nodeSelector") or {}).get(k) == v for k, v in CORE_LABELS.items())
    }
    assert {"slurm:Controller/slurm", "slurm-operator:Deployment/slurm-operator"} <= set(core)
    assert {w for w, spec in core.items() if TOLERATION not in (spec.get("tolerations") or [])} == set()


def test_the_core_nodes_carry_the_stacks_label_and_taint(shared):
    core = shared.named("nodes-core").inputs
    assert core["labels"][STACK_LABEL] == CLUSTER_NAME and core["taints"] == [TAINT]


def test_the_gpu_nodes_carry_the_stacks_label(shared):
    gpu = shared.named("nodes-gpu").inputs
    assert gpu["labels"][STACK_LABEL] == CLUSTER_NAME and TAINT not in gpu["taints"]


def test_the_stacks_own_cluster_places_nothing_of_it(dev):
    assert STACK_LABEL not in dev.named("nodes-core").inputs["labels"]
    assert "taints" not in dev.named("nodes-core").inputs
