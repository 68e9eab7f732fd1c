"""plugstack.conf and enroot.conf as model/builders/containers.py renders them."""

from __future__ import annotations

import os
import pathlib
import subprocess
import tarfile
import tempfile

import pytest

from devkit.reference_data import ref_root
from model.builders import containers
from model.builders.containers import EcrRegistry, EnrootPaths, registry_pull_policy
from model.facts.contract import SCRIPT_PATH
from tests.support.paths import REPO

REGISTRY = EcrRegistry("111122223333", "eu-west-2", "aws", "amazonaws.com")

PATHS = EnrootPaths(local="/mnt/local", config="/etc/enroot/credentials")
TREE = dict(containers.node_local_tree(PATHS, "/mnt/local/jobs"))
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="gives directories to other users: needs root")
# The job's user and another named user, as uids (chown takes numbers: no passwd entry needed).
ALICE, BOB = 2001, 2002


def _as_enroot_reads(conf: str) -> dict[str, str]:
    """Each key's value as enroot evaluates it: `eval echo` in bash (NVIDIA/enroot v4.1.2 enroot.in,
    config::load)."""
    out = {}
    for line in conf.splitlines():
        key, value = line.split(None, 1)
        out[key] = subprocess.run(
            ["bash", "-c", f"eval echo {value}"], capture_output=True, text=True, check=True
        ).stdout.strip()
    return out


def _plugstack_arguments(conf: str) -> dict[str, str]:
    """The plugin's arguments on its line, as pyxis's config.c reads them (name=value)."""
    return dict(argument.split("=", 1) for argument in conf.split()[2:])


def test_plugstack_is_one_required_line_naming_the_plugin_with_no_include():
    conf = containers.plugstack_conf("/opt/pyxis/spank_pyxis.so")
    assert len(conf.splitlines()) == 1 and conf.endswith("\n")
    assert conf.split()[:2] == ["required", "/opt/pyxis/spank_pyxis.so"]


def test_plugstack_names_where_the_image_installs_pyxis_by_default():
    assert containers.plugstack_conf().split()[:2] == ["required", containers.PYXIS_PLUGIN]


def test_pyxis_imports_images_into_a_directory_of_the_node_local_volume():
    # Its default, /run/pyxis, is the slurmd container's writable layer (pyxis v0.24.0 config.c).
    runtime = _plugstack_arguments(containers.plugstack_conf())
    assert runtime == {"runtime_path": f"{containers.NODE_LOCAL_MOUNT}/pyxis"}
    mounted = {m["mountPath"]: m["name"] for m in containers.slurmd_mounts()}
    assert mounted[containers.NODE_LOCAL_MOUNT] == containers.NODE_LOCAL_VOLUME


def test_each_user_gets_own_runtime_and_data_directories():
    values = _as_enroot_reads(containers.enroot_conf(PATHS))
    user = f"user-{os.getuid()}"
    assert values["ENROOT_RUNTIME_PATH"] == f"/mnt/local/enroot/runtime/{user}"
    assert values["ENROOT_DATA_PATH"] == f"/mnt/local/enroot/data/{user}"


def test_the_layer_cache_is_left_to_enroots_default_in_the_users_own_home():
    # enroot.in: ENROOT_CACHE_PATH defaults to ${XDG_CACHE_HOME:-$HOME/.cache}/enroot.
    assert "ENROOT_CACHE_PATH" not in containers.enroot_conf(PATHS)


def test_temp_is_the_one_node_local_directory_every_user_may_write_sticky():
    values = _as_enroot_reads(containers.enroot_conf(PATHS))
    assert values["ENROOT_TEMP_PATH"] == "/mnt/local/enroot/tmp"
    assert TREE[values["ENROOT_TEMP_PATH"]] == 0o1777
    assert [d for d, mode in TREE.items() if mode & 0o022] == [values["ENROOT_TEMP_PATH"]]


def test_credentials_are_read_from_a_given_directory_not_the_home():
    values = _as_enroot_reads(containers.enroot_conf(PATHS))
    assert values["ENROOT_CONFIG_PATH"] == "/etc/enroot/credentials"


def test_without_a_credentials_directory_each_user_keeps_enroots_default():
    assert "ENROOT_CONFIG_PATH" not in containers.enroot_conf(EnrootPaths(local="/mnt/local"))


def test_every_key_is_one_enroot_reads_from_its_configuration_file():
    # enroot ignores any key not matching ENROOT_[A-Z_]+ (enroot.in config::load).
    keys = [line.split()[0] for line in containers.enroot_conf(PATHS).splitlines()]
    assert keys and all(k.startswith("ENROOT_") and k[7:].replace("_", "").isupper() for k in keys)


def test_the_parent_of_every_per_user_directory_is_made_beforehand_writable_by_root_alone():
    values = _as_enroot_reads(containers.enroot_conf(PATHS))
    for key in ("ENROOT_RUNTIME_PATH", "ENROOT_DATA_PATH"):
        assert TREE[os.path.dirname(values[key])] == 0o755, key


def test_the_init_container_mounts_the_node_local_volume_and_runs_the_tree_script():
    init = containers.init_container("repo@sha256:x", {"allowPrivilegeEscalation": False})
    assert init["image"] == "repo@sha256:x"
    assert init["command"] == ["sh", "-c", containers.node_local_script()]
    assert init["volumeMounts"] == [
        {"name": containers.NODE_LOCAL_VOLUME, "mountPath": containers.NODE_LOCAL_MOUNT}
    ]
    assert init["securityContext"] == {"allowPrivilegeEscalation": False}


@pytest.mark.parametrize(
    "script",
    [containers.prolog_script(), containers.epilog_script(), containers.node_local_script()],
    ids=["prolog", "epilog", "init"],
)
def test_every_root_script_sets_the_systems_search_path_before_its_first_command(script):
    # Slurm gives a Prolog or Epilog no PATH (https://slurm.schedmd.com/prolog_epilog.html).
    commands = [
        line
        for line in script.replace("; ", "\n").splitlines()
        if line and not line.startswith(("#", "set "))
    ]
    assert commands[0] == f"PATH={SCRIPT_PATH}"


# -- the scripts run here, as root runs them in the pod, on a tree under tmp_path ---------------


@pytest.fixture
def node():
    """A directory other users can reach, as a pod's / is (pytest's own temporary directories are
    root's alone, 0700): the users' attempts must meet the tree's modes, not an unreachable parent."""
    with tempfile.TemporaryDirectory(prefix="node-local-") as d:
        os.chmod(d, 0o755)
        yield pathlib.Path(d)


def _paths(tmp: pathlib.Path) -> tuple[EnrootPaths, pathlib.Path]:
    return EnrootPaths(local=str(tmp / "local")), tmp / "local/jobs"


def _emptydir(tmp: pathlib.Path) -> EnrootPaths:
    """The node-local volume as the kubelet makes it (0777, root's: kubernetes/kubernetes
    pkg/volume/emptydir/empty_dir.go), then the init container's script run on it."""
    paths, scratch = _paths(tmp)
    (tmp / "local").mkdir()
    (tmp / "local").chmod(0o777)
    subprocess.run(["sh", "-c", containers.node_local_script(paths, str(scratch))], check=True)
    return paths


def _run(script: str, job: str, tmp: pathlib.Path, uid: int = ALICE) -> subprocess.CompletedProcess:
    # As slurmd runs it: no PATH of its own (the script sets one), the job's ids in the environment.
    env = {"SLURM_JOB_ID": job, "SLURM_JOB_UID": str(uid), "SLURM_JOB_GID": str(uid)}
    path = tmp / f"script-{job}.sh"
    path.write_text(script)
    return subprocess.run(["/bin/sh", str(path)], env=env, capture_output=True, text=True)


def _as(uid: int, command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sh", "-c", command],
        capture_output=True,
        text=True,
    )


def _prolog(tmp: pathlib.Path, job: str, uid: int = ALICE) -> subprocess.CompletedProcess:
    paths, scratch = _paths(tmp)
    return _run(containers.prolog_script(paths, str(scratch)), job, tmp, uid)


def _epilog(tmp: pathlib.Path, job: str, uid: int = ALICE) -> subprocess.CompletedProcess:
    paths, scratch = _paths(tmp)
    return _run(containers.epilog_script(paths, str(scratch)), job, tmp, uid)


def _owner_mode(path: pathlib.Path) -> tuple[int, int]:
    st = os.lstat(path)
    return st.st_uid, st.st_mode & 0o7777


@needs_root
def test_the_init_container_makes_the_tree_roots_with_its_modes_on_the_kubelets_0777_directory(node):
    paths, scratch = _paths(node)
    _emptydir(node)
    assert {d: _owner_mode(pathlib.Path(d)) for d, _ in containers.node_local_tree(paths, str(scratch))} == {
        d: (0, mode) for d, mode in containers.node_local_tree(paths, str(scratch))
    }


@needs_root
def test_after_the_init_container_a_user_can_neither_rename_nor_create_anything_root_walks(node):
    _emptydir(node)
    local = node / "local"
    for attempt in ("mv jobs jobs.old", "mkdir evil", "mv enroot enroot.old", "mkdir enroot/data/user-2001"):
        assert _as(BOB, f"cd {local} && {attempt}").returncode != 0, attempt


@needs_root
def test_the_prolog_gives_the_job_user_their_own_runtime_data_and_scratch_directories(node):
    paths = _emptydir(node)
    assert _prolog(node, "42").returncode == 0
    for d in (f"{paths.runtime}/user-{ALICE}", f"{paths.data}/user-{ALICE}", node / "local/jobs/42"):
        assert _owner_mode(pathlib.Path(d)) == (ALICE, 0o700), d


@needs_root
def test_a_second_job_of_the_same_user_keeps_their_directories(node):
    paths = _emptydir(node)
    _prolog(node, "42")
    (pathlib.Path(paths.data) / f"user-{ALICE}/kept").touch()
    assert _prolog(node, "43").returncode == 0
    assert (pathlib.Path(paths.data) / f"user-{ALICE}/kept").exists()


@needs_root
def test_jobs_of_one_user_starting_together_on_a_node_all_start(node):
    # Each Prolog makes the user's directories if missing; without the lock two of them race to
    # the same mkdir and the loser drains the node.
    paths, scratch = _paths(node)
    script = node / "prolog.sh"
    for attempt in range(5):
        if attempt:
            subprocess.run(["rm", "-rf", str(node / "local")], check=True)
        _emptydir(node)
        script.write_text(containers.prolog_script(paths, str(scratch)))
        env = {"SLURM_JOB_UID": str(ALICE), "SLURM_JOB_GID": str(ALICE)}
        started = [
            subprocess.Popen(
                ["/bin/sh", str(script)], env={**env, "SLURM_JOB_ID": job}, stderr=subprocess.PIPE
            )
            for job in ("1", "2", "3", "4")
        ]
        assert [p.wait() for p in started] == [0, 0, 0, 0], [p.stderr.read() for p in started]
        # A Prolog that lost a race to the same mkdir would say so and leave its job without scratch.
        for job in ("1", "2", "3", "4"):
            assert _owner_mode(scratch / job) == (ALICE, 0o700), (attempt, job)


@needs_root
def test_no_user_can_take_the_lock_the_prolog_and_epilog_wait_on(node):
    # A job holding it would stall every other job's Prolog and Epilog on the node.
    paths = _emptydir(node)
    assert _owner_mode(pathlib.Path(containers.node_local_lock(paths))) == (0, 0o600)
    assert _as(BOB, f"exec 9<{containers.node_local_lock(paths)}").returncode != 0


@needs_root
def test_a_full_node_local_disk_costs_the_job_its_directories_not_the_node(tmp_path):
    # Any job can fill the disk: the Prolog says so and exits 0, so the node is not drained and
    # the job fails, if it must, on its own. A tmpfs with room for the tree and nothing more.
    paths, scratch = _paths(tmp_path)
    prolog = tmp_path / "prolog.sh"
    prolog.write_text(containers.prolog_script(paths, str(scratch)))
    script = " && ".join(
        [
            f"mkdir -p {tmp_path}/local",
            f"mount -t tmpfs -o nr_inodes=8,mode=0777 none {tmp_path}/local",
            containers.node_local_script(paths, str(scratch)).replace("set -eu; ", ""),
            f"SLURM_JOB_ID=42 SLURM_JOB_UID={ALICE} SLURM_JOB_GID={ALICE} /bin/sh {prolog}",
        ]
    )
    done = subprocess.run(["unshare", "--mount", "--", "sh", "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "is the node-local disk full?" in done.stderr


@needs_root
def test_the_prolog_refuses_a_node_local_tree_a_user_made_and_gives_nothing_away(node):
    # The attack on the kubelet's 0777 directory where nothing made the tree first: another user
    # makes it, with the next job's scratch a link to a root directory (a stand-in for /etc).
    target = node / "etc"
    target.mkdir()
    local = node / "local"
    local.mkdir()
    local.chmod(0o777)
    planted = _as(
        BOB, f"cd {local} && mkdir -p enroot/runtime enroot/data enroot/tmp jobs && ln -s {target} jobs/42"
    )
    assert planted.returncode == 0, planted.stderr
    assert _prolog(node, "42").returncode != 0
    assert _owner_mode(target) == (0, 0o755)
    assert list((local / "enroot/data").iterdir()) == []


@needs_root
def test_the_prolog_refuses_a_per_user_directory_that_is_a_link(node):
    paths = _emptydir(node)
    target = node / "etc"
    target.mkdir()
    (pathlib.Path(paths.data) / f"user-{ALICE}").symlink_to(target)
    assert _prolog(node, "42").returncode != 0
    assert _owner_mode(target) == (0, 0o755)


@needs_root
def test_the_epilog_removes_the_jobs_scratch_and_no_other(node):
    _emptydir(node)
    _prolog(node, "42")
    _prolog(node, "43", BOB)
    assert _epilog(node, "42").returncode == 0
    assert sorted(p.name for p in (node / "local/jobs").iterdir()) == ["43"]


@needs_root
def test_the_epilog_removes_the_users_enroot_directories_and_temp_entries_after_their_last_job(node):
    paths = _emptydir(node)
    _prolog(node, "42")
    _prolog(node, "43")
    _as(ALICE, f"mkdir {paths.temp}/left-behind")
    _epilog(node, "42")
    kept = [f"{paths.runtime}/user-{ALICE}", f"{paths.data}/user-{ALICE}", f"{paths.temp}/left-behind"]
    assert all(os.path.exists(d) for d in kept)
    assert _epilog(node, "43").returncode == 0
    assert [d for d in kept if os.path.exists(d)] == []


@needs_root
def test_the_epilog_leaves_another_users_directories(node):
    paths = _emptydir(node)
    _prolog(node, "42")
    _prolog(node, "43", BOB)
    _as(BOB, f"mkdir {paths.temp}/bobs")
    _epilog(node, "42")
    assert os.path.exists(f"{paths.data}/user-{BOB}") and os.path.exists(f"{paths.temp}/bobs")


@needs_root
def test_the_epilog_removes_nothing_without_a_job_id(node):
    _emptydir(node)
    _prolog(node, "43")
    assert _epilog(node, "").returncode == 0
    assert (node / "local/jobs/43").exists()


def test_the_clusters_enroot_conf_reads_credentials_where_the_pods_mount_them():
    values = _as_enroot_reads(containers.enroot_conf(containers.PATHS))
    mounts = {m["mountPath"]: m for m in containers.slurmd_mounts()}
    volumes = {v["name"]: v for v in containers.slurmd_volumes()}
    mount = mounts[values["ENROOT_CONFIG_PATH"]]
    assert mount["readOnly"] and "subPath" not in mount
    assert volumes[mount["name"]]["configMap"]["items"] == [
        {"key": containers.CREDENTIALS_KEY, "path": ".credentials"}
    ]


def test_the_credentials_line_names_the_registry_host_ecrs_login_and_the_helper():
    assert containers.credentials([REGISTRY]) == (
        "machine 111122223333.dkr.ecr.eu-west-2.amazonaws.com login AWS password "
        f"$({containers.ECR_PASSWORD_HELPER} eu-west-2 https://api.ecr.eu-west-2.amazonaws.com "
        "http://169.254.170.23/v1/credentials "
        "/var/run/secrets/pods.eks.amazonaws.com/serviceaccount/eks-pod-identity-token)\n"
    )


def test_the_pull_policy_grants_the_token_on_star_and_only_pulls_from_repositories_tagged_for_the_cluster():
    statements = containers.registry_pull_policy(REGISTRY, "team-a")["Statement"]
    assert statements == [
        {"Effect": "Allow", "Action": "ecr:GetAuthorizationToken", "Resource": "*"},
        {
            "Effect": "Allow",
            "Action": ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
            "Resource": "arn:aws:ecr:eu-west-2:111122223333:repository/*",
            "Condition": {"StringEquals": {"aws:ResourceTag/slinky-eks/container-jobs": "team-a"}},
        },
    ]


def test_the_slurmd_image_installs_the_password_helper_where_the_credentials_call_it():
    dockerfile = (REPO / "image/Dockerfile").read_text()
    assert f"COPY --chmod=0755 ecr-password.sh {containers.ECR_PASSWORD_HELPER}\n" in dockerfile


@pytest.fixture(scope="module")
def enroot_src(tmp_path_factory):
    """enroot v4.1.2's shell library, from the pinned source (../shared/ref/src)."""
    out = tmp_path_factory.mktemp("enroot")
    with tarfile.open(ref_root() / "src" / "enroot-v4.1.2.tar.gz") as archive:
        archive.extractall(out, filter="data")
    (src,) = out.glob("*/src")
    return src


def _enroot_reads(enroot_src, tmp_path, credentials: str, image: str) -> list[str]:
    """What enroot v4.1.2 makes of `credentials` for `image`: the user it infers from the file
    (docker.sh docker::_parse_uri) and the file as curl gets it (common.sh common::evalnetrc),
    with a stand-in for the helper that prints a password naming its arguments."""
    helper = tmp_path / "ecr-password.sh"
    helper.write_text('#!/bin/sh\necho "password-for-$1-at-$2"\n')
    helper.chmod(0o755)
    config = tmp_path / "config"
    config.mkdir()
    (config / ".credentials").write_text(credentials.replace(containers.ECR_PASSWORD_HELPER, str(helper)))
    script = (
        'set -euo pipefail; shopt -s lastpipe; source "$ENROOT_LIBRARY_PATH/docker.sh"; '
        f"docker::_parse_uri 'docker://{image}' | head -n1; "
        'common::evalnetrc "$ENROOT_CONFIG_PATH/.credentials" 2>/dev/null'
    )
    env = {
        "PATH": os.environ["PATH"],
        "ENROOT_LIBRARY_PATH": str(enroot_src),
        "ENROOT_CONFIG_PATH": str(config),
        "ENROOT_CACHE_PATH": str(tmp_path / "cache"),
        "ENROOT_TRANSFER_RETRIES": "0",
        "ENROOT_CONNECT_TIMEOUT": "1",
        "ENROOT_TRANSFER_TIMEOUT": "1",
    }
    result = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_enroot_logs_in_to_the_registry_as_aws_with_the_helpers_password(enroot_src, tmp_path):
    lines = _enroot_reads(
        enroot_src, tmp_path, containers.credentials([REGISTRY]), f"{REGISTRY.host}/team/train:v1"
    )
    assert lines == [
        "AWS",
        f"machine {REGISTRY.host} login AWS password "
        "password-for-eu-west-2-at-https://api.ecr.eu-west-2.amazonaws.com",
    ]


def test_an_image_of_another_registry_gets_no_login_from_the_clusters_file(enroot_src, tmp_path):
    lines = _enroot_reads(
        enroot_src, tmp_path, containers.credentials([REGISTRY]), "nvcr.io/nvidia/pytorch:25.01-py3"
    )
    assert lines[0] == ""


def test_the_registry_is_the_one_the_stacks_repository_names_in_the_clusters_partition():
    registry = EcrRegistry.of(
        "111122223333.dkr.ecr.eu-west-2.amazonaws.com/slinky-eks-dev/slurmd",
        "arn:aws:eks:eu-west-2:111122223333:cluster/slinky-eks-dev",
    )
    assert registry == REGISTRY


def test_a_china_region_registry_keeps_its_dns_suffix_and_partition():
    registry = EcrRegistry.of(
        "111122223333.dkr.ecr.cn-north-1.amazonaws.com.cn/slurmd",
        "arn:aws-cn:eks:cn-north-1:111122223333:cluster/c",
    )
    assert registry.host == "111122223333.dkr.ecr.cn-north-1.amazonaws.com.cn"
    assert registry.endpoint == "https://api.ecr.cn-north-1.amazonaws.com.cn"
    assert registry_pull_policy(registry, "c")["Statement"][1]["Resource"] == (
        "arn:aws-cn:ecr:cn-north-1:111122223333:repository/*"
    )


def test_a_repository_outside_ecr_is_refused():
    with pytest.raises(ValueError, match="not a private ECR repository URL"):
        EcrRegistry.of("ghcr.io/slinkyproject/slurmd", "arn:aws:eks:eu-west-2:111122223333:cluster/c")
