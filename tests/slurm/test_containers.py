"""Container jobs on a real Slurm 26.05 cluster (tests/support/local_slurm.py): pyxis v0.24.0 and
enroot v4.1.2, built in the test root (tests/slurm/roots/sid.build), configured as the dev stack's
release configures them (model/builders/containers.py: plugstack.conf served by slurmctld,
enroot.conf and the cluster's .credentials from their ConfigMap and the node-local emptyDir in each
worker pod, made 0777 as the kubelet makes it and then closed by the NodeSet's init container, each
job's directories made by the workers' Prolog), with enroot's hooks enabled as the slurmd image
enables them (local_slurm.image_enroot_hooks: enroot's PMI and PyTorch hooks and ours), run `srun
--container-image` steps for named users on the workers, and hold one named user's directories
against another's. A registry asking ECR's login is pulled from through pyxis with the cluster's
.credentials line and the real image/ecr-password.sh, against stand-ins for the Pod Identity agent
and ECR's API (tests/support/pod_identity.py). The workers stand in for EFA nodes: an EFA device file and /opt/amazon with
stand-in libraries, as the slurmd image and the EFA device plugin give a pod. One cluster for all
of them: the suite's time (CONTRIBUTING.md)."""

from __future__ import annotations

import copy
import pathlib
import shutil
import subprocess

import pytest

from model.builders.containers import (
    CLUSTER_CONFIG_DIR,
    CREDENTIALS_KEY,
    ECR_PASSWORD_HELPER,
    ENROOT_CONF,
    ENROOT_CONFIGMAP,
    NODE_LOCAL_MOUNT,
    PATHS,
    POD_IDENTITY_TOKEN,
    PYXIS_RUNTIME_PATH,
    credentials_line,
    enroot_conf,
)
from model.builders.job_environment import ENV_FILE
from model.checks.users import User
from model.facts import versions
from model.facts.contract import SHARED_MOUNT
from tests.support.local_accounting import register_users
from tests.support.local_registry import LocalRegistry
from tests.support.local_slurm import slurm_root
from tests.support.paths import REPO
from tests.support.pod_identity import PASSWORD, POD_TOKEN, REGION, TARGET, EcrCall, PodIdentityStandIns
from tests.support.slurm_cluster import rendered_with_accounting, running_cluster

pytestmark = pytest.mark.slurm

ALICE = User("alice", 2001, ())
BOB = User("bob", 2002, ())
# A user whose directories no earlier test has made on any node (the squat test's victim).
CAROL = User("carol", 2003, ())
# Plain HTTP for the registries on the test network (enroot v4.1.2 conf/enroot.conf.in:
# ENROOT_ALLOW_HTTP, "Use HTTP for outgoing requests instead of HTTPS"), in the test cluster's
# enroot.conf: pyxis drops it from a job's environment (pyxis v0.24.0 pyxis_slurmstepd.c
# enroot_deny_env).
ALLOW_HTTP = "ENROOT_ALLOW_HTTP yes\n"
# The login pod imports as root with the workers' enroot.conf, plain HTTP, and root's layer cache
# in the pod's own /tmp rather than /root of the root filesystem every test pod shares.
LOGIN_ENROOT_CONF = enroot_conf(PATHS) + ALLOW_HTTP + "ENROOT_CACHE_PATH /tmp/enroot-cache\n"
# Where the tests keep images on /shared, as a user would.
IMAGES = f"{SHARED_MOUNT}/images"
# What the test image's /etc/os-release says, which the pods' Debian does not.
IMAGE_ID = "slinky-eks-test-image"
IMAGE_OS_RELEASE = f'ID={IMAGE_ID}\nPRETTY_NAME="slinky-eks container test image"\n'
# The registry's host as enroot matches it to a `.credentials` line: without its port (NVIDIA/enroot
# v4.1.2 src/docker.sh docker::_authenticate, `${registry%:*}`; curl's netrc lookup is by host too).
REGISTRY_HOST = "127.0.0.1"
# Where the worker pods have the Pod Identity token: the webhook's path with /var/run written as
# /run, which /var/run links to in the test root (an absolute link: mounting through it would reach
# this machine's own /run).
TOKEN_IN_POD = POD_IDENTITY_TOKEN.replace("/var/run/", "/run/", 1)
# What the Pod Identity webhook adds to the slurmd container's environment
# (aws/amazon-eks-pod-identity-webhook pkg/handler/handler.go): given to every slurmd here, so a
# helper that read them from its environment would find them in slurmd's, and only there.
POD_IDENTITY_ENV = ("AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")


def _with_test_registry(rendered: list[dict], pod_identity: PodIdentityStandIns) -> list[dict]:
    """The release with its .credentials line rendered by the product's function for the test's
    registry, ECR's stand-in as the endpoint and the agent's stand-in, and ALLOW_HTTP in the
    workers' enroot.conf: the same ConfigMap, mounted where the release mounts it."""
    documents = copy.deepcopy(rendered)
    (configmap,) = [
        d for d in documents if d["kind"] == "ConfigMap" and d["metadata"]["name"] == ENROOT_CONFIGMAP
    ]
    configmap["data"][CREDENTIALS_KEY] = credentials_line(
        REGISTRY_HOST, REGION, pod_identity.url, pod_identity.agent_url, TOKEN_IN_POD
    )
    configmap["data"]["enroot.conf"] += ALLOW_HTTP
    return documents


def _pod_identity_files(here: pathlib.Path) -> dict[str, pathlib.Path]:
    """The real helper where the image installs it (image/Dockerfile: mode 0755), and the pod's
    token, readable by every user of the pod as the projected token's file is (mode 0644, a
    projected volume's default: Kubernetes API reference, Volume, "projected.defaultMode",
    https://kubernetes.io/docs/reference/kubernetes-api/config-and-storage-resources/volume/)."""
    token = here / "eks-pod-identity-token"
    token.write_text(POD_TOKEN)
    token.chmod(0o644)
    return {ECR_PASSWORD_HELPER: REPO / "image/ecr-password.sh", TOKEN_IN_POD: token}


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
def pod_identity():
    """EKS Pod Identity's agent and ECR's API, stood in on the test network."""
    served = PodIdentityStandIns().start()
    yield served
    served.stop()


@pytest.fixture(scope="module")
def slurm(tmp_path_factory, dev, pod_identity):
    """The dev stack's release with its accounting on the test's database (a named user's step
    needs an association: AccountingStorageEnforce), alice registered as the registration Job
    registers her, and bob and carol; the login pod set up to import images (enroot's temp directory, which
    enroot does not make); the workers with the ECR login's helper and token, and slurmd with the
    Pod Identity webhook's variables."""
    here = tmp_path_factory.mktemp("worker-files")
    with running_cluster(
        tmp_path_factory,
        {"slurm": _with_test_registry(rendered_with_accounting(dev), pod_identity)},
        "the container job tests",
        users=(ALICE, BOB, CAROL),
        login_files={ENROOT_CONF: LOGIN_ENROOT_CONF},
        login_dirs=(PATHS.temp,),
        worker_files={**_efa_node(slurm_root("sid"), here), **_pod_identity_files(here)},
        worker_env=dict(zip(POD_IDENTITY_ENV, (pod_identity.agent_url, TOKEN_IN_POD), strict=True)),
    ) as cluster:
        register_users(cluster, (ALICE, BOB, CAROL))
        images = cluster.shared_dir / IMAGES.removeprefix(f"{SHARED_MOUNT}/")
        images.mkdir()
        images.chmod(0o1777)  # alice's imports go there too
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


def test_the_root_built_by_the_images_recipe_passes_the_images_container_assertions():
    # image/container-runtime.sh built this root's pyxis and enroot as it builds the image's: the
    # image build's own assertions accept them (pyxis at its pin, built for this root's Slurm,
    # enroot at its pin, its helpers with the enroot+caps capabilities, the GPU hook enabled).
    # The root has no GPU stack, so no nvidia-container-cli: that check alone fails.
    result = subprocess.run(
        [
            "bash",
            str(REPO / "image/assert-containers.sh"),
            "--root",
            str(slurm_root("sid")),
            "--slurm-version",
            versions.SLURM_RELEASE,
            "--pyxis-version",
            versions.PYXIS_VERSION,
            "--enroot-version",
            versions.ENROOT_VERSION,
            "--nvidia-container-cli-version",
            versions.LIBNVIDIA_CONTAINER_VERSION.rsplit("-", 1)[0],
        ],
        capture_output=True,
        text=True,
    )
    failed = [line for line in result.stderr.splitlines() if line.startswith("ASSERT FAILED")]
    assert failed == [
        "ASSERT FAILED: nvidia-container-cli is missing (libnvidia-container-tools), which enroot's GPU hook calls"
    ], result.stdout + result.stderr
    assert "ok: /usr/bin/enroot-aufs2ovlfs cap_sys_admin,cap_mknod=ep" in result.stdout


@pytest.fixture(scope="module")
def private_registry(image_tree):
    """A registry asking ECR's login, with the password ECR's stand-in issues."""
    served = LocalRegistry(image_tree, "private", "1", login=("AWS", PASSWORD)).start()
    yield served
    served.stop()


def test_a_named_users_step_pulls_through_pyxis_with_the_clusters_ecr_login(
    slurm, pod_identity, private_registry
):
    # pyxis imports the image as alice, with her job's environment (no Pod Identity variable in
    # it: pyxis v0.24.0 pyxis_slurmstepd.c slurm_clear_env); enroot takes the cluster's line for
    # the registry, whose helper signs GetAuthorizationToken with the pod's credentials.
    pod_identity.ecr_calls.clear()
    done = _srun(
        slurm,
        ["-w", slurm.nodes[0], f"--container-image={private_registry.reference}", "cat", "/etc/os-release"],
    )
    assert done.returncode == 0 and f"ID={IMAGE_ID}" in done.stdout, done.stdout + done.stderr
    assert f"GET /v2/{private_registry.name}/manifests/{private_registry.tag}" in private_registry.logged_in
    assert pod_identity.ecr_calls == [EcrCall(TARGET, None)]


# enroot's own account of the login it used (NVIDIA/enroot v4.1.2 src/docker.sh docker::_authenticate):
# the user taken from the cluster's file for an image that names none, and the file.
LOGGED_IN = (
    "[INFO] Authenticating with user: AWS",
    f"[INFO] Using credentials from file: {CLUSTER_CONFIG_DIR}/.credentials",
)


def test_a_token_the_agent_refuses_fails_the_step_with_pyxis_error(slurm, pod_identity, private_registry):
    # The helper is refused by the agent (another pod's token) and prints no password, so enroot
    # meets the registry without the login and stops: pyxis prints enroot's log, whose last line
    # names the cluster's file. The helper's own line is not in it, nor in slurmd's log: enroot
    # runs the file's commands with their stderr to /dev/null (NVIDIA/enroot v4.1.2 src/docker.sh
    # docker::_authenticate, `common::evalnetrc "${creds_file}" 2> /dev/null`); the agent's
    # stand-in shows the helper ran, and where it stopped.
    token = slurm.worker_files[TOKEN_IN_POD]
    node = slurm.nodes[1]
    pod_identity.agent_tokens.clear()
    pod_identity.ecr_calls.clear()
    pulled = len(private_registry.logged_in)
    token.write_text("another-pods-token")  # in place: the pods see the mounted file change
    try:
        failed = _srun(
            slurm, ["-w", node, f"--container-image={private_registry.reference}", "cat", "/etc/os-release"]
        )
    finally:
        token.write_text(POD_TOKEN)
    assert failed.returncode != 0
    assert f"pyxis: failed to import docker image: {private_registry.reference}" in failed.stderr
    assert all(f"pyxis:     {line}" in failed.stderr for line in LOGGED_IN), failed.stderr
    assert pod_identity.agent_tokens == ["another-pods-token"]
    assert pod_identity.ecr_calls == [] and private_registry.logged_in[pulled:] == []
    assert slurm.wait_for_states({node: "idle"}, 60)[node] == "idle"


# What docs/operations.md ("Container jobs") gives to read the helper's message enroot throws away:
# the `.credentials` line's password field, command-substituted as enroot does (common::evalnetrc).
READ_THE_HELPERS_LINE = (
    """srun -N1 sh -c 'eval "echo $(cut -d" " -f6- /etc/enroot/cluster/.credentials)"' >/dev/null"""
)


def test_the_command_the_docs_give_prints_the_helpers_line_enroot_throws_away(slurm):
    assert READ_THE_HELPERS_LINE in (REPO / "docs/operations.md").read_text()
    token = slurm.worker_files[TOKEN_IN_POD]
    token.write_text("another-pods-token")
    try:
        shown = slurm.run_as(ALICE, ["sh", "-c", READ_THE_HELPERS_LINE], timeout=60)
    finally:
        token.write_text(POD_TOKEN)
    (line,) = [line for line in shown.stderr.splitlines() if line.startswith("ecr-password:")]
    assert line.startswith("ecr-password: the credentials endpoint refused:"), shown.stderr
    assert shown.stdout == ""


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


@pytest.fixture(scope="module")
def registry(image_tree):
    served = LocalRegistry(image_tree, "tiny", "1").start()
    yield served
    served.stop()


def _enroot_directories_of(user: User) -> list[str]:
    """Where enroot keeps `user`'s runtime, data and layer cache on the workers: enroot.conf's values
    for that user, and enroot's own default for a path it does not set (NVIDIA/enroot v4.1.2
    enroot.in: ENROOT_CACHE_PATH ${XDG_CACHE_HOME:-$HOME/.cache}/enroot)."""
    conf = dict(line.split(None, 1) for line in enroot_conf(PATHS).splitlines())
    defaults = {"ENROOT_CACHE_PATH": f"{user.home}/.cache/enroot"}
    return [
        conf.get(key, defaults.get(key, "")).replace("$(id -u)", str(user.uid))
        for key in ("ENROOT_RUNTIME_PATH", "ENROOT_DATA_PATH", "ENROOT_CACHE_PATH")
    ]


def test_a_user_cannot_turn_the_root_prolog_on_a_directory_of_roots(slurm):
    # The attack on a node-local volume left as the kubelet makes it (0777, not sticky): the user
    # renames the scratch parent, makes their own with their next job's id a link to a root
    # directory (here the pod's slurmd spool: the pods share one root filesystem, which the test
    # must not change), and releases the job, whose Prolog would give that directory to them.
    node = slurm.nodes[0]
    spool = slurm.pod_dir(node) / "spool"
    held = slurm.run_as(ALICE, ["sbatch", "-H", "--parsable", "-w", node, "--wrap", "true"])
    assert held.returncode == 0, held.stderr
    job = held.stdout.strip().split(";")[0]
    _srun(
        slurm,
        [
            "-w",
            node,
            "sh",
            "-c",
            f"cd {NODE_LOCAL_MOUNT} && mv jobs jobs.old && mkdir jobs && ln -s /var/spool/slurmd jobs/{job}",
        ],
    )
    assert slurm.run_as(ALICE, ["scontrol", "release", job]).returncode == 0
    slurm.wait_for_job(job, 120)
    assert (spool.stat().st_uid, spool.stat().st_mode & 0o777) == (0, 0o755)


def test_another_user_cannot_make_a_users_enroot_directories_before_them(slurm, image):
    # enroot takes a directory it finds as its own (enroot.in: `mkdir -p` under umask 077, no owner
    # check): one another user made first would be theirs to plant layers or root filesystems in.
    node = slurm.nodes[1]
    theirs = _enroot_directories_of(CAROL)
    squat = _srun(
        slurm,
        [
            "-w",
            node,
            "sh",
            "-c",
            " ; ".join(f"mkdir -m 0777 {d} 2>/dev/null && echo MADE {d}" for d in theirs),
        ],
        BOB,
    )
    assert "MADE" not in squat.stdout, squat.stdout
    done = _srun(slurm, ["-w", node, f"--container-image={image}", "cat", "/etc/os-release"], CAROL)
    assert done.returncode == 0 and f"ID={IMAGE_ID}" in done.stdout, done.stdout + done.stderr


def test_a_named_users_docker_import_on_a_worker_keeps_its_layers_in_their_own_home(slurm, registry):
    # The import docs/operations.md tells users to run: enroot on a worker, as the user, through the
    # file-capability helpers (enroot+caps: tests/slurm/roots/sid.build `make setcap`).
    sqsh = f"{ALICE.home}/tiny.sqsh"
    imported = slurm.run_as(
        ALICE,
        ["srun", "-w", slurm.nodes[0], "enroot", "import", "-o", sqsh, f"docker://{registry.reference}"],
        timeout=180,
    )
    assert imported.returncode == 0, imported.stdout + imported.stderr
    cache = slurm.home(ALICE) / ".cache/enroot"
    assert cache.is_dir() and any(cache.iterdir()), imported.stderr
    assert (cache.stat().st_uid, cache.stat().st_mode & 0o777) == (ALICE.uid, 0o700)
    done = _srun(slurm, ["-w", slurm.nodes[1], f"--container-image={sqsh}", "cat", "/etc/os-release"])
    assert done.returncode == 0 and f"ID={IMAGE_ID}" in done.stdout, done.stdout + done.stderr


def _mapped_ids(uid_map: str) -> int:
    """How many user ids the step's user namespace maps (user_namespaces(7), /proc/<pid>/uid_map):
    one in an unprivileged container's own namespace, every id (4294967295) in the host's."""
    return sum(int(line.split()[2]) for line in uid_map.splitlines())


def test_roots_container_is_unprivileged_unless_root_asks_to_keep_its_privileges(slurm, image):
    # Unprivileged, root's step runs in a user namespace of its own that maps root alone, so its
    # capabilities are that namespace's, not the node's (enroot v4.1.2 src/runtime.sh: enroot-nsenter
    # --user; pyxis v0.24.0 pyxis_slurmstepd.c joins it and adds a seccomp filter). pyxis passes
    # ENROOT_ALLOW_SUPERUSER from the job's environment (it is not on its deny list) and, for uid 0,
    # runs the container privileged, in the host's namespace (pyxis_slurmstepd.c; enroot
    # doc/cmd/start.md). No new power for root, who has the node already (docs/security.md).
    argv = ["srun", "-w", slurm.nodes[0], f"--container-image={image}", "cat", "/proc/self/uid_map"]
    plain = slurm.run(argv, timeout=180)
    kept = slurm.run(argv, env={"ENROOT_ALLOW_SUPERUSER": "y"}, timeout=180)
    assert plain.returncode == 0 and kept.returncode == 0, plain.stderr + kept.stderr
    assert _mapped_ids(plain.stdout) == 1
    assert _mapped_ids(kept.stdout) == 4294967295


def test_a_named_container_is_gone_from_the_node_after_its_users_last_job_there(slurm, image):
    # pyxis keeps a named container across jobs (container_scope=global, its default: NVIDIA/pyxis
    # v0.24.0 config.c) in the user's enroot data directory; the Epilog removes that directory when
    # the user has no other job on the node, so nothing of theirs outlives it on the local disk.
    node = slurm.nodes[1]
    done = _srun(
        slurm, ["-w", node, "--container-name=kept", f"--container-image={image}", "cat", "/etc/os-release"]
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert slurm.wait_for_states({node: "idle"}, 60)[node] == "idle"  # the Epilog has run
    local = slurm.pod_dir(node) / "node-local"
    left = [
        p for p in (local / "enroot/data", local / "enroot/runtime") if (p / f"user-{ALICE.uid}").exists()
    ]
    assert left == []
