"""Container jobs on a real Slurm 26.05 cluster (tests/support/local_slurm.py): pyxis v0.24.0 and
enroot v4.1.2, built in the test root (tests/slurm/roots/sid.build), configured as the dev stack's
release configures them (model/builders/containers.py: plugstack.conf served by slurmctld,
enroot.conf from its ConfigMap and the node-local emptyDir in each worker pod, the directories made
by the workers' Prolog), with enroot's hooks enabled as the slurmd image enables them
(local_slurm.image_enroot_hooks: enroot's PMI and PyTorch hooks and ours), run `srun
--container-image` steps for a named user on the workers. The workers stand in for EFA nodes: an
EFA device file and /opt/amazon with stand-in libraries, as the slurmd image and the EFA device
plugin give a pod. One cluster for all of them: the suite's time (CONTRIBUTING.md)."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

from model.builders.containers import (
    ENROOT_CONF,
    NODE_LOCAL_MOUNT,
    PATHS,
    PYXIS_RUNTIME_PATH,
    enroot_conf,
    enroot_directories,
)
from model.builders.job_environment import ENV_FILE
from model.checks.users import User
from model.facts.contract import SHARED_MOUNT
from tests.support.local_accounting import register_users
from tests.support.local_registry import LocalRegistry
from tests.support.local_slurm import slurm_root
from tests.support.paths import REPO
from tests.support.slurm_cluster import rendered_with_accounting, running_cluster

pytestmark = pytest.mark.slurm

ALICE = User("alice", 2001, ())
# The login pod imports with the workers' enroot.conf and, test-only, plain HTTP for the registry on
# the test network (enroot v4.1.2 conf/enroot.conf.in: ENROOT_ALLOW_HTTP, "Use HTTP for outgoing
# requests instead of HTTPS"), in the directories the workers' Prolog makes.
LOGIN_ENROOT_CONF = enroot_conf(PATHS) + "ENROOT_ALLOW_HTTP yes\n"
# Where the tests keep images on /shared, as a user would.
IMAGES = f"{SHARED_MOUNT}/images"
# What the test image's /etc/os-release says, which the pods' Debian does not.
IMAGE_ID = "slinky-eks-test-image"
IMAGE_OS_RELEASE = f'ID={IMAGE_ID}\nPRETTY_NAME="slinky-eks container test image"\n'


def _image_tree(root: pathlib.Path, tree: pathlib.Path) -> pathlib.Path:
    """The smallest root filesystem a container step needs: the test root's dash as /bin/sh and
    its cat, the C library they link (`ldd`: libc.so.6 and the loader, nothing else), the mount
    points enroot mounts over (enroot v4.1.2 conf/mounts/10-system.fstab, 20-config.fstab), its
    own /etc/os-release and the passwd and group files enroot's hooks add the user to."""
    lib = "usr/lib/x86_64-linux-gnu"
    for rel in ("usr/bin/dash", "usr/bin/cat", f"{lib}/libc.so.6", f"{lib}/ld-linux-x86-64.so.2"):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, tree / rel)
    (tree / "usr/bin/sh").symlink_to("dash")
    (tree / "usr/lib64").mkdir()
    (tree / "usr/lib64/ld-linux-x86-64.so.2").symlink_to("../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
    for link in ("bin", "lib", "lib64"):
        (tree / link).symlink_to(f"usr/{link}")
    for d in ("proc", "sys", "dev", "tmp", "run", "var/run", "var/lock", "root", "home"):
        (tree / d).mkdir(parents=True)
    (tree / "etc").mkdir()
    (tree / "etc/os-release").write_text(IMAGE_OS_RELEASE)
    (tree / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (tree / "etc/group").write_text("root:x:0:\n")
    for name in ("hosts", "hostname", "resolv.conf"):
        (tree / "etc" / name).touch()
    return tree


# The stand-in EFA node: the EFA device plugin's device in the pod (/dev/infiniband/uverbs*), the
# slurmd image's /opt/amazon (image/README.md: libfabric, fi_info, the aws-ofi-nccl plugin) and its
# /etc/nccl.conf (image/register-libraries.sh). The libraries are the test root's, chosen for what
# they link: libz only the C library the test image has; libssl also libcrypto, which it lacks.
EFA_CHECK = REPO / "jobs/lib/efa-in-container.sh"
PLUGIN = "ofi-nccl/lib64/libnccl-net-ofi.so"


def _efa_node(root: pathlib.Path, here: pathlib.Path) -> dict[str, pathlib.Path]:
    lib = root / "usr/lib/x86_64-linux-gnu"
    amazon = here / "opt/amazon"
    for rel, source in (("efa/lib64/libfabric.so.1", lib / "libz.so.1"), (PLUGIN, lib / "libz.so.1")):
        (amazon / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, amazon / rel)
    (amazon / "efa/bin").mkdir()
    # fi_info as the test image can run it: its sh, the line libfabric prints for a provider.
    (amazon / "efa/bin/fi_info").write_text('#!/bin/sh\n[ "$*" = "-p efa" ] && echo "provider: efa"\n')
    (amazon / "efa/bin/fi_info").chmod(0o755)
    (here / "uverbs0").touch()
    (here / "nccl.conf").write_text("NCCL_NET_PLUGIN=ofi\nNCCL_NET=Libfabric\n")
    return {
        "/opt": here / "opt",
        "/dev/infiniband/uverbs0": here / "uverbs0",
        "/etc/nccl.conf": here / "nccl.conf",
    }


@pytest.fixture(scope="module")
def slurm(tmp_path_factory, dev):
    """The dev stack's release with its accounting on the test's database (a named user's step
    needs an association: AccountingStorageEnforce), alice registered as the registration Job
    registers her; the login pod set up to import images."""
    with running_cluster(
        tmp_path_factory,
        {"slurm": rendered_with_accounting(dev)},
        "the container job tests",
        users=(ALICE,),
        login_files={ENROOT_CONF: LOGIN_ENROOT_CONF},
        login_dirs=enroot_directories(PATHS),
        worker_files=_efa_node(slurm_root("sid"), tmp_path_factory.mktemp("efa-node")),
    ) as cluster:
        register_users(cluster, (ALICE,))
        (cluster.shared_dir / IMAGES.removeprefix(f"{SHARED_MOUNT}/")).mkdir()
        yield cluster


@pytest.fixture(scope="module")
def image_tree(slurm, tmp_path_factory) -> pathlib.Path:
    return _image_tree(slurm.fs, tmp_path_factory.mktemp("image") / "rootfs")


@pytest.fixture(scope="module")
def image(slurm, image_tree) -> str:
    """The tree as a squashfs image on /shared, made in the login pod by the root's mksquashfs
    (enroot's own options for images: enroot.conf.in ENROOT_SQUASH_OPTIONS)."""
    made = slurm.run(
        [
            "mksquashfs",
            str(image_tree),
            f"{IMAGES}/test.sqsh",
            "-comp",
            "lzo",
            "-noD",
            "-all-root",
            "-quiet",
        ]
    )
    assert made.returncode == 0, made.stderr
    return f"{IMAGES}/test.sqsh"


def _srun(slurm, argv: list[str], user: User = ALICE) -> subprocess.CompletedProcess:
    return slurm.run_as(user, ["srun", *argv], timeout=180)


def test_a_named_user_runs_a_step_inside_a_squashfs_image_with_shared_mounted(slurm, image):
    (slurm.shared_dir / "from-shared.txt").write_text("written on /shared\n")
    node = slurm.nodes[0]
    done = _srun(
        slurm,
        [
            "-w",
            node,
            f"--container-image={image}",
            f"--container-mounts={SHARED_MOUNT}",
            "sh",
            "-c",
            f'cat /etc/os-release {SHARED_MOUNT}/from-shared.txt /proc/self/status; echo "ON $SLURMD_NODENAME"',
        ],
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"ID={IMAGE_ID}" in done.stdout
    assert "written on /shared" in done.stdout
    uid = next(line.split()[1] for line in done.stdout.splitlines() if line.startswith("Uid:"))
    assert int(uid) == ALICE.uid
    assert f"ON {node}" in done.stdout


def test_an_image_imported_once_onto_shared_serves_a_two_node_step_without_the_registry(slurm, image_tree):
    registry = LocalRegistry(image_tree, "tiny", "1").start()
    try:
        imported = slurm.run(
            ["enroot", "import", "-o", f"{IMAGES}/tiny.sqsh", f"docker://{registry.reference}"],
            timeout=180,
        )
        assert imported.returncode == 0, imported.stdout + imported.stderr
        assert any("/manifests/" in r for r in registry.requests), registry.requests
        pulled = len(registry.requests)
        done = _srun(
            slurm,
            [
                "-N2",
                "--ntasks-per-node=1",
                f"--container-image={IMAGES}/tiny.sqsh",
                "cat",
                "/etc/os-release",
            ],
        )
        assert registry.requests[pulled:] == [], done.stderr
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.count(f"ID={IMAGE_ID}") == 2
    finally:
        registry.stop()


def test_a_missing_image_fails_the_step_with_pyxis_error_and_the_node_stays_usable(slurm, image):
    node = slurm.nodes[1]
    failed = _srun(slurm, ["-w", node, f"--container-image={IMAGES}/missing.sqsh", "cat", "/etc/os-release"])
    assert failed.returncode != 0
    assert "pyxis:" in failed.stderr
    assert slurm.wait_for_states({node: "idle"}, 60)[node] == "idle"
    again = _srun(slurm, ["-w", node, f"--container-image={image}", "cat", "/etc/os-release"])
    assert again.returncode == 0 and f"ID={IMAGE_ID}" in again.stdout, again.stdout + again.stderr


def test_a_job_with_the_cluster_environment_runs_a_container_step_without_mpi(slurm, image, staged):
    # What every shipped job does (jobs/lib/job-env.sh sources cluster.env), then a step with no
    # --mpi: enroot's 50-slurm-pmi.sh, enabled as in the image, must find no PMIx step to wire.
    shutil.copy2(staged / ENV_FILE, slurm.shared_dir / ENV_FILE)
    done = slurm.run_as(
        ALICE,
        [
            "bash",
            "-c",
            f"source {SHARED_MOUNT}/{ENV_FILE} && srun -w {slurm.nodes[0]} --container-image={image} "
            "cat /etc/os-release",
        ],
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"ID={IMAGE_ID}" in done.stdout


def test_pyxis_keeps_its_runtime_directory_on_the_node_local_volume(slurm):
    # slurmd's pyxis makes its runtime_path when it starts (pyxis v0.24.0 pyxis_slurmd.c).
    below = PYXIS_RUNTIME_PATH.removeprefix(f"{NODE_LOCAL_MOUNT}/")
    assert [n for n in slurm.nodes if not (slurm.pod_dir(n) / "node-local" / below).is_dir()] == []


def _efa_check(slurm, image: str) -> subprocess.CompletedProcess:
    shutil.copy2(EFA_CHECK, slurm.shared_dir / EFA_CHECK.name)
    return _srun(
        slurm,
        [
            "-w",
            slurm.nodes[0],
            f"--container-image={image}",
            f"--container-mounts={SHARED_MOUNT}",
            "sh",
            "-c",
            f'echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH NCCL_NET_PLUGIN=$NCCL_NET_PLUGIN"; '
            f"sh {SHARED_MOUNT}/{EFA_CHECK.name}",
        ],
    )


def test_on_an_efa_node_the_container_loads_the_nodes_efa_libraries(slurm, image):
    done = _efa_check(slurm, image)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "LD_LIBRARY_PATH=/opt/amazon/efa/lib64:/opt/amazon/ofi-nccl/lib64 NCCL_NET_PLUGIN=ofi" in done.stdout
    )
    assert f"NCCL network plugin loads: /opt/amazon/{PLUGIN}" in done.stdout


def test_the_efa_check_names_what_the_image_cannot_load(slurm, image):
    # The node's plugin replaced, in place, by one linking libcrypto.so.3, which the image lacks.
    plugin = slurm.worker_files["/opt"] / "amazon" / PLUGIN
    kept = plugin.read_bytes()
    shutil.copy2(slurm.fs / "usr/lib/x86_64-linux-gnu/libssl.so.3", plugin)
    try:
        done = _efa_check(slurm, image)
    finally:
        plugin.write_bytes(kept)
    assert done.returncode != 0, done.stdout + done.stderr
    (line,) = [line for line in done.stderr.splitlines() if "efa-in-container FAILED" in line]
    assert f"/opt/amazon/{PLUGIN} does not load in this image: libcrypto.so.3 => not found" in line
