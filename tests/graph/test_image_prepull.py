"""The slurmd image is pulled onto the GPU nodes as soon as they and the image exist, by a pod that
holds no GPU, and the NodeSet's pods find it in the cache."""

import pytest

from devkit.offline_run import run_program
from model.facts import versions
from model.facts.contract import GPU_TOLERATION


@pytest.fixture(scope="module")
def prepull(dev):
    return dev.named("prepull-ds")


def _pod(ds):
    return ds.inputs["spec"]["template"]["spec"]


def test_prepull_pulls_exactly_the_image_slurmd_runs(dev, prepull):
    (init,) = _pod(prepull)["initContainers"]
    # The chart renders <repository>@<digest> when a digest is set; the stack output is that form.
    assert init["image"] == dev.output("slurmdImage")
    assert init["imagePullPolicy"] == "IfNotPresent" and init["command"] == ["true"]


def test_chart_renders_a_digest_reference_the_way_the_prepull_names_it(shared_ref):
    # SlinkyProject/slurm-operator v1.2.1 helm/slurm/templates/_helpers.tpl, "slurm.format-image".
    helpers = (shared_ref / "charts/slurm-1.2.1/templates/_helpers.tpl").read_text()
    block = helpers[helpers.index('define "slurm.format-image"') :]
    assert 'printf "%s@%s" $repository $digest' in block[: block.index("{{- end -}}\n{{- end -}}")]


def test_prepull_runs_on_every_gpu_node_through_the_taint(dev, prepull):
    pod = _pod(prepull)
    assert pod["nodeSelector"] == dev.named("nodes-gpu").inputs["labels"]
    assert pod["tolerations"] == [GPU_TOLERATION]


def test_prepull_holds_no_gpu_or_efa_and_almost_no_cpu_or_memory(prepull):
    pod = _pod(prepull)
    for container in pod["initContainers"] + pod["containers"]:
        res = container["resources"]
        assert set(res["requests"]) == {"cpu", "memory"}, container["name"]
        assert not any("gpu" in k or "efa" in k for part in res.values() for k in part), container["name"]
        assert res["requests"]["cpu"] == "10m" and res["limits"]["memory"] == "16Mi"


def test_prepull_keeps_its_pod_with_a_pinned_pause_image(prepull):
    (pause,) = _pod(prepull)["containers"]
    assert pause["image"] == versions.PAUSE_IMAGE
    assert pause["image"].startswith("registry.k8s.io/pause:") and "@sha256:" in pause["image"]


def test_prepull_gets_no_kubernetes_credentials(prepull):
    assert _pod(prepull)["automountServiceAccountToken"] is False


def test_a_new_image_is_pulled_on_every_node_at_once(prepull):
    assert prepull.inputs["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == "100%"


def test_prepull_starts_once_the_gpu_nodes_and_the_image_exist(dev, prepull):
    assert dev.depends_on(prepull, dev.named("nodes-gpu"))
    assert dev.depends_on(prepull, dev.named("slurmd-build"))


@pytest.mark.parametrize(
    "installs", ["slinky-cert-manager", "slinky-operator", "slurm-release", "devices-nvidia", "nodes-core"]
)
def test_prepull_does_not_wait_for_the_operator_or_the_release(dev, prepull, installs):
    assert not dev.depends_on(prepull, dev.named(installs))


def test_slurm_release_does_not_wait_for_the_pull(dev, prepull):
    # Its slurmd pods join the pull in progress; the rest of the release installs meanwhile.
    assert not dev.depends_on(dev.named("slurm-release"), prepull)


def test_prepull_waits_as_long_as_a_cold_pull_takes(prepull):
    assert int(prepull.inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]) >= 1200


def test_prepull_follows_the_image_on_p5():
    graph = run_program("dev", {"gpuInstanceType": "p5.48xlarge"})
    assert _pod(graph.named("prepull-ds"))["initContainers"][0]["image"] == graph.output("slurmdImage")
