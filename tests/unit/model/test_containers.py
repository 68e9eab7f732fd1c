"""plugstack.conf and enroot.conf as model/builders/containers.py renders them."""

from __future__ import annotations

import os
import subprocess

from model.builders import containers
from model.builders.containers import EnrootPaths

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
    assert "ENROOT_CONFIG_PATH" not in containers.enroot_conf(containers.PATHS)


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


def test_the_slurmd_image_build_checks_the_plugin_where_plugstack_names_it():
    from pathlib import Path

    dockerfile = (Path(__file__).resolve().parents[3] / "image/Dockerfile").read_text()
    assert f"test -s {containers.PYXIS_PLUGIN}" in dockerfile


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
