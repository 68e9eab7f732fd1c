"""Writes tests/data/dev-graph.json: the dev stack's resource URNs and inputs as the program
registers them. Generated once from the single-GPU-type program (before the `gpuPools` key) and
checked in, so tests/graph/scenarios/test_dev_graph_stable.py can prove the pools change replaced nothing.
And tests/data/dev-graph-local.json: the same stack with imageBuilder=local, the graph from before
the in-region build, which that builder keeps.

Regenerate only for a change that is meant to alter the dev stack's graph:
    .venv/bin/python -m tests.support.dev_graph_snapshot
"""

from __future__ import annotations

import json

from devkit.offline_run import Graph, run_program
from tests.support.paths import DATA

SNAPSHOT = DATA / "dev-graph.json"
LOCAL_SNAPSHOT = DATA / "dev-graph-local.json"
# The dev stack with the deployer's Docker building the image.
LOCAL = {"imageBuilder": "local"}


def snapshot(graph: Graph) -> dict[str, dict]:
    """URN -> inputs (JSON-normalised) of every registered resource."""
    return json.loads(json.dumps({r.urn: r.inputs for r in graph.resources}, sort_keys=True, default=str))


if __name__ == "__main__":
    for path, overrides in ((SNAPSHOT, None), (LOCAL_SNAPSHOT, LOCAL)):
        path.write_text(json.dumps(snapshot(run_program("dev", overrides)), indent=1, sort_keys=True) + "\n")
        print(f"wrote {path}")
