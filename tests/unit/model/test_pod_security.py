"""The security settings every pod starts from (model/builders/pod_security.py)."""

from model.builders.pod_security import container_security, pod_security


def test_every_pod_runs_under_the_kernels_default_syscall_filter():
    assert pod_security(None)["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod_security(1000)["seccompProfile"] == {"type": "RuntimeDefault"}


def test_a_pod_given_a_uid_runs_as_that_uid_and_group_and_never_as_root():
    context = pod_security(65534)
    assert (context["runAsNonRoot"], context["runAsUser"], context["runAsGroup"]) == (True, 65534, 65534)


def test_a_pod_given_no_uid_keeps_the_images_user():
    assert set(pod_security(None)) == {"seccompProfile"}


def test_a_container_has_no_capability_no_escalation_and_a_read_only_root():
    assert container_security() == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
