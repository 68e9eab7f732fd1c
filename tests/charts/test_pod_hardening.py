"""Every pod the charts render keeps the hardening rules of model/builders/pod_hardening.py, but for the
exceptions accepted there with their reasons; the Slinky custom resources, whose pods the
operator builds, are listed there instead."""

import copy

from components._parts.chart_values import base_values
from devkit import chart_render
from model.builders import pod_hardening
from tests.charts.test_rendered_charts import rerender
from tests.support import pod_hardening as ph
from tests.support.rendered_checks import pod_specs


def test_every_chart_pod_is_hardened_but_for_the_accepted_exceptions(rendered):
    pods = ph.chart_pods(rendered)
    assert pod_hardening.problems(ph.findings(pods), ph.accepted(charts=True, releases=set(rendered))) == []


def test_the_check_sees_the_pods_of_every_release_but_slurm(rendered):
    releases = {w.split(":", 1)[0] for w in ph.chart_pods(rendered)}
    assert releases == set(rendered) - {"slurm", "slurm-operator-crds"}


def test_the_slurm_charts_pods_are_exactly_the_operator_built_kinds(rendered):
    kinds = {where.split("/", 1)[0] for where, _ in pod_specs(rendered["slurm"])}
    assert kinds == set(pod_hardening.OPERATOR_BUILT)


def test_the_charts_own_security_context_is_caught_where_it_is_weaker(dev):
    # The load balancer controller on chart 3.5.0's defaults: no seccomp, capabilities kept.
    def chart_defaults(values):
        values.pop("podSecurityContext")
        values.pop("securityContext")

    pods = ph.chart_pods(
        {"aws-load-balancer-controller": rerender(dev, "aws-load-balancer-controller", chart_defaults)}
    )
    accepted = {f for f in ph.accepted(charts=True) if f[0].startswith("aws-load-balancer-controller:")}
    assert pod_hardening.problems(ph.findings(pods), accepted) == [
        f"aws-load-balancer-controller:Deployment/aws-load-balancer-controller aws-load-balancer-controller: "
        f"misses {rule} ({pod_hardening.RULES[rule]}), and no exception accepts it"
        for rule in ("drop-all", "seccomp")
    ]


def test_an_accepted_chart_exception_that_is_gone_is_caught(rendered):
    pods = copy.deepcopy(ph.chart_pods(rendered))
    pods["aws-efa-k8s-device-plugin:DaemonSet/aws-efa-k8s-device-plugin"]["hostNetwork"] = False
    assert pod_hardening.problems(ph.findings(pods), ph.accepted(charts=True, releases=set(rendered))) == [
        "aws-efa-k8s-device-plugin:DaemonSet/aws-efa-k8s-device-plugin (pod): keeps unprivileged now: "
        "remove its exception from model/builders/pod_hardening.py"
    ]


def test_the_operator_and_webhook_run_as_their_images_user(rendered):
    # distroless/static:nonroot, USER 65532:65532 (SlinkyProject/slurm-operator v1.2.1 Dockerfile).
    for where, spec in pod_specs(rendered["slurm-operator"]):
        context = spec["securityContext"]
        assert (context["runAsUser"], context["runAsGroup"]) == (65532, 65532), where


def test_the_nvidia_plugin_keeps_the_charts_default_besides_what_is_added():
    # With securityContext set, the chart drops its own default for the plugin container
    # (templates/_helpers.tpl "nvidia-device-plugin.securityContext"): what is set must hold it.
    default = [
        o
        for o in chart_render.render(
            "nvidia-device-plugin", "0.20.0", {}, "nvidia-device-plugin", "kube-system"
        )
        if o["metadata"]["name"] == "nvidia-device-plugin"
    ]
    ((_, spec),) = pod_specs(default)
    (container,) = spec["containers"]
    ours = base_values("nvidia-device-plugin")["securityContext"]
    assert container["securityContext"].items() <= ours.items()
