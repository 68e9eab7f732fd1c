"""The in-cluster Grafana as data (model/builders/dashboards.py): dashboard files, the data source,
the providers, the release's values and the tunnel. The dev stack's Grafana is specified in
tests/graph/test_grafana.py; the dashboards' queries in tests/unit/observability/test_dashboards.py."""

import pytest

from model.builders import dashboards
from model.builders.metrics import DATASOURCE_UID
from model.facts import versions
from model.facts.contract import CORE_LABELS

ENDPOINT = "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-0123/"


def test_a_dashboard_file_named_as_a_dns_label_gives_its_key(tmp_path):
    assert dashboards.dashboard_key(tmp_path / "gpu-nodes.json") == "gpu-nodes"


@pytest.mark.parametrize("stem", ["GPU", "gpu_nodes", "a" * 41])
def test_a_dashboard_file_whose_name_cannot_name_a_configmap_is_refused(tmp_path, stem):
    with pytest.raises(ValueError, match=f"{stem}.json: a dashboard file's name must be a DNS label"):
        dashboards.dashboard_key(tmp_path / f"{stem}.json")


def test_a_dashboard_larger_than_a_configmap_holds_is_refused_at_preview(tmp_path):
    big = tmp_path / "big.json"
    big.write_text("x" * (dashboards.CONFIGMAP_LIMIT_BYTES + 1))
    with pytest.raises(ValueError, match="big.json: 1048577 bytes, more than a ConfigMap holds"):
        dashboards.dashboard_text(big)


def test_every_repository_dashboard_has_a_valid_key_in_name_order():
    files = dashboards.dashboard_files()
    assert files and files == sorted(files)
    assert all(dashboards.dashboard_key(f) == f.stem for f in files)


def test_the_data_source_is_the_workspace_signed_by_the_pods_own_credentials_and_read_only():
    source = dashboards.datasource(ENDPOINT, "us-west-2")
    assert (source["url"], source["uid"], source["editable"]) == (ENDPOINT, DATASOURCE_UID, False)
    assert (
        source["jsonData"]["sigV4AuthType"] == "default" and source["jsonData"]["sigV4Region"] == "us-west-2"
    )
    assert source["jsonData"]["manageAlerts"] is False


def test_no_provider_lets_the_ui_save_or_delete_a_provisioned_dashboard():
    (provider,) = dashboards.providers(["gpu-nodes"])
    assert (provider["disableDeletion"], provider["editable"], provider["allowUiUpdates"]) == (
        True,
        False,
        False,
    )
    assert provider["options"]["path"] == f"{dashboards.DASHBOARDS_MOUNT}/gpu-nodes"


def test_the_release_runs_on_the_core_nodes_with_the_pinned_plugin_and_one_configmap_per_dashboard():
    values = dashboards.release_values(ENDPOINT, "us-west-2", ["gpu-nodes", "slurm"])
    assert values["nodeSelector"] == CORE_LABELS
    assert values["plugins"] == [
        f"{versions.AMAZON_PROMETHEUS_PLUGIN}@{versions.AMAZON_PROMETHEUS_PLUGIN_VERSION}"
    ]
    assert values["dashboardsConfigMaps"] == {
        "gpu-nodes": "grafana-dashboard-gpu-nodes",
        "slurm": "grafana-dashboard-slurm",
    }


def test_the_admin_password_is_read_from_a_file_readable_by_the_pods_group_only():
    values = dashboards.release_values(ENDPOINT, "us-west-2", [])
    (mount,) = values["extraSecretMounts"]
    assert mount["defaultMode"] == 0o440 and mount["readOnly"] is True
    assert (
        values["env"]["GF_SECURITY_ADMIN_PASSWORD__FILE"]
        == f"{mount['mountPath']}/{dashboards.ADMIN_PASSWORD_KEY}"
    )


def test_the_tunnel_forwards_the_local_port_to_the_grafana_service_through_the_login_node():
    assert dashboards.tunnel_command("alice@login.example") == (
        "ssh -N -L 3000:grafana.grafana.svc.cluster.local:80 alice@login.example"
    )


def test_only_sshd_lines_that_turn_off_local_forwarding_refuse_the_tunnel():
    config = "AllowTcpForwarding remote\nallowtcpforwarding yes\n  DisableForwarding yes\nPermitTTY no\n"
    assert dashboards.tunnel_refused_by(config) == ["AllowTcpForwarding remote", "DisableForwarding yes"]
