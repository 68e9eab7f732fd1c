"""What the Grafana release puts into the cluster, rendered from chart 12.11.1 with the program's
values (devkit/chart_render.py): the same objects on every render (no password of the chart's own),
the provisioned data source and dashboards, the Service the tunnel reaches, placement and hardening.
Each check also runs on a broken input to show it fails."""

import copy
import json
import re

import pytest
import yaml

from devkit import chart_render
from model.builders import dashboards, pod_hardening
from model.builders.metrics import DATASOURCE_UID
from tests.support import pod_hardening as ph
from tests.support import rendered_checks as rc
from tests.support.grafana_run import QUERY_ENDPOINT, REGION, grafana_graph

RELEASE_TYPE = chart_render.RELEASE_TYPE


@pytest.fixture(scope="module")
def graph():
    return grafana_graph()


@pytest.fixture(scope="module")
def request_(graph):
    (release,) = graph.of_type(RELEASE_TYPE)
    return chart_render.release_request(release)


def render(request, change=None) -> list[dict]:
    values = copy.deepcopy(request["values"])
    if change:
        change(values)
    return chart_render.render(
        request["chart"], request["version"], values, request["release_name"], request["namespace"]
    )


@pytest.fixture(scope="module")
def objects(request_):
    return render(request_)


def one(objects, kind, name=dashboards.RELEASE):
    (found,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def provisioning(objects, key) -> dict:
    return yaml.safe_load(one(objects, "ConfigMap")["data"][key])


def pod(objects) -> dict:
    ((_, spec),) = rc.pod_specs([one(objects, "Deployment")])
    return spec


def test_two_renders_are_identical(request_, objects):
    assert render(request_) == objects


def test_the_chart_draws_no_password_and_grants_no_api_access(objects):
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == ["ConfigMap", "Deployment", "Service", "ServiceAccount"]


def test_without_the_password_file_the_chart_draws_its_own_password(request_):
    # The failing case of the two tests above: the chart's templates/secret.yaml (randAlphaNum 40).
    def chart_password(values):
        del values["env"]["GF_SECURITY_ADMIN_PASSWORD__FILE"]

    first, second = render(request_, chart_password), render(request_, chart_password)
    assert "Secret" in {o["kind"] for o in first} and first != second


def test_grafana_reads_the_admin_password_from_a_file_of_the_programs_secret(objects):
    spec = pod(objects)
    (container,) = spec["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["GF_SECURITY_ADMIN_USER"]["value"] == dashboards.ADMIN_USER
    path = env["GF_SECURITY_ADMIN_PASSWORD__FILE"]["value"]
    (mount,) = [m for m in container["volumeMounts"] if path.startswith(m["mountPath"] + "/")]
    (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    assert mount["readOnly"] is True and volume["secret"]["secretName"] == dashboards.ADMIN_SECRET
    assert path.rsplit("/", 1)[1] == dashboards.ADMIN_PASSWORD_KEY
    assert volume["secret"]["defaultMode"] == 0o440


def test_no_secret_reaches_grafana_as_an_environment_variable(objects):
    env = pod(objects)["containers"][0]["env"]
    assert [e["name"] for e in env if "secretKeyRef" in e.get("valueFrom", {})] == []


def test_the_data_source_is_the_workspace_signed_with_the_pods_credentials(objects):
    (source,) = provisioning(objects, "datasources.yaml")["datasources"]
    assert (source["uid"], source["type"], source["url"]) == (
        DATASOURCE_UID,
        dashboards.DATASOURCE_TYPE,
        QUERY_ENDPOINT,
    )
    assert source["jsonData"] == {
        "sigV4Auth": True,
        "sigV4AuthType": "default",
        "sigV4Region": REGION,
        "httpMethod": "POST",
        "manageAlerts": False,
    }
    assert source["editable"] is False


def test_the_data_source_plugin_is_installed_at_its_pin(objects):
    env = {e["name"]: e for e in pod(objects)["containers"][0]["env"]}
    assert env["GF_PLUGINS_PREINSTALL_SYNC"]["valueFrom"]["configMapKeyRef"]["key"] == "plugins"
    assert one(objects, "ConfigMap")["data"]["plugins"] == "grafana-amazonprometheus-datasource@3.2.0"


def test_every_dashboard_refers_to_the_provisioned_data_source_by_uid():
    for path in dashboards.dashboard_files():
        text = json.dumps(json.loads(path.read_text()))
        refs = [json.loads(m) for m in re.findall(r'"datasource": (\{[^{}]*\})', text)]
        assert refs and all(ref.get("uid") == DATASOURCE_UID for ref in refs), path.name


def test_every_dashboard_configmap_is_mounted_where_its_provider_reads(objects):
    spec = pod(objects)
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in spec["containers"][0]["volumeMounts"]}
    providers = provisioning(objects, "dashboardproviders.yaml")["providers"]
    keys = [p.stem for p in dashboards.dashboard_files()]
    assert sorted(p["name"] for p in providers) == keys
    for provider in providers:
        volume = volumes[mounts[provider["options"]["path"]]]
        assert volume["configMap"]["name"] == dashboards.configmap_name(provider["name"])
        # Whole-ConfigMap volumes (no subPath): the kubelet brings a changed ConfigMap in.
        assert "subPath" not in next(
            m for m in spec["containers"][0]["volumeMounts"] if m["mountPath"] == provider["options"]["path"]
        )


def test_the_dashboards_are_read_only_in_the_ui(objects):
    for provider in provisioning(objects, "dashboardproviders.yaml")["providers"]:
        assert (provider["editable"], provider["allowUiUpdates"], provider["disableDeletion"]) == (
            False,
            False,
            True,
        )


def test_a_dashboard_left_out_of_the_providers_is_caught(request_):
    def drop_gpus(values):
        values["dashboardsConfigMaps"].pop("gpus")

    spec = pod(render(request_, drop_gpus))
    names = {v.get("configMap", {}).get("name") for v in spec["volumes"]}
    assert dashboards.configmap_name("gpus") not in names


def test_the_tunnel_reaches_the_rendered_service(objects):
    service = one(objects, "Service")
    host = f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc.cluster.local"
    (port,) = service["spec"]["ports"]
    assert service["spec"]["type"] == "ClusterIP"
    assert (dashboards.service_host(), dashboards.SERVICE_PORT) == (host, port["port"])
    assert f":{host}:{port['port']} " in dashboards.tunnel_command("admin@login.example")


def test_the_association_names_the_service_account_grafana_runs_as(graph, objects):
    association = graph.named("grafana-identity").inputs
    assert pod(objects)["serviceAccountName"] == association["serviceAccount"]
    account = one(objects, "ServiceAccount", association["serviceAccount"])
    assert account["metadata"]["namespace"] == association["namespace"]


def test_a_service_account_the_association_does_not_name_is_caught(graph, request_):
    def renamed(values):
        values["serviceAccount"]["name"] = "grafana-other"

    association = graph.named("grafana-identity").inputs
    assert pod(render(request_, renamed))["serviceAccountName"] != association["serviceAccount"]


def test_grafana_runs_on_the_core_nodes(objects):
    assert rc.placement_problems([one(objects, "Deployment")], {"role": "core"}) == []


def test_grafana_is_hardened_with_no_exception(objects):
    found = ph.findings({f"{dashboards.RELEASE}:Deployment/{dashboards.RELEASE}": pod(objects)})
    assert found == set()
    assert not [a for a in pod_hardening.ACCEPTED if a.workload.startswith(f"{dashboards.RELEASE}:")]


def test_the_hardening_check_catches_a_writable_root(request_):
    def writable(values):
        values["containerSecurityContext"]["readOnlyRootFilesystem"] = False

    found = ph.findings({"grafana:Deployment/grafana": pod(render(request_, writable))})
    assert found == {("grafana:Deployment/grafana", "grafana", "read-only-root")}


def test_no_init_container_runs_as_root(objects, request_):
    assert "initContainers" not in pod(objects)

    def persistent(values):
        values["persistence"]["enabled"] = True
        values["initChownData"]["enabled"] = True

    (init,) = pod(render(request_, persistent))["initContainers"]
    assert init["name"] == "init-chown-data" and init["securityContext"]["runAsUser"] == 0


def test_what_grafana_writes_is_an_emptydir(objects):
    spec = pod(objects)
    empty = {v["name"] for v in spec["volumes"] if "emptyDir" in v}
    mounts = {m["mountPath"]: m["name"] for m in spec["containers"][0]["volumeMounts"]}
    for path in ("/var/lib/grafana", "/var/lib/grafana-search", "/tmp", "/var/log/grafana"):
        assert mounts[path] in empty, path
