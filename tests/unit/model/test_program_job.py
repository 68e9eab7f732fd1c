"""The pods that run the in-cluster programs (model/builders/program_job.py): the package mounted
under its own name, run as `python3 -m`, as nobody on the core nodes, hardened."""

from model.builders.pod_security import NOBODY, container_security
from model.builders.program_job import PACKAGE, WORKING_DIR, code_volume, program_container, program_pod
from model.facts import versions
from model.facts.contract import CORE_LABELS


def test_a_program_runs_as_a_module_of_its_own_package_name():
    container = program_container("wait", "rollout", ["--once"])
    assert container["command"] == ["python3", "-m", "cluster_programs.rollout", "--once"]
    assert container["workingDir"] == WORKING_DIR


def test_the_code_is_mounted_read_only_as_the_package_under_the_working_directory():
    (mount,) = program_container("wait", "rollout", [])["volumeMounts"]
    assert mount == {"name": "code", "mountPath": f"{WORKING_DIR}/{PACKAGE}", "readOnly": True}
    assert PACKAGE == "cluster_programs"


def test_the_program_runs_in_the_pinned_python_image_hardened_writing_no_bytecode():
    container = program_container("wait", "rollout", [])
    assert container["image"] == versions.PYTHON_IMAGE
    assert container["securityContext"] == container_security()
    assert {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"} in container["env"]


def test_the_code_volume_is_the_named_configmap():
    assert code_volume("code-abc") == {"name": "code", "configMap": {"name": "code-abc"}}


def test_a_job_pod_runs_once_as_nobody_on_the_core_nodes_under_its_own_service_account():
    pod = program_pod("wait", "rollout", [], "rollout-job", "code-abc")
    assert pod["restartPolicy"] == "Never" and pod["serviceAccountName"] == "rollout-job"
    assert pod["nodeSelector"] == CORE_LABELS
    assert pod["securityContext"]["runAsUser"] == NOBODY


def test_a_job_pods_extra_mounts_and_volumes_come_after_the_code():
    extra_mount = {"name": "state", "mountPath": "/state"}
    extra_volume = {"name": "state", "emptyDir": {}}
    pod = program_pod("wait", "rollout", [], "sa", "code-abc", mounts=[extra_mount], volumes=[extra_volume])
    (container,) = pod["containers"]
    assert [m["name"] for m in container["volumeMounts"]] == ["code", "state"]
    assert pod["volumes"] == [code_volume("code-abc"), extra_volume]
