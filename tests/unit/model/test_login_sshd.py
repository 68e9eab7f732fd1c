"""The login pod's sshd drop-in (model/builders/login_sshd.py): what the file says and how it
reaches the pod. What sshd makes of it, read in the operator's order, is specified on a real sshd
in tests/slurm/test_login_sshd.py."""

from model.builders import dashboards, login_sshd


def test_each_keyword_is_set_once():
    keywords = [keyword.lower() for keyword, _ in login_sshd.settings()]
    assert len(keywords) == len(set(keywords))


def test_the_only_forward_it_permits_is_the_grafana_tunnels_target():
    (target,) = [value for keyword, value in login_sshd.settings() if keyword == "PermitOpen"]
    assert dashboards.tunnel_refused_by(login_sshd.drop_in()) == []
    assert target == f"{dashboards.service_host()}:{dashboards.SERVICE_PORT}"


def test_the_drop_in_sorts_before_any_other_file_in_the_directory():
    assert login_sshd.DROP_IN_FILE.startswith("00-")
    assert login_sshd.mount()["mountPath"] == f"{login_sshd.DROP_IN_DIR}/{login_sshd.DROP_IN_FILE}"


def test_a_changed_drop_in_changes_the_value_that_rolls_the_pod(monkeypatch):
    before = login_sshd.hash_env()["value"]
    monkeypatch.setattr(login_sshd, "settings", lambda: [("X11Forwarding", "yes")])
    assert login_sshd.hash_env()["value"] != before


def test_the_configmap_holds_the_drop_in_under_the_name_the_mount_reads():
    configmap = login_sshd.configmap()
    assert configmap["data"] == {login_sshd.DROP_IN_FILE: login_sshd.drop_in()}
    assert login_sshd.volume()["configMap"]["name"] == configmap["metadata"]["name"]
    assert login_sshd.mount()["subPath"] == login_sshd.DROP_IN_FILE
