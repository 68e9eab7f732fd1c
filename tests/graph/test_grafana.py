"""What the Grafana component registers: a role that may only query the one workspace, the Pod
Identity association of Grafana's service account, the admin password drawn once and kept secret,
and one ConfigMap per dashboard file holding that file."""

import json

import pytest

from components import grafana as component
from devkit.offline_run import SECRET_SIG, is_secret
from model.builders import dashboards
from tests.support.grafana_run import CLUSTER, WORKSPACE_ARN, grafana_graph

CONFIGMAP = "kubernetes:core/v1:ConfigMap"


@pytest.fixture(scope="module")
def graph():
    return grafana_graph()


def statements(graph, name):
    return json.loads(graph.named(name).inputs["policy"])["Statement"]


def unprovisioned(graph, files) -> list[str]:
    """The dashboard files without a ConfigMap holding exactly their text."""
    held = {key: text for r in graph.of_type(CONFIGMAP) for key, text in r.inputs.get("data", {}).items()}
    return [p.name for p in files if held.get(p.name) != p.read_text()]


def test_the_role_may_only_query_the_one_workspace(graph):
    (statement,) = statements(graph, "grafana-policy")
    assert statement == {
        "Effect": "Allow",
        "Resource": WORKSPACE_ARN,
        "Action": ["aps:GetLabels", "aps:GetMetricMetadata", "aps:GetSeries", "aps:QueryMetrics"],
    }


def test_the_role_has_no_managed_policy(graph):
    assert graph.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment") == []


def test_the_role_trusts_only_grafanas_service_account(graph):
    (statement,) = json.loads(graph.named("grafana-role").inputs["assumeRolePolicy"])["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert statement["Condition"]["StringEquals"] == {
        "aws:RequestTag/eks-cluster-name": CLUSTER,
        "aws:RequestTag/kubernetes-namespace": dashboards.NAMESPACE,
        "aws:RequestTag/kubernetes-service-account": dashboards.SERVICE_ACCOUNT,
    }


def test_the_association_gives_the_role_to_grafanas_service_account(graph):
    association = graph.named("grafana-identity").inputs
    assert (association["clusterName"], association["namespace"], association["serviceAccount"]) == (
        CLUSTER,
        dashboards.NAMESPACE,
        dashboards.SERVICE_ACCOUNT,
    )
    assert association["roleArn"] == "arn:aws:iam::123456789012:role/grafana-role"


def test_the_release_waits_for_the_association_and_the_dashboards(graph):
    release = graph.named("grafana-release")
    for name in ("grafana-identity", "grafana-admin-secret", "grafana-dashboard-gpus"):
        assert graph.depends_on(release, graph.named(name)), name


def registered_password(graph) -> dict:
    """The admin password as the component registers it (a secret arrives wrapped in the secret
    signature, its plain value under "value")."""
    return graph.component_outputs[graph.named("grafana").urn]["admin_password"]


def test_the_admin_password_is_a_secret_output(graph):
    password = registered_password(graph)
    assert isinstance(password, dict) and SECRET_SIG in password.values()
    assert len(password["value"]) == dashboards.ADMIN_PASSWORD_LENGTH


def test_the_admin_password_is_drawn_once_and_only_in_the_secret(graph):
    (drawn,) = graph.of_type("random:index/randomPassword:RandomPassword")
    assert drawn.inputs["length"] == dashboards.ADMIN_PASSWORD_LENGTH
    secret = graph.named("grafana-admin-secret")
    assert "data" in secret.secret_inputs
    assert secret.inputs["metadata"] == {"name": dashboards.ADMIN_SECRET, "namespace": dashboards.NAMESPACE}
    values = json.dumps(graph.named("grafana-release").inputs["values"])
    assert registered_password(graph)["value"] not in values


def test_every_dashboard_file_is_provisioned_from_its_own_configmap(graph):
    files = dashboards.dashboard_files()
    assert files and unprovisioned(graph, files) == []
    names = sorted(r.inputs["metadata"]["name"] for r in graph.of_type(CONFIGMAP))
    assert names == sorted(dashboards.configmap_name(p.stem) for p in files)


def test_a_dashboard_file_without_its_configmap_is_caught(graph, tmp_path):
    extra = tmp_path / "queue.json"
    extra.write_text('{"title": "Queue"}')
    assert unprovisioned(graph, [*dashboards.dashboard_files(), extra]) == ["queue.json"]


def test_a_changed_dashboard_file_changes_its_configmap(monkeypatch, tmp_path):
    (tmp_path / "gpus.json").write_text('{"title": "GPUs", "version": 2}')
    monkeypatch.setattr(dashboards, "dashboard_files", lambda: sorted(tmp_path.glob("*.json")))
    changed = grafana_graph()
    assert changed.named("grafana-dashboard-gpus").inputs["data"] == {
        "gpus.json": '{"title": "GPUs", "version": 2}'
    }
    assert unprovisioned(changed, dashboards.dashboard_files()) == []


def test_a_dashboard_file_that_cannot_name_a_configmap_is_refused(tmp_path):
    with pytest.raises(ValueError, match="GPU Overview.json"):
        dashboards.dashboard_key(tmp_path / "GPU Overview.json")


def test_a_dashboard_too_big_for_a_configmap_is_refused(tmp_path):
    big = tmp_path / "huge.json"
    big.write_text('{"title": "' + "x" * dashboards.CONFIGMAP_LIMIT_BYTES + '"}')
    with pytest.raises(ValueError, match="huge.json: .* more than a ConfigMap holds"):
        dashboards.dashboard_text(big)
    fits = tmp_path / "fits.json"
    fits.write_text('{"title": "fits"}')
    assert dashboards.dashboard_text(fits) == '{"title": "fits"}'


def test_two_runs_register_identical_inputs():
    def inputs(graph):
        return {r.name: r.inputs for r in graph.resources}

    assert inputs(grafana_graph()) == inputs(grafana_graph())


def test_the_query_policy_names_the_workspace_it_is_given():
    other = WORKSPACE_ARN.replace("ws-0a1b", "ws-ffff")
    (statement,) = json.loads(component.query_policy(other))["Statement"]
    assert statement["Resource"] == other


# As the program wires it (__main__.py): over the store's workspace, its outputs, and gone with
# `metrics: false`.


def test_the_program_points_grafana_at_the_stores_workspace(dev):
    (statement,) = statements(dev, "grafana-policy")
    (source,) = dev.named("grafana-release").inputs["values"]["datasources"]["datasources.yaml"][
        "datasources"
    ]
    assert source["url"] == dev.output("metricsQueryEndpoint")
    workspace_id = source["url"].rstrip("/").rsplit("/", 1)[1]
    assert statement["Resource"] == f"arn:aws:aps:us-west-2:123456789012:workspace/{workspace_id}"


def test_the_program_exports_grafanas_outputs(dev):
    from devkit.offline_run import LOGIN_HOSTNAME

    assert dev.output("grafanaUrl") == dashboards.url()
    # The dev stack keeps its root key: the tunnel logs in as sshCommand does, root.
    assert dev.output("sshCommand") == f"ssh root@{LOGIN_HOSTNAME}"
    assert dev.output("grafanaTunnelCommand") == dashboards.tunnel_command(f"root@{LOGIN_HOSTNAME}")
    assert is_secret(dev.stack_outputs["grafanaAdminPassword"])


def test_grafana_waits_for_the_core_nodes_and_the_pod_identity_agent(dev):
    association = dev.named("grafana-identity")
    release = dev.named("grafana-release")
    for node_group in dev.of_type("aws:eks/nodeGroup:NodeGroup"):
        if node_group.name == "nodes-core":
            assert dev.depends_on(release, node_group)
    agent = [
        r for r in dev.of_type("aws:eks/addon:Addon") if r.inputs.get("addonName") == "eks-pod-identity-agent"
    ]
    assert agent and dev.depends_on(association, agent[0])


def test_metrics_false_builds_no_grafana():
    from devkit.offline_run import run_program

    graph = run_program("dev", {"metrics": "false"})
    # Resources only: the mocked engine keeps one root stack per process, whose outputs earlier
    # runs of the same process have already set.
    assert not [r for r in graph.resources if r.name.startswith("grafana")]
