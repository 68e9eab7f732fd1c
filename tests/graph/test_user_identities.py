"""The named users in the pods: their entries and keys in ConfigMaps, the login and controller pods
merging the entries into their own files, the workers' Prolog, sshd reading each user's keys, the
homes Job, and root's login opt-in. A stack without `users` gets none of it."""

import copy
import os
import pathlib
import subprocess

import pytest

from components.user_identities import homes_script
from devkit import chart_render
from devkit.offline_account import image_digest
from devkit.offline_run import run_program
from model.builders import identities
from model.checks.rules import EXAMPLE_SSH_KEY
from model.checks.users import User
from model.facts import versions
from model.facts.contract import IDENTITIES_CONFIGMAP, SLURM_NAMESPACE, SSH_KEYS_CONFIGMAP
from tests.support import rendered_checks as rc
from tests.support.chart_walk import load_chart, unknown_keys

ALICE_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKxJ0hQ4mYH3q2u1cGlB6y1u0sD1n8n3zQ7y0w5f6h7L alice@laptop"
BOB_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHo5XTHwRWToEb42mcBir6wbQZm9zUSpHChjh8bS0mXN bob@laptop"
ALICE = {"name": "alice", "uid": 2001, "sshPublicKey": ALICE_KEY, "admin": True}
BOB = {"name": "bob", "uid": 2002, "sshPublicKey": [BOB_KEY], "account": "vision"}
TAG = versions.SLURMD_BASE_IMAGE.rsplit(":", 1)[1]


@pytest.fixture(scope="module")
def named():
    return run_program("dev", {"users": [ALICE, BOB]})


@pytest.fixture(scope="module")
def values(named):
    return named.named("slurm-release").inputs["values"]


def _values(graph):
    return graph.named("slurm-release").inputs["values"]


# The ConfigMaps


def test_the_entries_configmap_holds_each_users_passwd_and_group_lines(named):
    data = named.named("users-entries").inputs
    assert data["metadata"] == {"name": IDENTITIES_CONFIGMAP, "namespace": SLURM_NAMESPACE}
    assert data["data"] == {
        "passwd": "alice:*:2001:2001:alice:/shared/home/alice:/bin/bash\nbob:*:2002:2002:bob:/shared/home/bob:/bin/bash\n",
        "group": "alice:*:2001:\nbob:*:2002:\n",
    }


def test_the_keys_configmap_holds_each_users_keys_under_their_name(named):
    data = named.named("users-keys").inputs
    assert data["metadata"] == {"name": SSH_KEYS_CONFIGMAP, "namespace": SLURM_NAMESPACE}
    assert data["data"] == {"alice": f"{ALICE_KEY}\n", "bob": f"{BOB_KEY}\n"}


def test_the_configmaps_stay_mutable_so_running_pods_see_changes(named):
    assert all(not named.named(n).inputs.get("immutable") for n in ("users-entries", "users-keys"))


def test_the_slurm_release_waits_for_the_configmaps_its_pods_mount(named):
    release = named.named("slurm-release")
    assert all(named.depends_on(release, named.named(n)) for n in ("users-entries", "users-keys"))


# The login pod


def test_the_login_pod_merges_the_entries_with_its_images_own_files(values):
    login = values["loginsets"]["slinky"]
    (init,) = login["podSpec"]["initContainers"]
    image = "ghcr.io/slinkyproject/login-pyxis"
    assert (
        init["image"] == f"{image}:{TAG}@{image_digest(image, TAG)}"
        and init["name"] == identities.INIT_CONTAINER
    )
    mounts = {m["mountPath"]: m for m in login["login"]["volumeMounts"]}
    assert mounts["/etc/passwd"]["subPath"] == "passwd" and mounts["/etc/group"]["subPath"] == "group"
    volumes = {v["name"]: v for v in login["podSpec"]["volumes"]}
    assert volumes[identities.ENTRIES_VOLUME]["configMap"]["name"] == IDENTITIES_CONFIGMAP


def test_the_login_pods_sshd_reads_each_users_keys_from_the_keys_configmap(values):
    login = values["loginsets"]["slinky"]
    assert login["extraSshdConfig"].startswith(
        f"AuthorizedKeysCommand /usr/bin/cat {identities.KEYS_DIR}/%u\n"
    )
    mounts = {m["mountPath"]: m for m in login["login"]["volumeMounts"]}
    assert (
        mounts[identities.KEYS_DIR]["name"] == identities.KEYS_VOLUME
        and "subPath" not in mounts[identities.KEYS_DIR]
    )
    volumes = {v["name"]: v for v in login["podSpec"]["volumes"]}
    assert volumes[identities.KEYS_VOLUME]["configMap"]["name"] == SSH_KEYS_CONFIGMAP


def test_a_changed_uid_rolls_the_login_and_controller_pods_and_not_the_workers(values):
    other = _values(run_program("dev", {"users": [{**ALICE, "uid": 2003}, BOB]}))
    for path in (("loginsets", "slinky"), ("controller",)):
        a, b = values, other
        for p in path:
            a, b = a[p], b[p]
        assert a["podSpec"]["initContainers"] != b["podSpec"]["initContainers"], path
    assert other["nodesets"] == values["nodesets"]


def test_a_changed_key_rolls_no_pod(values):
    other = _values(run_program("dev", {"users": [{**ALICE, "sshPublicKey": BOB_KEY}, BOB]}))
    assert other == values


# The controller and the workers


def test_the_controller_merges_the_entries_too(values):
    controller = values["controller"]
    (init,) = controller["podSpec"]["initContainers"]
    slurmctld = "ghcr.io/slinkyproject/slurmctld"
    assert init["image"] == f"{slurmctld}:{TAG}@{image_digest(slurmctld, TAG)}"
    assert [m["mountPath"] for m in controller["slurmctld"]["volumeMounts"]] == ["/etc/passwd", "/etc/group"]


def test_each_worker_mounts_the_entries_directory_and_runs_the_prolog(values):
    for nodeset in values["nodesets"].values():
        assert identities.entries_mount() in nodeset["slurmd"]["volumeMounts"]
        assert identities.entries_volume(IDENTITIES_CONFIGMAP) in nodeset["podSpec"]["volumes"]
    assert values["prologScripts"][identities.PROLOG_SCRIPT] == identities.prolog_script()


def test_the_init_containers_run_with_no_capability_and_a_read_only_root(values):
    for pod in (values["loginsets"]["slinky"]["podSpec"], values["controller"]["podSpec"]):
        (init,) = pod["initContainers"]
        assert init["securityContext"] == {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        }


# What the chart makes of it


def test_every_identity_key_exists_in_the_chart_or_is_passed_through(values):
    assert unknown_keys(values, load_chart()) == []


def test_the_walk_still_catches_a_misplaced_controller_volume(values):
    bad = copy.deepcopy(values)
    bad["controller"]["volumes"] = bad["controller"]["podSpec"]["volumes"]
    assert unknown_keys(bad, load_chart()) == ["controller.volumes"]


@pytest.fixture(scope="module")
def rendered(named):
    resource = next(r for r in named.of_type(chart_render.RELEASE_TYPE) if r.inputs["name"] == "slurm")
    request = chart_render.release_request(resource)
    objects = chart_render.render(
        request["chart"],
        request["version"],
        request["values"],
        "slurm",
        request["namespace"],
        chart_render.kube_version(named),
    )
    crds = chart_render.render_graph_releases(named)["slurm-operator-crds"]
    return objects, crds


def test_the_rendered_custom_resources_carry_the_identities_and_are_valid(rendered, named):
    objects, crds = rendered
    slinky = [o for o in objects if o["apiVersion"].startswith("slinky.slurm.net/")]
    assert [p for o in slinky for p in rc.custom_resource_problems(o, crds)] == []
    version = named.named("cluster-eks").inputs["version"]
    assert [p for o in slinky for p in rc.embedded_kubernetes_problems(o, version)] == []
    controller = next(o for o in slinky if o["kind"] == "Controller")
    assert controller["spec"]["slurmctld"]["volumeMounts"] == identities.merged_mounts()
    login = next(o for o in slinky if o["kind"] == "LoginSet")
    assert "PermitRootLogin" not in login["spec"]["extraSshdConfig"]  # the dev stack keeps its root key


# Root SSH


def test_without_a_root_key_root_has_no_key_and_sshd_refuses_root():
    graph = run_program("dev", {"sshPublicKey": None, "users": [ALICE]})
    login = _values(graph)["loginsets"]["slinky"]
    assert "rootSshAuthorizedKeys" not in login and login["extraSshdConfig"].endswith("PermitRootLogin no\n")
    assert graph.output("sshCommand").startswith("ssh alice@")


def test_with_a_root_key_the_ssh_command_stays_root(named):
    assert named.output("sshCommand").startswith("ssh root@")


@pytest.mark.parametrize("users", [[], [{**ALICE, "admin": False}]])
def test_a_stack_nobody_could_manage_is_refused(users):
    graph = run_program("dev", {"sshPublicKey": None, "users": users}, expect_error=True)
    assert graph.resources == []
    assert "slinky-eks:sshPublicKey = '': a root key, or at least one user with admin: true in users" in str(
        graph.error
    )


def test_a_stack_without_users_has_no_identities_and_root_as_before(dev):
    assert [r.type for r in dev.resources if r.name.startswith("users")] == [
        "slinky-eks:slurm:UserIdentities"
    ]
    values = _values(dev)
    login = values["loginsets"]["slinky"]
    assert "extraSshdConfig" not in login and "initContainers" not in login["podSpec"]
    assert login["rootSshAuthorizedKeys"].split()[1] == EXAMPLE_SSH_KEY
    assert identities.PROLOG_SCRIPT not in values["prologScripts"]
    assert "initContainers" not in values["controller"]["podSpec"]
    # The workers mount no entries ConfigMap (other volumes, the health check's, are not the users').
    assert not [
        v
        for n in values["nodesets"].values()
        for v in n["podSpec"]["volumes"]
        if v["name"] == identities.ENTRIES_VOLUME
        or v.get("configMap", {}).get("name") == IDENTITIES_CONFIGMAP
    ]


# The homes Job


def test_the_homes_job_runs_as_root_with_chown_alone(named):
    spec = named.named("users-homes").inputs["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["CHOWN"]}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert spec["automountServiceAccountToken"] is False


def test_the_homes_job_is_named_after_the_users_so_a_change_runs_it_again(named):
    name = named.named("users-homes").inputs["metadata"]["name"]
    other = run_program("dev", {"users": [ALICE]}).named("users-homes").inputs["metadata"]["name"]
    assert name.startswith("user-homes-") and other != name


def test_the_homes_job_waits_for_the_shared_claim(named):
    (claim,) = [
        r
        for r in named.of_type("kubernetes:core/v1:PersistentVolumeClaim")
        if r.inputs["metadata"]["name"] == "shared"
    ]
    assert named.depends_on(named.named("users-homes"), claim)


def _run_homes(tmp_path: pathlib.Path, users) -> None:
    subprocess.run(["sh", "-c", homes_script(users, str(tmp_path))], check=True, capture_output=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another uid needs root")
def test_the_homes_script_gives_each_user_a_private_home_and_a_second_run_changes_nothing(tmp_path):
    users = [User("alice", 2001, (ALICE_KEY,)), User("bob", 2002, (BOB_KEY,))]
    _run_homes(tmp_path, users)
    for u in users:
        home = tmp_path / "home" / u.name
        assert (home.stat().st_uid, home.stat().st_gid, oct(home.stat().st_mode & 0o777)) == (
            u.uid,
            u.uid,
            "0o700",
        )
    (tmp_path / "home/alice/notes").write_text("mine")
    (tmp_path / "home/alice").chmod(0o750)  # the user's own choice of mode
    _run_homes(tmp_path, users)
    assert oct((tmp_path / "home/alice").stat().st_mode & 0o777) == "0o750"
    assert (tmp_path / "home/alice/notes").read_text() == "mine"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another uid needs root")
def test_the_homes_script_gives_back_a_home_owned_by_someone_else(tmp_path):
    (tmp_path / "home/alice").mkdir(parents=True)
    _run_homes(tmp_path, [User("alice", 2001, (ALICE_KEY,))])
    assert (tmp_path / "home/alice").stat().st_uid == 2001
