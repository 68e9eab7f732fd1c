"""plugstack.conf and enroot.conf as model/builders/containers.py renders them."""

from __future__ import annotations

import os
import subprocess
import tarfile

import pytest

from devkit.reference_data import ref_root
from model.builders import containers
from model.builders.containers import EcrRegistry, EnrootPaths, registry_pull_policy
from tests.support.paths import REPO

REGISTRY = EcrRegistry("111122223333", "eu-west-2", "aws", "amazonaws.com")

PATHS = EnrootPaths(local="/mnt/local", cache="/shared/enroot/cache", config="/etc/enroot/credentials")


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


def test_each_user_gets_own_runtime_data_and_cache_directories():
    values = _as_enroot_reads(containers.enroot_conf(PATHS))
    user = f"user-{os.getuid()}"
    assert values["ENROOT_RUNTIME_PATH"] == f"/mnt/local/enroot/runtime/{user}"
    assert values["ENROOT_DATA_PATH"] == f"/mnt/local/enroot/data/{user}"
    assert values["ENROOT_CACHE_PATH"] == f"/shared/enroot/cache/{user}"


def test_temp_is_a_shared_node_local_directory_enroot_need_not_create():
    values = _as_enroot_reads(containers.enroot_conf(PATHS))
    assert values["ENROOT_TEMP_PATH"] == "/mnt/local/enroot/tmp"
    assert values["ENROOT_TEMP_PATH"] in containers.enroot_directories(PATHS)


def test_credentials_are_read_from_a_given_directory_not_the_home():
    values = _as_enroot_reads(containers.enroot_conf(PATHS))
    assert values["ENROOT_CONFIG_PATH"] == "/etc/enroot/credentials"


def test_without_a_credentials_directory_each_user_keeps_enroots_default():
    assert "ENROOT_CONFIG_PATH" not in containers.enroot_conf(EnrootPaths(local="/mnt/local", cache="/c"))


def test_every_key_is_one_enroot_reads_from_its_configuration_file():
    # enroot ignores any key not matching ENROOT_[A-Z_]+ (enroot.in config::load).
    keys = [line.split()[0] for line in containers.enroot_conf(PATHS).splitlines()]
    assert keys and all(k.startswith("ENROOT_") and k[7:].replace("_", "").isupper() for k in keys)


def test_the_parent_of_every_per_user_directory_is_made_beforehand():
    values = _as_enroot_reads(containers.enroot_conf(PATHS))
    parents = {
        os.path.dirname(values[k]) for k in ("ENROOT_RUNTIME_PATH", "ENROOT_DATA_PATH", "ENROOT_CACHE_PATH")
    }
    assert parents <= set(containers.enroot_directories(PATHS))


def _run(script: str, job: str, tmp) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "SLURM_JOB_ID": job,
        "SLURM_JOB_UID": str(os.getuid()),
        "SLURM_JOB_GID": str(os.getgid()),
    }
    path = tmp / "script.sh"
    path.write_text(script)
    return subprocess.run(["sh", str(path)], env=env, capture_output=True, text=True)


def test_the_prolog_makes_enroots_directories_sticky_and_the_jobs_scratch_its_users_own(tmp_path):
    paths = EnrootPaths(local=str(tmp_path / "local"), cache=str(tmp_path / "shared"), config="/x")
    scratch = tmp_path / "local/jobs"
    assert _run(containers.prolog_script(paths, str(scratch)), "42", tmp_path).returncode == 0
    for d in containers.enroot_directories(paths):
        assert os.stat(d).st_mode & 0o7777 == 0o1777
    assert os.stat(scratch / "42").st_mode & 0o777 == 0o700


def test_the_epilog_removes_the_jobs_scratch_and_no_other(tmp_path):
    scratch = tmp_path / "jobs"
    for job in ("42", "43"):
        (scratch / job / "sub").mkdir(parents=True)
    assert _run(containers.epilog_script(str(scratch)), "42", tmp_path).returncode == 0
    assert sorted(p.name for p in scratch.iterdir()) == ["43"]


def test_the_epilog_removes_nothing_without_a_job_id(tmp_path):
    scratch = tmp_path / "jobs"
    (scratch / "43").mkdir(parents=True)
    assert _run(containers.epilog_script(str(scratch)), "", tmp_path).returncode == 0
    assert (scratch / "43").exists()


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
        f"$({containers.ECR_PASSWORD_HELPER} eu-west-2 https://api.ecr.eu-west-2.amazonaws.com)\n"
    )


def test_the_pull_policy_grants_the_token_on_star_and_only_pulls_on_the_regions_repositories():
    statements = containers.registry_pull_policy(REGISTRY)["Statement"]
    assert statements == [
        {"Effect": "Allow", "Action": "ecr:GetAuthorizationToken", "Resource": "*"},
        {
            "Effect": "Allow",
            "Action": ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
            "Resource": "arn:aws:ecr:eu-west-2:111122223333:repository/*",
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
    assert registry_pull_policy(registry)["Statement"][1]["Resource"] == (
        "arn:aws-cn:ecr:cn-north-1:111122223333:repository/*"
    )


def test_a_repository_outside_ecr_is_refused():
    with pytest.raises(ValueError, match="not a private ECR repository URL"):
        EcrRegistry.of("ghcr.io/slinkyproject/slurmd", "arn:aws:eks:eu-west-2:111122223333:cluster/c")
