"""NVIDIA's DCGM exporter's computed values (model/builders/dcgm_exporter.py). The chart rendered
with them is specified in tests/charts/test_dcgm_exporter.py."""

from model.builders import dcgm_exporter, metrics
from model.builders.node_repair import DCGM_HOST_ENGINE_PORT
from model.facts import versions
from model.facts.contract import GPU_LABELS, GPU_TOLERATION


def _values():
    return dcgm_exporter.release_values("DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization.\n")


def test_the_exporter_runs_the_pinned_image_on_the_gpu_nodes_through_their_taint():
    values = _values()
    repository, tag = versions.DCGM_EXPORTER_IMAGE
    assert values["image"] == {"repository": repository, "tag": tag}
    assert values["nodeSelector"] == GPU_LABELS and values["tolerations"] == [GPU_TOLERATION]


def test_the_exporter_exports_the_given_counter_list_from_where_its_arguments_read_it():
    values = _values()
    assert values["customMetrics"] == "DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization.\n"
    assert values["arguments"][:2] == ["-f", dcgm_exporter.COUNTERS_PATH]
    assert {
        "name": "exporter-metrics-volume",
        "mountPath": dcgm_exporter.COUNTERS_PATH,
        "subPath": "default-counters.csv",
    } in values["extraVolumeMounts"]


def test_the_exporter_reads_the_gpus_through_the_nodes_own_dcgm_host_engine():
    values = _values()
    assert values["arguments"][2:] == ["-r", f"$(NODE_IP):{DCGM_HOST_ENGINE_PORT}"]
    assert {"name": "NODE_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}} in values[
        "extraEnv"
    ]


def test_the_exporter_reads_the_slurm_job_mapping_directory_read_only():
    values = _values()
    (volume,) = [v for v in values["extraConfigMapVolumes"] if v["name"] == "slurm-job-mapping"]
    assert volume["hostPath"] == {"path": metrics.DCGM_JOB_MAPPING_DIR, "type": "DirectoryOrCreate"}
    assert {
        "name": "slurm-job-mapping",
        "mountPath": metrics.DCGM_JOB_MAPPING_DIR,
        "readOnly": True,
    } in values["extraVolumeMounts"]
    assert {"name": "DCGM_HPC_JOB_MAPPING_DIR", "value": metrics.DCGM_JOB_MAPPING_DIR} in values["extraEnv"]


def test_the_exporter_keeps_root_but_drops_every_capability_the_chart_adds():
    context = _values()["securityContext"]
    assert context["capabilities"] == {"drop": ["ALL"], "add": []}
    assert (context["privileged"], context["allowPrivilegeEscalation"]) == (False, False)
