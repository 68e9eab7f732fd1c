"""image/enroot-hooks/60-aws-efa.sh, run as enroot runs a pre-start hook (NVIDIA/enroot v4.1.2
src/runtime.sh, runtime::_do_hooks: bash, ENROOT_ENVIRON and ENROOT_MOUNTS naming the container's
environment and mount files), in a mount namespace of its own where /dev and /opt are stand-ins:
a node with or without EFA devices, with or without the slurmd image's /opt/amazon. The real
cluster's container steps run it as the image enables it (tests/slurm/test_containers.py)."""

from __future__ import annotations

import os
import shlex
import subprocess

import pytest

from tests.support.paths import REPO

HOOK = REPO / "image/enroot-hooks/60-aws-efa.sh"
# The image's environment as enroot writes it before the hooks (its /etc/environment first).
IMAGE_ENVIRON = "PATH=/usr/local/bin:/usr/bin\nLD_LIBRARY_PATH=/usr/local/cuda/lib64\n"
EFA_MOUNTS = [
    "/opt/amazon/efa /opt/amazon/efa none x-create=dir,bind,ro,nosuid,nodev,private",
    "/opt/amazon/ofi-nccl /opt/amazon/ofi-nccl none x-create=dir,bind,ro,nosuid,nodev,private",
]


def _run_hook(
    tmp_path, devices: bool, libraries: bool, env: dict[str, str] | None = None, nccl_conf: str = ""
):
    if os.geteuid() != 0:
        pytest.fail("the hook's test mounts stand-ins for /dev and /opt in a mount namespace: it needs root")
    environ, mounts = tmp_path / "environment", tmp_path / "fstab"
    rootfs = tmp_path / "rootfs"
    rootfs.mkdir(exist_ok=True)
    environ.write_text(IMAGE_ENVIRON)
    mounts.write_text("")
    setup = ["mount -t tmpfs none /opt", "mount -t tmpfs none /dev", "mknod -m 666 /dev/null c 1 3"]
    if devices:
        setup += ["mkdir /dev/infiniband", "touch /dev/infiniband/uverbs0"]
    if libraries:
        setup += ["mkdir -p /opt/amazon/efa/lib64 /opt/amazon/ofi-nccl/lib64"]
    if nccl_conf:
        # The node's /etc/nccl.conf (image/register-libraries.sh writes it): an /etc of the test's
        # own with the loader's cache, so the hook's tools still start.
        etc = tmp_path / "etc"
        etc.mkdir()
        (etc / "nccl.conf").write_text(nccl_conf)
        setup += [f"cp /etc/ld.so.cache {etc}/", f"mount --bind {etc} /etc"]
    script = " && ".join([*setup, f"exec bash {shlex.quote(str(HOOK))}"])
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script],
        env={
            "PATH": os.environ["PATH"],
            "ENROOT_ENVIRON": str(environ),
            "ENROOT_MOUNTS": str(mounts),
            "ENROOT_ROOTFS": str(rootfs),
            **(env or {}),
        },
        capture_output=True,
        text=True,
    )
    return done, environ.read_text(), mounts.read_text()


def test_on_a_node_without_efa_devices_the_container_is_left_as_it_is(tmp_path):
    done, environ, mounts = _run_hook(tmp_path, devices=False, libraries=True)
    assert done.returncode == 0, done.stderr
    assert (environ, mounts) == (IMAGE_ENVIRON, "")


def test_on_an_efa_node_the_libraries_are_mounted_read_only_before_the_images_own_path(tmp_path):
    done, environ, mounts = _run_hook(tmp_path, devices=True, libraries=True)
    assert done.returncode == 0, done.stderr
    assert mounts.splitlines() == EFA_MOUNTS
    # The last LD_LIBRARY_PATH line wins (enroot bin/common.h load_environment).
    last = [line for line in environ.splitlines() if line.startswith("LD_LIBRARY_PATH=")][-1]
    assert last == "LD_LIBRARY_PATH=/opt/amazon/efa/lib64:/opt/amazon/ofi-nccl/lib64:/usr/local/cuda/lib64"


NODE_NCCL_CONF = "NCCL_NET_PLUGIN=ofi\nNCCL_NET=Libfabric\n"


def test_the_container_gets_the_nodes_plugin_name(tmp_path):
    done, environ, _ = _run_hook(tmp_path, devices=True, libraries=True, nccl_conf=NODE_NCCL_CONF)
    assert done.returncode == 0, done.stderr
    assert environ.splitlines()[-1] == "NCCL_NET_PLUGIN=ofi"


def test_a_plugin_the_job_names_is_not_replaced_by_the_nodes(tmp_path):
    done, environ, _ = _run_hook(
        tmp_path, devices=True, libraries=True, env={"NCCL_NET_PLUGIN": "mine"}, nccl_conf=NODE_NCCL_CONF
    )
    assert done.returncode == 0, done.stderr
    assert "NCCL_NET_PLUGIN=" not in environ


def test_an_efa_node_without_the_libraries_refuses_the_container_with_one_line(tmp_path):
    done, _, mounts = _run_hook(tmp_path, devices=True, libraries=False)
    assert done.returncode == 1 and mounts == ""
    assert done.stderr.splitlines() == [
        "60-aws-efa.sh: this node has EFA devices but no /opt/amazon/efa and /opt/amazon/ofi-nccl libraries"
        " to give the container"
    ]


def test_an_image_with_its_own_libfabric_keeps_its_own_efa_stack(tmp_path):
    own = tmp_path / "rootfs/opt/amazon/efa/lib64"
    own.mkdir(parents=True)
    (own / "libfabric.so.1").touch()
    done, environ, mounts = _run_hook(tmp_path, devices=True, libraries=True)
    assert done.returncode == 0, done.stderr
    assert (environ, mounts) == (IMAGE_ENVIRON, "")
