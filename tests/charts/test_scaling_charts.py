"""cluster-autoscaler 9.59.0 and KEDA 2.20.2 rendered from the reference charts with the program's
values (devkit/chart_render.py): what they run, where, as whom, with which rights, and hardened
but for the exceptions model/builders/pod_hardening.py accepts."""

import pytest

from components import pool_autoscaling
from components._parts.chart_values import base_values
from components._parts.helm import merge
from devkit import chart_render
from devkit.offline_run import run_program
from model.builders import cluster_autoscaler, pod_hardening
from model.builders import keda as keda_builder
from model.facts import versions
from tests.support import pod_hardening as ph
from tests.support.rendered_checks import pod_specs

KUBE = "v1.36.0"


@pytest.fixture(scope="module")
def autoscaler():
    graph = run_program("dev", {"gpuMinNodes": "0", "gpuMaxNodes": "4"})
    request = chart_render.release_request(graph.named("autoscaler-release"))
    return chart_render.render(
        request["chart"],
        request["version"],
        request["values"],
        request["release_name"],
        request["namespace"],
        chart_render.kube_version(graph),
    )


def keda_render(values=None):
    values = values if values is not None else merge(base_values("keda"), keda_builder.release_values())
    return chart_render.render(
        "keda", versions.KEDA.version, values, "keda", pool_autoscaling.NAMESPACE, KUBE
    )


@pytest.fixture(scope="module")
def keda():
    return keda_render()


def _one(objects, kind, name):
    (found,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def _container(objects, name):
    return _one(objects, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]


def test_cluster_autoscaler_discovers_this_clusters_groups_by_tag(autoscaler):
    command = _container(autoscaler, "cluster-autoscaler")["command"]
    assert (
        "--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/"
        "slinky-eks-dev" in command
    )
    assert "--cloud-provider=aws" in command


def test_cluster_autoscaler_runs_the_image_of_the_clusters_minor_not_the_charts(autoscaler):
    assert (
        _container(autoscaler, "cluster-autoscaler")["image"]
        == "registry.k8s.io/autoscaling/cluster-autoscaler:v1.36.1"
    )


def test_cluster_autoscaler_keeps_nodes_under_slurmd_pods(autoscaler):
    command = _container(autoscaler, "cluster-autoscaler")["command"]
    assert {"--skip-nodes-with-custom-controller-pods=true", "--skip-nodes-with-local-storage=true"} <= set(
        command
    )


def test_cluster_autoscaler_runs_on_the_core_nodes_as_the_service_account_its_identity_names(autoscaler):
    spec = _one(autoscaler, "Deployment", "cluster-autoscaler")["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"role": "core"}
    assert spec["serviceAccountName"] == cluster_autoscaler.SERVICE_ACCOUNT
    _one(autoscaler, "ServiceAccount", cluster_autoscaler.SERVICE_ACCOUNT)


def test_cluster_autoscaler_is_hardened_but_for_its_api_token(autoscaler):
    pods = ph.chart_pods({"cluster-autoscaler": autoscaler})
    accepted = ph.accepted(charts=True, releases={"cluster-autoscaler"})
    assert pod_hardening.problems(ph.findings(pods), accepted) == []


def test_the_charts_default_cluster_autoscaler_pod_would_be_caught():
    values = {
        "autoDiscovery": {"clusterName": "c"},
        "awsRegion": "us-west-2",
        "fullnameOverride": "cluster-autoscaler",
    }
    default = chart_render.render(
        "cluster-autoscaler",
        versions.CLUSTER_AUTOSCALER.version,
        values,
        "cluster-autoscaler",
        "kube-system",
        KUBE,
    )
    problems = pod_hardening.problems(
        ph.findings(ph.chart_pods({"cluster-autoscaler": default})),
        ph.accepted(charts=True, releases={"cluster-autoscaler"}),
    )
    assert any("misses seccomp" in p for p in problems) and any("misses drop-all" in p for p in problems)


def test_keda_may_scale_only_nodesets(keda):
    rules = _one(keda, "ClusterRole", "keda-operator")["rules"]
    scale = [r for r in rules if any(res.endswith("/scale") for res in r["resources"])]
    assert {(tuple(r["apiGroups"]), tuple(r["resources"])) for r in scale} == {
        (("slinky.slurm.net",), ("nodesets/scale",)),
        (("apps",), ("deployments/scale", "statefulsets/scale")),
    }
    assert not [r for r in rules if "*" in r["apiGroups"] or "*" in r["resources"]]


def test_the_charts_default_rbac_would_let_keda_scale_anything():
    rules = _one(keda_render({}), "ClusterRole", "keda-operator")["rules"]
    assert any("*/scale" in r["resources"] for r in rules)


def _secret_rules(objects, kind, name):
    return [r for r in _one(objects, kind, name)["rules"] if "secrets" in r["resources"]]


def test_keda_reads_no_secret_outside_its_namespace(keda):
    # Its triggers sign with Pod Identity (podIdentity aws): no Secret of another namespace is needed.
    assert not [
        o
        for o in keda
        if o["kind"] == "ClusterRole" and _secret_rules(keda, "ClusterRole", o["metadata"]["name"])
    ]
    assert {
        r["metadata"]["namespace"]
        for r in keda
        if r["kind"] == "Role" and _secret_rules(keda, "Role", r["metadata"]["name"])
    } == {pool_autoscaling.NAMESPACE}


def test_kedas_operator_and_metrics_server_are_told_their_secret_access_is_restricted(keda):
    for name in ("keda-operator", "keda-operator-metrics-apiserver"):
        env = {e["name"]: e.get("value") for e in _container(keda, name).get("env", [])}
        assert env.get("KEDA_RESTRICT_SECRET_ACCESS") == "true", name


def test_the_charts_default_rbac_would_let_keda_list_every_secret():
    assert {"list", "watch"} <= {
        verb for r in _secret_rules(keda_render({}), "ClusterRole", "keda-operator") for verb in r["verbs"]
    }


def test_keda_runs_on_the_core_nodes_as_the_account_its_identity_names(keda):
    for name in ("keda-operator", "keda-operator-metrics-apiserver", "keda-admission-webhooks"):
        assert _one(keda, "Deployment", name)["spec"]["template"]["spec"]["nodeSelector"]["role"] == "core"
    spec = _one(keda, "Deployment", "keda-operator")["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == pool_autoscaling.OPERATOR_ACCOUNT


def test_keda_is_hardened_but_for_its_api_tokens(keda):
    pods = ph.chart_pods({"keda": keda})
    assert pod_hardening.problems(ph.findings(pods), ph.accepted(charts=True, releases={"keda"})) == []


def test_keda_installs_the_crds_the_scaled_objects_need(keda):
    crds = {o["metadata"]["name"] for o in keda if o["kind"] == "CustomResourceDefinition"}
    assert {"scaledobjects.keda.sh", "triggerauthentications.keda.sh"} <= crds


def test_the_scaled_object_the_program_writes_is_valid_against_kedas_crd(keda):
    import jsonschema

    from model.builders import autoscaling
    from model.checks.gpu_pools import GpuPool
    from model.facts import catalog

    crd = _one(keda, "CustomResourceDefinition", "scaledobjects.keda.sh")
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    pool = GpuPool("train", catalog.lookup("g6.12xlarge"), 2, "us-west-2a", 400, 0, 0, 4)
    spec = autoscaling.scaled_object_spec(
        pool, "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-1", "us-west-2", "auth", 15
    )
    jsonschema.validate(spec, schema)
    broken = {**spec, "maxReplicaCount": 0}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_every_keda_pod_template_is_found(keda):
    assert len(list(pod_specs(keda))) == 3


# A pool at zero: the slurm chart 1.2.1 merges each NodeSet over nodesetDefaults (replicas: 1) with
# mergeOverwrite (templates/nodeset/nodeset-cr.yaml). Whether a 0, a zero value, survives that
# merge is checked on the chart itself, not assumed.


@pytest.fixture(scope="module")
def pool_at_zero():
    graph = run_program("dev", {"gpuMinNodes": "0", "gpuMaxNodes": "4"})
    (release,) = [
        r
        for r in graph.resources
        if r.type == "kubernetes:helm.sh/v3:Release" and "nodesets" in (r.inputs.get("values") or {})
    ]
    return graph, release


def _nodeset_replicas(graph, release, values) -> dict[str, int]:
    request = chart_render.release_request(release)
    objects = chart_render.render(
        request["chart"],
        request["version"],
        values,
        request["release_name"],
        request["namespace"],
        chart_render.kube_version(graph),
    )
    return {o["metadata"]["name"]: o["spec"].get("replicas") for o in objects if o["kind"] == "NodeSet"}


def test_a_pool_at_zero_renders_its_nodeset_at_zero_over_the_charts_default_of_one(pool_at_zero):
    graph, release = pool_at_zero
    values = chart_render.release_request(release)["values"]
    assert _nodeset_replicas(graph, release, values) == {"slurm-worker-slinky": 0}


def test_a_nodeset_without_replicas_would_render_at_the_charts_one(pool_at_zero):
    graph, release = pool_at_zero
    values = chart_render.release_request(release)["values"]
    values = {
        **values,
        "nodesets": {
            k: {f: v for f, v in n.items() if f != "replicas"} for k, n in values["nodesets"].items()
        },
    }
    assert _nodeset_replicas(graph, release, values) == {"slurm-worker-slinky": 1}
