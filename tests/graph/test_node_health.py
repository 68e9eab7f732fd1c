"""The node health check in the program's graph: one ConfigMap with the shipped program and each
pool's expectations from the catalog, each NodeSet mounting the program and its own pool's file at
HEALTH_DIR, and the slurm.conf lines that make slurmd run it (model/builders/node_health.py)."""

import pathlib

import pytest

from cluster_programs import node_health as program
from components.slurm_cluster import health_program
from components.slurm_readiness import nodeset_template
from devkit.offline_run import run_program
from model.builders import node_health
from model.facts import catalog
from model.facts.contract import HEALTH_CONFIGMAP, HEALTH_DIR, SHARED_MOUNT
from tests.support.slinky_conf import SLURMD_SPOOL, Release

TWO_POOLS = [
    {"name": "infer", "instanceType": "g6e.12xlarge", "nodeCount": 1},
    {"name": "train", "instanceType": "p5.48xlarge", "nodeCount": 2},
]


@pytest.fixture(scope="module")
def two():
    return run_program("dev", {"gpuPools": TWO_POOLS})


def _configmap(graph):
    return graph.named("slurm-node-health")


def test_the_configmap_ships_the_program_byte_for_byte(dev):
    cm = _configmap(dev)
    assert cm.inputs["metadata"]["name"] == HEALTH_CONFIGMAP
    assert cm.inputs["data"][node_health.PROGRAM] == health_program()
    assert health_program() == pathlib.Path(program.__file__).read_text()


def test_each_pools_expectations_are_its_catalog_types(two):
    data = _configmap(two).inputs["data"]
    for spec in TWO_POOLS:
        gpu = catalog.CATALOG[spec["instanceType"]]
        expected = program.Expected.from_json(data[f"{spec['name']}.json"])
        assert expected == program.Expected(
            spec["name"], gpu.gpus, gpu.gpu_model, gpu.efa_interfaces, SHARED_MOUNT
        )


def test_each_nodeset_mounts_the_program_and_its_own_pools_expectations(two):
    values = two.named("slurm-release").inputs["values"]
    for spec in TWO_POOLS:
        template = nodeset_template(values, spec["name"])
        (volume,) = [v for v in template["podSpec"]["volumes"] if v["name"] == node_health.VOLUME]
        items = {i["key"]: i for i in volume["configMap"]["items"]}
        assert volume["configMap"]["name"] == HEALTH_CONFIGMAP
        assert items[node_health.PROGRAM] == {"key": "node-health", "path": "node-health", "mode": 0o555}
        assert items[f"{spec['name']}.json"]["path"] == node_health.EXPECTED
        assert len(items) == 2, "a pool mounts no other pool's expectations"
        assert {"name": node_health.VOLUME, "mountPath": HEALTH_DIR, "readOnly": True} in template["slurmd"][
            "volumeMounts"
        ]


def test_the_release_waits_for_the_configmap(dev):
    assert dev.depends_on(dev.named("slurm-release"), _configmap(dev))


def test_slurm_conf_runs_the_check_on_every_node_state(rendered):
    conf = Release.from_documents(rendered["slurm"]).slurm_conf().splitlines()
    assert f"HealthCheckProgram={node_health.PROGRAM_PATH}" in conf
    assert f"HealthCheckInterval={node_health.INTERVAL_SECONDS}" in conf
    assert "HealthCheckNodeState=ANY" in conf


def test_every_nodeset_mounts_the_nodes_directory_for_the_xid_cursor_read_write(two):
    """The check's Xid cursor (cluster_programs/node_health.py STATE_FILE) must outlast the pod: a
    hostPath directory of the node, DirectoryOrCreate, mounted read-write into slurmd beside the
    health ConfigMap; not slurmd's spool (the container's writable layer, gone with the pod)."""
    assert pathlib.PurePosixPath(program.STATE_FILE).parent == pathlib.PurePosixPath(node_health.STATE_DIR)
    assert not program.STATE_FILE.startswith(SLURMD_SPOOL + "/")
    values = two.named("slurm-release").inputs["values"]
    for spec in TWO_POOLS:
        template = nodeset_template(values, spec["name"])
        (volume,) = [v for v in template["podSpec"]["volumes"] if v["name"] == node_health.STATE_VOLUME]
        assert volume == {
            "name": node_health.STATE_VOLUME,
            "hostPath": {"path": node_health.STATE_DIR, "type": "DirectoryOrCreate"},
        }
        mounts = template["slurmd"]["volumeMounts"]
        (mount,) = [m for m in mounts if m["name"] == node_health.STATE_VOLUME]
        assert mount == {"name": node_health.STATE_VOLUME, "mountPath": node_health.STATE_DIR}
        assert not mount.get("readOnly")
        covering = [
            m["name"]
            for m in mounts
            if (program.STATE_FILE + "/").startswith(m["mountPath"].rstrip("/") + "/")
        ]
        assert covering == [node_health.STATE_VOLUME], covering


def test_the_rendered_nodeset_carries_the_nodes_directory(rendered):
    """The chart passes the volume and mount through to the NodeSet the operator reads."""
    (nodeset, *_) = [o for o in rendered["slurm"] if o and o["kind"] == "NodeSet"]
    spec = nodeset["spec"]["template"]["spec"]
    assert {
        "name": node_health.STATE_VOLUME,
        "hostPath": {"path": node_health.STATE_DIR, "type": "DirectoryOrCreate"},
    } in spec["volumes"]
    assert {"name": node_health.STATE_VOLUME, "mountPath": node_health.STATE_DIR} in nodeset["spec"][
        "slurmd"
    ]["volumeMounts"]
