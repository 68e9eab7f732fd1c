"""The NVIDIA and EFA device plugins' computed values (model/builders/device_plugins.py): both on the
GPU nodes only, through their taint."""

from model.builders import device_plugins
from model.facts.contract import GPU_LABELS, GPU_TOLERATION


def test_both_plugins_run_on_the_gpu_nodes_through_their_taint():
    for values in (device_plugins.nvidia_values(), device_plugins.efa_values()):
        assert values["nodeSelector"] == GPU_LABELS
        assert GPU_TOLERATION in values["tolerations"]


def test_both_plugins_tolerate_critical_addons_only_as_the_efa_chart_alone_does():
    for values in (device_plugins.nvidia_values(), device_plugins.efa_values()):
        assert {"key": "CriticalAddonsOnly", "operator": "Exists"} in values["tolerations"]


def test_the_nvidia_plugins_affinity_selects_the_gpu_label_in_place_of_the_charts_nfd_labels():
    terms = device_plugins.nvidia_values()["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    expressions = [e for term in terms["nodeSelectorTerms"] for e in term["matchExpressions"]]
    assert expressions == [{"key": k, "operator": "In", "values": [v]} for k, v in GPU_LABELS.items()]


def test_the_efa_plugin_gets_the_placement_and_nothing_else():
    assert device_plugins.efa_values() == device_plugins.gpu_placement()
