"""The GPU node health check's files, volumes and slurm.conf lines (model/builders/node_health.py).
The check itself is specified in tests/unit/cluster_programs/test_node_health.py, the NodeSets that
mount it in tests/graph/test_node_health.py."""

import json

from model.builders import node_health
from model.checks.gpu_pools import GpuPool
from model.facts import catalog
from model.facts.contract import HEALTH_DIR, SHARED_MOUNT

TRAIN = GpuPool("train", catalog.lookup("p5.48xlarge"), 2, "us-west-2a", 400, 0)
INFER = GpuPool("infer", catalog.lookup("g6.12xlarge"), 1, "us-west-2a", 400, 1)


def test_a_pools_expectations_are_its_instance_types_gpus_efa_and_the_shared_mount():
    gpu = TRAIN.gpu
    assert node_health.expectations(TRAIN) == {
        "pool": "train",
        "gpus": gpu.gpus,
        "gpu_model": gpu.gpu_model,
        "efa_interfaces": gpu.efa_interfaces,
        "shared": SHARED_MOUNT,
    }


def test_the_configmap_holds_the_program_and_each_pools_expectations_as_stable_json():
    data = node_health.configmap_data("#!/usr/bin/env python3\n", [TRAIN, INFER])
    assert set(data) == {"node-health", "train.json", "infer.json"}
    assert json.loads(data["infer.json"]) == node_health.expectations(INFER)
    assert data["train.json"] == json.dumps(node_health.expectations(TRAIN), sort_keys=True, indent=2) + "\n"


def test_a_pool_sees_the_program_executable_and_only_its_own_expectations_as_expected_json():
    items = node_health.volume(INFER)["configMap"]["items"]
    assert items == [
        {"key": "node-health", "path": "node-health", "mode": 0o555},
        {"key": "infer.json", "path": "expected.json"},
    ]


def test_the_files_are_mounted_as_a_directory_read_only_so_the_kubelet_keeps_them_current():
    assert node_health.mount() == {"name": node_health.VOLUME, "mountPath": HEALTH_DIR, "readOnly": True}


def test_the_xid_cursor_lives_on_the_node_read_write_so_it_outlasts_the_pod():
    assert node_health.state_volume()["hostPath"] == {
        "path": node_health.STATE_DIR,
        "type": "DirectoryOrCreate",
    }
    assert node_health.state_mount() == {"name": node_health.STATE_VOLUME, "mountPath": node_health.STATE_DIR}


def test_slurmctld_runs_the_check_every_five_minutes_on_nodes_in_any_state():
    assert node_health.slurm_conf() == {
        "HealthCheckProgram": [f"{HEALTH_DIR}/node-health"],
        "HealthCheckInterval": ["300"],
        "HealthCheckNodeState": ["ANY"],
    }
