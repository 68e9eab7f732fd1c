"""The same config yields identical resource inputs on every run (no perpetual diffs)."""

import json

from devkit.offline_run import run_program


def _snapshot(graph):
    return sorted(
        (r.type, r.name, json.dumps(r.inputs, sort_keys=True, default=str), sorted(r.dependencies))
        for r in graph.resources
    )


def test_two_runs_register_identical_inputs():
    assert _snapshot(run_program("dev")) == _snapshot(run_program("dev"))


def test_every_child_is_named_after_its_component(dev):
    components = {r.urn: r.name for r in dev.resources if not r.custom and not r.remote}
    for r in dev.resources:
        if r.parent in components:
            assert r.name.startswith(components[r.parent] + "-"), (r.name, components[r.parent])


def test_component_type_tokens_follow_the_guidelines(dev):
    tokens = {r.type for r in dev.resources if not r.custom and not r.remote}
    assert tokens and all(t.startswith("slinky-eks:") and t.count(":") == 2 for t in tokens)
