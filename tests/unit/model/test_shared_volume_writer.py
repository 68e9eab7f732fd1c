"""The pod spec of a Job that writes onto the shared volume as root (model/builders/shared_volume_writer.py)."""

from model.builders.pod_security import container_security
from model.builders.shared_volume_writer import writer_spec
from model.facts import versions
from model.facts.contract import CORE_LABELS, SHARED_MOUNT


def _pod(**extra):
    return writer_spec("stage", "cp -r /src/. /shared/jobs/", "shared", 600, **extra)["template"]["spec"]


def test_the_script_runs_by_sh_in_the_pinned_busybox():
    (container,) = _pod()["containers"]
    assert container["image"] == versions.BUSYBOX_IMAGE
    assert container["command"] == ["sh", "-c", "cp -r /src/. /shared/jobs/"]


def test_the_shared_claim_is_mounted_at_the_shared_mount_after_the_given_mounts():
    mount = {"name": "src", "mountPath": "/src"}
    volume = {"name": "src", "configMap": {"name": "jobs"}}
    pod = _pod(mounts=[mount], volumes=[volume])
    (container,) = pod["containers"]
    assert container["volumeMounts"] == [mount, {"name": "shared", "mountPath": SHARED_MOUNT}]
    assert pod["volumes"] == [volume, {"name": "shared", "persistentVolumeClaim": {"claimName": "shared"}}]


def test_the_writer_keeps_root_but_no_capability_unless_one_is_given():
    pod = _pod()
    assert "runAsUser" not in pod["securityContext"]
    assert pod["containers"][0]["securityContext"] == container_security()


def test_only_the_given_capabilities_are_added():
    (container,) = _pod(add_capabilities=["CHOWN"])["containers"]
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["CHOWN"]}


def test_the_writer_runs_on_the_core_nodes_without_a_service_account_token():
    pod = _pod()
    assert pod["nodeSelector"] == CORE_LABELS and pod["automountServiceAccountToken"] is False


def test_the_job_runs_within_its_deadline_and_is_retried_a_few_times():
    spec = writer_spec("stage", "true", "shared", 600)
    assert (spec["activeDeadlineSeconds"], spec["backoffLimit"]) == (600, 3)
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
