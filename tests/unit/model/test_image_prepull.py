"""The slurmd image's pre-pull DaemonSet spec (model/builders/image_prepull.py)."""

from model.builders import image_prepull
from model.builders.pod_security import PAUSE_USER
from model.facts import versions
from model.facts.contract import GPU_LABELS, GPU_TOLERATION

IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/slurmd@sha256:" + "0" * 64


def _pod():
    return image_prepull.daemon_set_spec(IMAGE)["template"]["spec"]


def test_the_init_container_is_the_image_itself_running_true():
    (pull,) = _pod()["initContainers"]
    assert (pull["image"], pull["command"], pull["imagePullPolicy"]) == (IMAGE, ["true"], "IfNotPresent")


def test_a_pinned_pause_container_keeps_the_pod_and_so_the_image_on_the_node():
    (pause,) = _pod()["containers"]
    assert pause["image"] == versions.PAUSE_IMAGE


def test_the_pod_runs_on_every_gpu_node_through_the_taint_as_the_pause_images_user():
    pod = _pod()
    assert pod["nodeSelector"] == GPU_LABELS and pod["tolerations"] == [GPU_TOLERATION]
    assert pod["securityContext"]["runAsUser"] == PAUSE_USER


def test_the_pod_asks_for_a_few_millicores_and_mebibytes_and_no_device():
    for container in _pod()["initContainers"] + _pod()["containers"]:
        assert container["resources"] == image_prepull.TINY
    assert set(image_prepull.TINY["requests"]) == {"cpu", "memory"}


def test_a_new_digest_is_pulled_on_every_node_at_once():
    strategy = image_prepull.daemon_set_spec(IMAGE)["updateStrategy"]
    assert strategy["rollingUpdate"]["maxUnavailable"] == "100%"
