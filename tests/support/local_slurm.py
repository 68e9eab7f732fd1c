"""A real Slurm cluster on this machine shaped the way the Slinky operator v1.2.1 runs it, for the
job tests: slurmctld with the slurm.conf the operator generates from the rendered release
(slinky_conf.py), workers started as the NodeSet's pods start them (`slurmd -Z --conf-server
<controller service> --conf '<Features/Gres of the NodeSet>'`, configless), a login side that is
configless too (sackd, as the LoginSet's pods run it), auth/slurm with one shared key.

The daemons run in a Debian root filesystem (tests/slurm/build-roots.sh; the host's Debian 12 glibc
is too old for Slurm 26.05), each in its own UTS and mount namespace whose root the pod's view of
that root becomes by pivot_root, as a container runtime makes it (not chroot: enroot's containers
need user namespaces, which the kernel refuses to a chrooted process): its pod's hostname, a private
/etc/hosts, /etc/slurm holding only the key (configs and the Prolog come from slurmctld), its own spool, log and
/run, and on workers NVIDIA's procfs/sysfs entries and /dev/nvidiaN devices for the instance
type's GPUs, so Slurm's gpu/nvidia plugin autodetects them (nvidia_gpus()).

The jobs' Python is the host's: the repository (with its .venv) and the interpreter's prefix
(pyenv's CPython) are bind-mounted at the same paths; the interpreter, built on the host's glibc
2.36, runs on the root's newer glibc (glibc keeps old symbol versions), and the root carries the
few shared libraries it links (tests/slurm/roots/sid.packages). Each pod has its own /tmp with
pytest's temporary tree shared into it, so job output under tmp_path is where the tests read it.

With node_health (the ConfigMap's files, model/builders/node_health.py), each worker pod also gets what the
NodeSet's pod has for the node health check: the ConfigMap's program and its pool's expected.json
at HEALTH_DIR, python3 at /usr/local/bin (the image's wrapper path, here the host's interpreter), a
fake nvidia-smi answering `-q -d ECC,ROW_REMAPPER` in the real driver 580 layout, a fake kernel
log of the node (the captured H200 boot line, then what add_kernel_log appends: the host's real log
is not the test's to judge, and could hold anything) as /dev/kmsg records in a file bind-mounted at
the program's KMSG (a plain file reads to its end where the real device ends at EAGAIN) and as the
fallback's dmesg prints it, the node's directory for the Xid cursor (STATE_DIR, a directory of the
node kept across its pods, as the NodeSet's hostPath is), the pool's EFA devices under
/sys/class/infiniband. The login and worker pods mount one directory of the cluster's at /shared
(shared_dir), as they mount the EFS claim.

One deviation from the pods, forced by one network namespace for all daemons: each slurmd gets its
own `Port=` appended to its --conf (sackd listens for reconfigure on SlurmdPort, as in a login pod).
Only the processes started here are stopped, by PID.
"""

from __future__ import annotations

import fcntl
import json
import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Mapping, Sequence

from cluster_programs import node_health as health_program
from cluster_programs import rollout
from model.builders import containers, node_health
from model.builders.identities import ENTRIES_DIR, FILES, MERGED_DIR, entry_files, merge_script
from model.checks.users import HOMES, User
from model.facts.contract import HEALTH_DIR, SHARED_MOUNT
from tests.support.local_accounting import DATA as DATABASE_FILES
from tests.support.local_accounting import LocalAccounting
from tests.support.paths import REPO
from tests.support.slinky_conf import (
    ETC_DIR,
    LOG_DIR,
    PRESTOP_REASON,
    SLURMCTLD_PORT,
    SLURMCTLD_SPOOL,
    SLURMD_PORT,
    SLURMD_SPOOL,
    Release,
    nodeset_name,
    slurmd_conf,
)

ROOTS = REPO / "build" / "slurm-roots"
# What the root's Debian packages need so the host interpreter imports ssl, ctypes, sqlite3, ...
# .venv and .cuda are links into a cache outside the checkout (devkit/cached_install.sh): their
# targets are mounted at their own paths too, so the links resolve inside a pod.
_HOST_PATHS = tuple(
    dict.fromkeys(
        [
            str(REPO),
            sys.base_prefix,
            *(
                os.path.realpath(REPO / link)
                for link in (".venv", ".cuda")
                if (REPO / link).is_symlink() and (REPO / link).exists()
            ),
        ]
    )
)


# The sandbox has cgroup v1 only (no cgroup2 at /sys/fs/cgroup): the operator's cgroup.conf
# (cgroup/v2) makes slurmd exit. v1 with the device constraint the GPU nodes need; the operator's
# slurm.conf names no TaskPlugin, and without task/cgroup ConstrainDevices is never applied.
SANDBOX_CGROUP_CONF = "CgroupPlugin=cgroup/v1\nConstrainDevices=yes\n"
SANDBOX_EXTRA_CONF = "TaskPlugin=task/cgroup"


# Where a pod's root keeps the host's root during pivot_root (_spawn), detached right after.
PUT_OLD = "/.host-root"


class RootMissing(RuntimeError):
    pass


# One cluster at a time on this machine, whichever checkout or test session starts it: every
# cluster's daemons listen on the same fixed ports in the host's one network namespace
# (slinky_conf.py SLURMCTLD_PORT, SLURMD_PORT + 10 n), and task/cgroup puts their jobs under one
# cgroup v1 hierarchy by job id, which each cluster numbers from 1. A second cluster waits for
# the first to stop (make test's xdist workers keep this session's on one worker already:
# tests/conftest.py).
CLUSTER_LOCK = (
    pathlib.Path("/run/lock" if os.path.isdir("/run/lock") else "/tmp") / "slinky-eks-local-slurm.lock"
)
CLUSTER_LOCK_WAIT_S = 900
# The niceness the cluster's processes run at (-20 highest .. 19; root may lower it): they are the
# critical path of a parallel `make test`.
CLUSTER_PRIORITY = -10


def _raise_session_priority(pid: int) -> None:
    """Each daemon leads a session of its own, and with autogroup scheduling (Linux
    kernel/sched/autogroup.c, /proc/sys/kernel/sched_autogroup_enabled) a session's processes share
    one CPU weight whatever their niceness: the weight is the autogroup's, set through
    /proc/<pid>/autogroup (proc(5), "/proc/pid/autogroup"). Without autogroup there is no such file,
    and the niceness the daemon inherited (LocalSlurm._start) is what counts."""
    try:
        pathlib.Path(f"/proc/{pid}/autogroup").write_text(str(CLUSTER_PRIORITY))
    except OSError:
        pass


class ClusterBusy(RuntimeError):
    pass


def hold_cluster_lock(workdir: pathlib.Path, wait_s: float = CLUSTER_LOCK_WAIT_S, lock=CLUSTER_LOCK) -> int:
    """The lock's file descriptor once this process holds it (released by closing it, or when the
    process ends); ClusterBusy naming the holder after wait_s."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                holder = os.pread(fd, 4096, 0).decode(errors="replace").strip()
                os.close(fd)
                raise ClusterBusy(
                    f"another test cluster has held {lock} for over {wait_s:.0f} s "
                    f"({holder or 'holder unknown'}); only one runs at a time"
                ) from None
            time.sleep(1)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()}, {workdir}\n".encode(), 0)
    return fd


# enroot's hooks directory (NVIDIA/enroot v4.1.2 src/runtime.sh hook_dirs: ENROOT_SYSCONF_PATH's hooks.d).
ENROOT_HOOKS_DIR = f"{containers.ENROOT_SYSCONF_DIR}/hooks.d"
_IMAGE = REPO / "image"


def image_enroot_hooks(root: pathlib.Path) -> dict[str, pathlib.Path]:
    """The hooks a worker's enroot runs, as the slurmd image has them: those the root's enroot has
    enabled (image/container-runtime.sh, the recipe the image and the sid root share, enables its
    extra hooks there) and ours (image/enroot-hooks/, which the Dockerfile copies in whole).
    {name: file here}."""
    if "COPY --chmod=0755 enroot-hooks/ /etc/enroot/hooks.d/" not in (_IMAGE / "Dockerfile").read_text():
        raise RuntimeError(
            "image/Dockerfile no longer installs image/enroot-hooks as image_enroot_hooks reads it"
        )
    hooks = {p.name: p for p in sorted((root / ENROOT_HOOKS_DIR.lstrip("/")).glob("*.sh"))}
    hooks.update({p.name: p for p in sorted((_IMAGE / "enroot-hooks").glob("*.sh"))})
    return hooks


def slurm_root(suite: str) -> pathlib.Path:
    root = ROOTS / suite
    if not (root / ".slinky-stamp").exists():
        raise RootMissing(
            f"no Slurm root filesystem at {root}: `make test` builds it (tests/slurm/build-roots.sh)"
        )
    return root


# NVIDIA's kernel module exposes one directory per GPU, named by PCI bus id, whose `information`
# file carries "Model:", "GPU UUID:" and "Device Minor:" lines (NVIDIA/open-gpu-kernel-modules,
# kernel-open/nvidia/nv-procfs.c); Slurm 26.05's gpu/nvidia plugin reads exactly these three
# lines and each GPU's local_cpulist under /sys/bus/pci/drivers/nvidia/<bus id>/
# (SchedMD/slurm, src/plugins/gpu/nvidia/gpu_nvidia.c, tag slurm-26-05-3-1).
NVIDIA_MAJOR = 195


def gpu_bus_id(index: int) -> str:
    return f"0000:{0x30 + index:02x}:00.0"


def write_nvidia_driver_files(base: pathlib.Path, model: str, count: int, cpus: str) -> None:
    """base/proc-driver is mounted over /proc/driver, base/pci-drivers over /sys/bus/pci/drivers."""
    for i in range(count):
        gpu = base / "proc-driver/nvidia/gpus" / gpu_bus_id(i)
        gpu.mkdir(parents=True, exist_ok=True)
        (gpu / "information").write_text(
            f"Model: \t\t {model}\n"
            f"IRQ:   \t\t {100 + i}\n"
            f"GPU UUID: \t GPU-{i:08x}-0000-4000-8000-{os.getpid():012x}\n"
            f"Video BIOS: \t 95.04.00.00.01\n"
            f"Bus Type: \t PCIe\n"
            f"DMA Size: \t 47 bits\n"
            f"DMA Mask: \t 0x7fffffffffff\n"
            f"Bus Location: \t {gpu_bus_id(i)}\n"
            f"Device Minor: \t {i}\n"
            f"GPU Excluded:\t No\n"
        )
        pci = base / "pci-drivers/nvidia" / gpu_bus_id(i)
        pci.mkdir(parents=True, exist_ok=True)
        (pci / "local_cpulist").write_text(f"{cpus}\n")


# The real `nvidia-smi -q -d ECC,ROW_REMAPPER` of one H200 on driver 580 (its README says how it
# was captured): the fake nvidia-smi answers it with one GPU section per fake GPU.
H200_ECC_QUERY = REPO / "tests/data/h200-health/nvidia-smi-q-ecc-row-remapper.txt"
H200_KERNEL_LOG = REPO / "tests/data/h200-health/kernel-log.txt"


def smi_bus_id(index: int) -> str:
    """gpu_bus_id as nvidia-smi prints it: an eight-digit domain."""
    return "0000" + gpu_bus_id(index)


def nvidia_smi_ecc_query(count: int, dram_uncorrectable: dict[int, int] | None = None) -> str:
    """The real capture with `count` GPU sections, GPU i at gpu_bus_id(i), and the Volatile "DRAM
    Uncorrectable" counter of the GPUs in `dram_uncorrectable` set to their value."""
    text = H200_ECC_QUERY.read_text()
    first = re.search(r"^GPU \S+$", text, re.M)
    head, block = text[: first.start()], text[first.start() :]
    head = re.sub(r"(Attached GPUs\s+: )\d+", rf"\g<1>{count}", head)
    sections = []
    for i in range(count):
        gpu = re.sub(r"^GPU \S+$", f"GPU {smi_bus_id(i)}", block, count=1, flags=re.M)
        errors = (dram_uncorrectable or {}).get(i)
        if errors:
            volatile = gpu.index("Volatile")
            line = re.compile(r"^(\s*DRAM Uncorrectable\s+: )\d+$", re.M).search(gpu, volatile)
            gpu = gpu[: line.start()] + line.group(1) + str(errors) + gpu[line.end() :]
        sections.append(gpu)
    return head + "".join(sections)


@dataclass(frozen=True)
class GresProbe:
    detected: list[str]  # per GPU, the type name gpu/nvidia derived from its model
    configured: list[str]  # per GPU, the type slurmd settled on for the node's GRES
    output: str


@dataclass
class Daemon:
    name: str
    proc: subprocess.Popen

    @property
    def pid(self) -> int:
        return self.proc.pid


def _stop(proc: subprocess.Popen, timeout: float = 15) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


class LocalSlurm:
    """Controller, workers <nodeset>-0.. and one login, from a rendered release."""

    def __init__(
        self,
        workdir: pathlib.Path,
        release: Release,
        gpu_model: str,
        gpus: int,
        workers: int | Mapping[str, int] = 2,
        suite: str = "sid",
        cgroup_conf: str | None = SANDBOX_CGROUP_CONF,
        extra_conf: str = SANDBOX_EXTRA_CONF,
        users: Sequence[User] = (),
        node_health: dict[str, str] | None = None,
        gpus_of: Mapping[str, tuple[str, int]] | None = None,
        login_files: dict[str, str] | None = None,
        login_dirs: Sequence[str] = (),
        worker_files: Mapping[str, pathlib.Path] | None = None,
        worker_env: Mapping[str, str] | None = None,
    ):
        self.dir = workdir
        self.release = release
        self.fs = slurm_root(suite)
        self.gpu_model, self.gpus = gpu_model, gpus
        self.nodeset = sorted(release.nodesets, key=lambda n: n["metadata"]["name"])[0]
        # `workers`: the first NodeSet's pods, or per NodeSet (its Slurm name, nodeset_name) how
        # many. Their pods have gpu_model x gpus, or per NodeSet the (model, count) of `gpus_of`.
        self.gpus_of = dict(gpus_of or {})
        replicas = {nodeset_name(self.nodeset): workers} if isinstance(workers, int) else dict(workers)
        by_name = {nodeset_name(n): n for n in release.nodesets}
        if unknown := sorted(set(replicas) - set(by_name)):
            raise ValueError(f"workers for NodeSets {unknown}: the release has {sorted(by_name)}")
        self.nodes = [f"{name}-{i}" for name, count in replicas.items() for i in range(count)]
        # The NodeSet each node's pod belongs to (a node added later belongs to the first).
        self.nodeset_of = {node: by_name[node.rpartition("-")[0]] for node in self.nodes}
        self.cgroup_conf = cgroup_conf
        self.extra_conf = extra_conf
        # Named users: their passwd and group entries (model/builders/identities.py) merged as the stack
        # merges them (_identities: the init container's script in the login and controller pods,
        # the release's Prolog on the workers), their homes under /shared/home.
        self.users = tuple(users)
        # The node health check's ConfigMap data, or None for workers without it.
        self.node_health = node_health
        # Per node, the value of the `topology.slinky.slurm.net/spec` annotation its pod carries: the
        # operator's pod-binding webhook copies it from the Kubernetes node (slurm-operator v1.2.1
        # internal/webhook/pod_binding_webhook.go), the pod's POD_TOPOLOGY variable reads it
        # (internal/builder/workerbuilder/worker_app.go), and the slurmd image's entrypoint appends
        # `Topology=<value>` to slurmd's --conf (SlinkyProject/containers
        # schedmd/slurm/26.05/ubuntu24.04/files/usr/local/bin/slurmd-entrypoint.sh, addConfItem).
        self.pod_topology: dict[str, str] = {}
        # What a test gives the login pod beyond the release: files at their path, read-only, as
        # a mounted ConfigMap item ({path in the pod: text}), and directories made world-writable
        # and sticky, as /tmp.
        self.login_files = dict(login_files or {})
        self.login_dirs = tuple(login_dirs)
        # What a test gives every worker pod beyond the release: {path in the pod: file or directory
        # here}, mounted read-only (stand-ins for what a node has, such as EFA's devices).
        self.worker_files = dict(worker_files or {})
        # Variables in every slurmd's environment beyond the caller's (what a webhook adds to the
        # NodeSet pod's container, such as EKS Pod Identity's).
        self.worker_env = dict(worker_env or {})
        self.controller: Daemon | None = None
        self.login: Daemon | None = None
        self.workers: dict[str, Daemon] = {}
        # MariaDB and slurmdbd, for a release whose Controller has an Accounting (local_accounting.py).
        self.accounting = LocalAccounting(self) if release.accounting is not None else None
        self._generation: dict[str, int] = {}
        self._lock: int | None = None
        self._priority: int | None = None
        # pytest's per-user base (/tmp/pytest-of-<user>) when the cluster lives under /tmp.
        tmp = pathlib.Path("/tmp")
        self.shared_tmp = tmp / workdir.relative_to(tmp).parts[0] if workdir.is_relative_to(tmp) else workdir

    # -- files -------------------------------------------------------------------------------

    def _uid(self, user: str) -> int:
        for line in (self.fs / "etc/passwd").read_text().splitlines():
            fields = line.split(":")
            if fields[0] == user:
                return int(fields[2])
        raise KeyError(f"no user {user} in {self.fs}/etc/passwd")

    def slurm_conf(self, release: Release) -> str:
        """The controller's slurm.conf for `release`: as the operator renders it, plus the test
        cluster's own lines."""
        conf = release.slurm_conf()
        if self.extra_conf:
            conf += f"#\n### TEST CLUSTER ###\n{self.extra_conf}\n"
        return conf

    def _prepare(self) -> None:
        d = self.dir
        slurm_uid = self._uid("slurm")
        for sub in ("etc-controller", "etc-node", "state", "log-controller", "log-login"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        key, jwt = os.urandom(1024), os.urandom(32)
        # The operator mounts the same slurm.key into every pod; the controller also gets jwt.key.
        for etc, owner in (("etc-controller", slurm_uid), ("etc-node", 0)):
            (d / etc / "slurm.key").write_bytes(key)
            os.chown(d / etc / "slurm.key", owner, owner)
            (d / etc / "slurm.key").chmod(0o600)
        (d / "etc-controller/jwt.key").write_bytes(jwt)
        os.chown(d / "etc-controller/jwt.key", slurm_uid, slurm_uid)
        (d / "etc-controller/jwt.key").chmod(0o600)
        (d / "etc-controller/slurm.conf").write_text(self.slurm_conf(self.release))
        files = dict(self.release.config_files)
        cgroup = self.cgroup_conf or self.release.cgroup_conf()
        if cgroup:
            files["cgroup.conf"] = cgroup
        for name, text in files.items():
            (d / "etc-controller" / name).write_text(text)
        state = d / "state"
        for p in (state, d / "log-controller"):
            os.chown(p, slurm_uid, slurm_uid)
        # Every pod resolves every other by name (the cluster's DNS).
        hosts = [
            "127.0.0.1 localhost",
            f"127.0.0.1 {self.release.primary_host} {self.release.service_host}",
            "127.0.0.1 login",
        ]
        hosts += [f"127.0.1.{i + 1} {n}" for i, n in enumerate(self.nodes)]
        if self.accounting is not None:
            hosts.append(f"127.0.0.1 {' '.join(self.accounting.hosts)}")
        (d / "hosts").write_text("\n".join(hosts) + "\n")
        for path, text in self.login_files.items():
            (d / "login-files" / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
            (d / "login-files" / path.lstrip("/")).write_text(text)
        # The NodeSet's enroot.conf and the cluster's .credentials, the ConfigMap's items mounted at
        # their paths (model/builders/containers.py slurmd_mounts), when the release has container jobs.
        enroot = self.release.config_maps.get(containers.ENROOT_CONFIGMAP)
        if enroot is not None:
            (d / "enroot.conf").write_text(enroot["data"]["enroot.conf"])
            if containers.CREDENTIALS_KEY in enroot["data"]:
                (d / "enroot-credentials").write_text(enroot["data"][containers.CREDENTIALS_KEY])
        # The slurmd image's enroot hooks, where the root has enroot (sid.build; not trixie).
        if enroot is not None and (self.fs / ENROOT_HOOKS_DIR.lstrip("/")).is_dir():
            hooks = d / "enroot-hooks"
            hooks.mkdir(exist_ok=True)
            for name, source in image_enroot_hooks(self.fs).items():
                shutil.copy2(source, hooks / name)
        for path in (*_HOST_PATHS, str(state.parent)):
            (self.fs / path.lstrip("/")).mkdir(parents=True, exist_ok=True)
        for target in (SLURMCTLD_SPOOL, SLURMD_SPOOL, LOG_DIR, ETC_DIR):
            (self.fs / target.lstrip("/")).mkdir(parents=True, exist_ok=True)
        (self.fs / "etc/hosts").touch()
        # The operator mounts the Controller's prolog and epilog ConfigMaps into its /etc/slurm
        # (controller_app.go controllerVolumes: mode 0610, to which the kubelet's fsGroup adds g+rw);
        # slurmctld sends the Prolog= scripts, named relative to slurm.conf, to each slurmd.
        slurm_gid = int(
            next(
                line.split(":")[2]
                for line in (self.fs / "etc/group").read_text().splitlines()
                if line.startswith("slurm:")
            )
        )
        for name, text in self.release.scripts.items():
            (d / "etc-controller" / name).write_text(text)
            os.chown(d / "etc-controller" / name, 0, slurm_gid)
            (d / "etc-controller" / name).chmod(0o670)
        self._write_identities()

    def _write_identities(self) -> None:
        """The identities ConfigMap's files (model/builders/identities.py entry_files), which each pod mounts
        at ENTRIES_DIR, and a home each."""
        d = self.dir
        (d / "identities").mkdir(exist_ok=True)
        for name, text in entry_files(self.users).items():
            (d / "identities" / name).write_text(text)
            (d / "identities" / name).chmod(0o444)
        for target in (ENTRIES_DIR, MERGED_DIR):
            (self.fs / target.lstrip("/")).mkdir(parents=True, exist_ok=True)
        (d / "home").mkdir(exist_ok=True)
        for user in self.users:
            home = d / "home" / user.name
            home.mkdir(exist_ok=True)
            os.chown(home, user.uid, user.uid)
            home.chmod(0o700)
        (self.fs / HOMES.lstrip("/")).mkdir(parents=True, exist_ok=True)

    @property
    def shared_dir(self) -> pathlib.Path:
        """Where the test reads and writes the cluster's /shared (the login and worker pods mount
        it; the homes under it are home())."""
        return self.dir / "shared"

    def home(self, user: User) -> pathlib.Path:
        """Where the test reads the user's home (HOMES/<name> in every pod)."""
        return self.dir / "home" / user.name

    def _identities(self, pod: pathlib.Path, identities: str) -> list[str]:
        """How a pod's NSS files get the named users (model/builders/identities.py), as the stack does it:
        "merged" (login, controller): the identities init container, the real merge_script() run in
        the pod's root with the entries at ENTRIES_DIR and an empty directory at MERGED_DIR, whose
        files are then mounted over /etc/passwd and /etc/group. "prolog" (workers): the image's
        own files in a private, writable /etc (the container's own filesystem) with the entries at
        ENTRIES_DIR, which the Prolog (the real prolog_script(), run by slurmd) merges before each
        job. Anything else: the image's files as they are."""
        r = shlex.quote(str(self.fs))
        entries = [f"mount --bind -o ro {self.dir}/identities {r}{ENTRIES_DIR}"]
        if identities == "merged":
            merged = pod / "identities-merged"
            merged.mkdir(parents=True, exist_ok=True)
            return [
                *entries,
                f"mount --bind {merged} {r}{MERGED_DIR}",
                f"chroot {r} sh -c {shlex.quote(merge_script())}",
                *(f"mount --bind {merged}/{f} {r}/etc/{f}" for f in FILES),
            ]
        if identities == "prolog":
            etc = pod / "etc"
            if not etc.exists():
                subprocess.run(["cp", "-a", f"{self.fs}/etc", str(etc)], check=True)
            return [f"mount --bind {etc} {r}/etc", *entries]
        return []

    def _mounts(
        self,
        hostname: str,
        etc: str,
        spool: tuple[str, str] | None,
        log: str,
        gpu_dir: pathlib.Path | None,
        identities: str = "",
        pod: pathlib.Path | None = None,
        shared: bool = False,
        gpus: int | None = None,
        files: dict[str, pathlib.Path] | None = None,
        dirs: Sequence[str] = (),
        volumes: dict[str, pathlib.Path] | None = None,
        init: str = "",
    ) -> str:
        """A shell script (host tools) that builds a pod's view of the root, which _spawn then makes
        the pod's root; with `shared`, the pod mounts the cluster's /shared; `files` ({path in the
        pod: file here}) mounted read-only; `dirs` made world-writable and sticky; `volumes` ({path in
        the pod: directory here}) mounted writable; `init`, a shell script run in
        the pod's root last, as the pod's init containers run before its main one."""
        r = shlex.quote(str(self.fs))
        d = self.dir
        lines = [
            "set -e",
            # The root a mount point of its own in this namespace, which pivot_root needs (_spawn).
            f"mount --bind {r} {r}",
            f"mount --rbind /proc {r}/proc",
            f"mount --rbind /sys {r}/sys",
            f"mount -t tmpfs -o mode=755 tmpfs {r}/dev",
        ]
        for dev in ("null", "zero", "full", "random", "urandom", "tty"):
            lines += [f"touch {r}/dev/{dev}", f"mount --bind /dev/{dev} {r}/dev/{dev}"]
        lines += [
            f"mkdir {r}/dev/pts {r}/dev/shm",
            f"mount --bind /dev/pts {r}/dev/pts",
            f"mount -t tmpfs -o mode=1777 tmpfs {r}/dev/shm",
            # FUSE, as in a privileged pod, for enroot's squashfuse and fuse-overlayfs
            # (Documentation/admin-guide/devices.txt: misc 229).
            f"mknod -m 666 {r}/dev/fuse c 10 229",
            f"ln -s /proc/self/fd {r}/dev/fd",
            f"ln -s /proc/self/fd/0 {r}/dev/stdin",
            f"ln -s /proc/self/fd/1 {r}/dev/stdout",
            f"ln -s /proc/self/fd/2 {r}/dev/stderr",
            f"mount -t tmpfs -o mode=755 tmpfs {r}/run",
            f"mkdir {r}/run/slurm",
            # A pod's own /tmp (PMIx puts per-step directories there), with the test's
            # temporary tree shared at its path: job scripts, outputs, this cluster's files.
            f"mount -t tmpfs -o mode=1777 tmpfs {r}/tmp",
            f"mkdir -p {r}{self.shared_tmp}",
            f"mount --bind {self.shared_tmp} {r}{self.shared_tmp}",
        ]
        for path in _HOST_PATHS:  # mkdir: a checkout under /tmp lies inside the pod's fresh /tmp
            lines += [
                f"mkdir -p {r}{shlex.quote(path)}",
                f"mount --bind {shlex.quote(path)} {r}{shlex.quote(path)}",
            ]
        lines += self._identities(pod or d / hostname, identities)
        for path, source in (files or {}).items():
            target = f"{r}{shlex.quote(path)}"
            make = f"mkdir -p {target}" if pathlib.Path(source).is_dir() else f"touch {target}"
            lines += [
                f"mkdir -p $(dirname {target}) && {make}",
                f"mount --bind -o ro {shlex.quote(str(source))} {target}",
            ]
        if shared:
            # The login and NodeSet pods' /shared is a volume of its own (the EFS claim): one
            # directory of this cluster's, mounted in each (shared_dir).
            lines += [
                f"mkdir -p {d}/shared{HOMES.removeprefix(SHARED_MOUNT)}",
                f"mount --bind {d}/shared {r}{SHARED_MOUNT}",
            ]
        lines += [f"mkdir -p {r}{shlex.quote(p)} && chmod 1777 {r}{shlex.quote(p)}" for p in dirs]
        lines += [
            f"mount --bind {d}/{etc} {r}{ETC_DIR}",
            f"mount --bind {d}/hosts {r}/etc/hosts",
            f"mount --bind {d}/home {r}{HOMES}",
            f"mount --bind {log} {r}{LOG_DIR}",
        ]
        if spool is not None:
            lines.append(f"mount --bind {spool[0]} {r}{spool[1]}")
        for path, source in (volumes or {}).items():
            lines += [
                f"mkdir -p {r}{shlex.quote(path)}",
                f"mount --bind {shlex.quote(str(source))} {r}{shlex.quote(path)}",
            ]
        if gpu_dir is not None:
            lines += [
                f"mount --bind {gpu_dir}/proc-driver {r}/proc/driver",
                f"mount --bind {gpu_dir}/pci-drivers {r}/sys/bus/pci/drivers",
            ]
            count = self.gpus if gpus is None else gpus
            lines += [f"mknod -m 666 {r}/dev/nvidia{i} c {NVIDIA_MAJOR} {i}" for i in range(count)]
            lines.append(f"mknod -m 666 {r}/dev/nvidiactl c {NVIDIA_MAJOR} 255")
            if self.node_health is not None and pod is not None:
                lines += self._health_mounts(pod)
        lines.append(f"hostname {hostname}")
        if init:
            lines.append(f"chroot {r} sh -c {shlex.quote(init)}")
        return "\n".join(lines)

    def _health_files(self, pod: pathlib.Path) -> None:
        """The pod's view of the health ConfigMap (the NodeSet's volume items: the program as
        node-health, mode 0555, its pool's file as expected.json), the image's python3 wrapper
        path running the host's interpreter, and the fake nvidia-smi."""
        data, pool = self.node_health, nodeset_name(self.nodeset)
        files = pod / "health"
        files.mkdir(parents=True, exist_ok=True)
        (files / node_health.PROGRAM).write_text(data[node_health.PROGRAM])
        (files / node_health.PROGRAM).chmod(0o555)
        (files / node_health.EXPECTED).write_text(data[f"{pool}.json"])
        bin_dir = pod / "usr-local-bin"
        bin_dir.mkdir(exist_ok=True)
        python = (
            pathlib.Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
        )
        (bin_dir / "python3").write_text(f'#!/bin/sh\nexec {shlex.quote(str(python))} "$@"\n')
        query = pod / "gpu" / "nvidia-smi-q.txt"
        query.write_text(nvidia_smi_ecc_query(self.gpus))
        (bin_dir / "nvidia-smi").write_text(
            "#!/bin/sh\n# The one query the health check makes; anything else is an error, as for a missing GPU.\n"
            f'[ "$*" = "-q -d ECC,ROW_REMAPPER" ] && exec cat {shlex.quote(str(query))}\n'
            'echo "fake nvidia-smi: unsupported arguments: $*" >&2; exit 2\n'
        )
        host = self._host_dir(pod)
        (host / "state").mkdir(parents=True, exist_ok=True)
        log = host / "kernel-log.txt"
        if not log.exists():  # the node's: a new pod of the node reads the same log
            log.write_text("")
            (host / "kmsg").write_text("")
            self._append_kernel_log(host, re.search(r"^\[.*$", H200_KERNEL_LOG.read_text(), re.M).group(0))
        (bin_dir / "dmesg").write_text(
            f"#!/bin/sh\n# The node's kernel log, as plain `dmesg` prints it.\nexec cat {shlex.quote(str(log))}\n"
        )
        for tool in ("python3", "nvidia-smi", "dmesg"):
            (bin_dir / tool).chmod(0o755)

    def _health_mounts(self, pod: pathlib.Path) -> list[str]:
        r = shlex.quote(str(self.fs))
        efa = int(json.loads(self.node_health[f"{nodeset_name(self.nodeset)}.json"])["efa_interfaces"])
        # The host has no /sys/class/infiniband and sysfs takes no new mount point: the pod's
        # /sys/class becomes a tmpfs holding every host class again, and the pool's EFA devices.
        host = self._host_dir(pod)
        return [
            f"mkdir -p {r}{HEALTH_DIR}",
            f"mount --bind {pod}/health {r}{HEALTH_DIR}",
            f"mkdir -p {r}{node_health.STATE_DIR}",
            f"mount --bind {host}/state {r}{node_health.STATE_DIR}",
            f"touch {r}{health_program.KMSG}",
            f"mount --bind {host}/kmsg {r}{health_program.KMSG}",
            f"mount --bind {pod}/usr-local-bin {r}/usr/local/bin",
            f"mount -t tmpfs -o mode=755 tmpfs {r}/sys/class",
            f"for c in /sys/class/*; do mkdir {r}$c && mount --rbind $c {r}$c; done",
            f"mkdir {r}/sys/class/infiniband",
            *(f"mkdir {r}/sys/class/infiniband/rdmap{16 * (i + 1)}s27" for i in range(efa)),
        ]

    def pod_dir(self, node: str) -> pathlib.Path:
        """The current pod of `node`'s files on this machine."""
        return self.dir / f"{node}.{self._generation[node]}"

    def hide_gpu(self, node: str, index: int) -> None:
        """GPU `index` gone from the pod: its /dev/nvidiaN and its procfs entry removed."""
        self._check_entered(node, ["rm", f"/dev/nvidia{index}"])
        subprocess.run(
            ["rm", "-r", str(self.pod_dir(node) / "gpu/proc-driver/nvidia/gpus" / gpu_bus_id(index))],
            check=True,
        )

    def restore_gpus(self, node: str) -> None:
        """Every GPU of the pod back: the procfs entries rewritten, the missing device files made."""
        write_nvidia_driver_files(
            self.pod_dir(node) / "gpu", self.gpu_model, self.gpus, f"0-{os.cpu_count() - 1}"
        )
        make = " ".join(
            f"[ -e /dev/nvidia{i} ] || mknod -m 666 /dev/nvidia{i} c {NVIDIA_MAJOR} {i};"
            for i in range(self.gpus)
        )
        self._check_entered(node, ["/usr/bin/sh", "-c", make])

    def set_nvidia_smi(self, node: str, text: str) -> None:
        """What the pod's fake `nvidia-smi -q -d ECC,ROW_REMAPPER` prints from now on."""
        (self.pod_dir(node) / "gpu" / "nvidia-smi-q.txt").write_text(text)

    @staticmethod
    def _host_dir(pod: pathlib.Path) -> pathlib.Path:
        """The node's own files, shared by its pods (a pod's directory is NODE.GENERATION)."""
        return pod.parent / f"{pod.name.rpartition('.')[0]}.host"

    @staticmethod
    def _append_kernel_log(host: pathlib.Path, line: str) -> None:
        """`line` ("[stamp] message", as dmesg prints it) at the end of the node's kernel log: in
        dmesg's file, and as the next /dev/kmsg record ("prio,seq,usec,flags;message": Linux
        Documentation/ABI/testing/dev-kmsg, the shape the real H200's records have in
        tests/data/h200-health/README.md)."""
        line = line.rstrip("\n")
        stamp, _, message = line.partition("] ")
        usec = int(float(stamp.lstrip("[ ")) * 1_000_000)
        with open(host / "kmsg") as f:
            seq = sum(1 for _ in f)
        with open(host / "kmsg", "a") as f:
            f.write(f"6,{seq},{usec},-;{message}\n")
        with open(host / "kernel-log.txt", "a") as f:
            f.write(line + "\n")

    def add_kernel_log(self, node: str, line: str) -> None:
        """A line at the end of the node's kernel log (its /dev/kmsg record and dmesg's line)."""
        self._append_kernel_log(self._host_dir(self.pod_dir(node)), line)

    def health_state(self, node: str) -> pathlib.Path:
        """The node's Xid cursor file (node_health.STATE_FILE, in the node's STATE_DIR)."""
        return (
            self._host_dir(self.pod_dir(node))
            / "state"
            / pathlib.PurePosixPath(health_program.STATE_FILE).name
        )

    def _check_entered(self, node: str, argv: list[str]) -> None:
        done = self._enter(self.workers[node].pid, argv)
        if done.returncode != 0:
            raise RuntimeError(f"{argv} in {node}'s pod exited {done.returncode}: {done.stdout}{done.stderr}")

    def _spawn(
        self,
        name: str,
        script: str,
        argv: list[str],
        logfile: pathlib.Path,
        env: Mapping[str, str] | None = None,
    ) -> Daemon:
        # The pod's root made its mount namespace's root with pivot_root(2), as a container runtime
        # does, not chroot(2): the kernel refuses a new user namespace to a chrooted process
        # (kernel/user_namespace.c create_user_ns: current_chrooted()), and enroot makes one for
        # every container (enroot-nsenter). The host's root, mounted at PUT_OLD, is then detached.
        r = shlex.quote(str(self.fs))
        cmd = (
            f"{script}\nmkdir -p {r}{PUT_OLD}\ncd {r}\npivot_root . .{PUT_OLD}\ncd /\n"
            f"umount -l {PUT_OLD}\nexec {shlex.join(argv)}"
        )
        out = open(logfile, "ab")
        proc = subprocess.Popen(
            ["unshare", "--uts", "--mount", "--propagation", "private", "--", "sh", "-c", cmd],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**_daemon_env(), **(env or {})},
        )
        out.close()
        _raise_session_priority(proc.pid)
        return Daemon(name, proc)

    # -- daemons -----------------------------------------------------------------------------

    def start(self) -> "LocalSlurm":
        """Start everything, or stop what did start and raise: never leave a daemon behind."""
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> "LocalSlurm":
        # The cluster tests are the longest unit of `make test` (tests/support/scheduling.py): their
        # daemons and jobs (children of this process) get the CPU before the other workers' tests.
        self._priority = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, 0, CLUSTER_PRIORITY)
        self._lock = hold_cluster_lock(self.dir)
        self._prepare()
        d = self.dir
        if self.accounting is not None:  # before slurmctld, which registers the cluster with it
            self.accounting.start()
        self._start_controller()
        self.login = self._spawn(
            "sackd",
            self._mounts(
                "login",
                "etc-node",
                None,
                str(d / "log-login"),
                None,
                "merged",
                d / "login",
                shared=True,
                files={path: d / "login-files" / path.lstrip("/") for path in self.login_files},
                dirs=self.login_dirs,
            ),
            ["sackd", "-D", "--conf-server", f"{self.release.service_host}:{SLURMCTLD_PORT}"],
            d / "sackd.stdout",
        )
        self._wait_for(lambda: self._login_ready(), 60, "sackd to fetch the configs")
        for node in self.nodes:
            self.start_slurmd(node)
        self.wait_for_states({n: "idle" for n in self.nodes}, 90)
        return self

    def _start_controller(self) -> None:
        """The controller pod: slurmctld on the cluster's state volume, waited for until it says so."""
        self._spawn_controller(None)
        self._wait_for(
            lambda: self._controller_starts() > self._starts_before,
            60,
            "slurmctld to start",
            lambda: self._exited(self.controller),
        )

    def _controller_starts(self) -> int:
        log = self.dir / "log-controller/slurmctld.log"
        return log.read_text(errors="replace").count("started on cluster") if log.exists() else 0

    def _spawn_controller(self, state: pathlib.Path | None) -> None:
        """slurmctld on `state` (None: the cluster's state volume)."""
        d = self.dir
        self._starts_before = self._controller_starts()
        self.controller = self._spawn(
            "slurmctld",
            self._mounts(
                self.release.primary_host,
                "etc-controller",
                (str(state or d / "state"), SLURMCTLD_SPOOL),
                str(d / "log-controller"),
                None,
                "merged",
                d / "controller",
            ),
            ["slurmctld", "-D"],
            d / "slurmctld.stdout",
        )

    def install_controller(self, config_files: Mapping[str, str | None], timeout: float = 60) -> str:
        """The controller pod of a first install in place of this one: slurmctld on a new, empty
        state volume, with `config_files` written over the controller's (None: the file absent, as
        from a ConfigMap without that key). "" once slurmctld answers; the error and fatal lines
        it logged when it exits instead."""
        _stop(self.controller.proc)
        for name, text in config_files.items():
            path = self.dir / "etc-controller" / name
            if text is None:
                path.unlink(missing_ok=True)
            else:
                path.write_text(text)
        state = self.dir / f"state-install-{time.monotonic_ns()}"
        state.mkdir()
        slurm_uid = self._uid("slurm")
        os.chown(state, slurm_uid, slurm_uid)
        log = self.dir / "log-controller/slurmctld.log"
        offset = len(log.read_text(errors="replace")) if log.exists() else 0
        self._spawn_controller(state)
        deadline = time.time() + timeout
        # Not "started on cluster": slurmctld logs it before it reads slurm.conf's partitions.
        while time.time() < deadline:
            if self.controller.proc.poll() is None and self.run(["scontrol", "ping"]).returncode == 0:
                return ""
            if self.controller.proc.poll() is not None:
                lines = log.read_text(errors="replace")[offset:].splitlines()
                return "\n".join(line for line in lines if "error:" in line or "fatal:" in line)
            time.sleep(0.3)
        raise RuntimeError(f"slurmctld neither started nor exited in {timeout} s\n{self.logs()}")

    def replace_controller(self, config_files: Mapping[str, str]) -> None:
        """What the operator does when a ConfigMap of the Controller's configFileRefs changes, with
        the chart's `inplaceReconfigure: false`: the Controller's config ConfigMap (controller_config.go
        BuildControllerConfig, which reads the configFileRefs) gets a new hash, the controller pod
        template carries it (controller_app.go controllerPodTemplate, getHashes), and the StatefulSet
        replaces the pod, which mounts the new files over the same state volume
        (slurm-operator v1.2.1)."""
        _stop(self.controller.proc)
        for name, text in config_files.items():
            (self.dir / "etc-controller" / name).write_text(text)
        self._start_controller()
        self._wait_for(lambda: self.run(["scontrol", "ping"]).returncode == 0, 60, "slurmctld to answer")

    @staticmethod
    def _exited(daemon: Daemon) -> str:
        code = daemon.proc.poll()
        return "" if code is None else f"({daemon.name} exited with {code})"

    def _login_ready(self) -> bool:
        if self.login.proc.poll() is not None:
            raise RuntimeError(f"sackd exited:\n{self.logs()}")
        return self.run(["sinfo", "-h"]).returncode == 0

    def slurmd_argv(self, node: str) -> list[str]:
        """The NodeSet pod's slurmd command line (with its pod's topology, if any), plus the per-node Port."""
        port = SLURMD_PORT + (self.nodes.index(node) + 1) * 10  # sackd has SlurmdPort
        topology = f" Topology={self.pod_topology[node]}" if self.pod_topology.get(node) else ""
        return [
            "slurmd",
            "-D",
            "-Z",
            "--conf-server",
            f"{self.release.service_host}:{SLURMCTLD_PORT}",
            "--conf",
            f"{slurmd_conf(self.nodeset_of.get(node, self.nodeset))}{topology} Port={port}",
        ]

    def start_slurmd(self, node: str) -> Daemon:
        """A new pod for `node`: fresh spool, log and /run, the same hostname and GPUs."""
        gen = self._generation[node] = self._generation.get(node, -1) + 1
        pod = self.dir / f"{node}.{gen}"
        for sub in ("spool", "log", "node-local"):
            (pod / sub).mkdir(parents=True, exist_ok=True)
        # The node-local emptyDir as the kubelet makes it: mode 0777, not sticky
        # (kubernetes/kubernetes pkg/volume/emptydir/empty_dir.go: `const perm os.FileMode = 0777`,
        # applied by setupDir), not the 0755 a mkdir under the test's umask gives.
        (pod / "node-local").chmod(0o777)
        model, count = self.gpus_of.get(
            nodeset_name(self.nodeset_of.get(node, self.nodeset)), (self.gpu_model, self.gpus)
        )
        write_nvidia_driver_files(pod / "gpu", model, count, f"0-{os.cpu_count() - 1}")
        if self.node_health is not None:
            self._health_files(pod)
        daemon = self._spawn(
            node,
            self._mounts(
                node,
                "etc-node",
                (str(pod / "spool"), SLURMD_SPOOL),
                str(pod / "log"),
                pod / "gpu",
                "prolog",
                pod,
                shared=True,
                gpus=count,
                files={
                    **self._container_files(),
                    **self.worker_files,
                },
                # The NodeSet pod's node-local emptyDir (model/builders/containers.py
                # slurmd_volumes): the pod's own directory, a new pod's empty.
                volumes={containers.NODE_LOCAL_MOUNT: pod / "node-local"},
                init=self._init_containers(node),
            ),
            self.slurmd_argv(node),
            pod / "slurmd.stdout",
            self.worker_env,
        )
        self.workers[node] = daemon
        return daemon

    def _container_files(self) -> dict[str, pathlib.Path]:
        """A worker's enroot.conf and the cluster's .credentials (the ConfigMap's items) and hooks
        directory (the slurmd image's: image_enroot_hooks), when the release has container jobs."""
        files = {
            containers.ENROOT_CONF: self.dir / "enroot.conf",
            f"{containers.CLUSTER_CONFIG_DIR}/{containers.CREDENTIALS_FILE}": self.dir / "enroot-credentials",
            ENROOT_HOOKS_DIR: self.dir / "enroot-hooks",
        }
        return {path: source for path, source in files.items() if source.exists()}

    def _init_containers(self, node: str) -> str:
        """The shell commands of the release's own init containers in `node`'s NodeSet pod
        (spec.template.spec.initContainers, each `sh -c <script>`), in order: what the kubelet runs
        in the pod before slurmd."""
        spec = self.nodeset_of.get(node, self.nodeset)["spec"]
        inits = ((spec.get("template") or {}).get("spec") or {}).get("initContainers") or []
        scripts = []
        for init in inits:
            shell, flag, script = init["command"]
            if (shell, flag) != ("sh", "-c"):
                raise ValueError(f"init container {init['name']}: only `sh -c <script>` runs here")
            scripts.append(script)
        return "\n".join(scripts)

    def stop_slurmd(self, node: str) -> None:
        _stop(self.workers.pop(node).proc)

    def prestop(self, node: str) -> subprocess.CompletedProcess:
        """The NodeSet pod's preStop hook, run in that pod (its hostname, its configless cache)."""
        hook = f"scontrol update nodename=$(hostname) state=down reason='{PRESTOP_REASON}';"
        return self._enter(self.workers[node].pid, ["/usr/bin/sh", "-c", hook])

    def replace_pod(self, node: str) -> Daemon:
        """What a rolling update does to one worker: preStop, slurmd stopped, a new pod started."""
        self.prestop(node)
        self.stop_slurmd(node)
        return self.start_slurmd(node)

    def stop(self) -> None:
        for daemon in [*self.workers.values(), self.login, self.controller]:
            if daemon is not None:
                _stop(daemon.proc)
        self.workers.clear()
        if self.accounting is not None:
            self.accounting.stop(_stop)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None
        if self._priority is not None:
            os.setpriority(os.PRIO_PROCESS, 0, self._priority)
            self._priority = None

    def autodetect_gres(self, model: str, count: int, node_gres: str) -> GresProbe:
        """Slurm's own GPU detection on a pod whose GPUs are `count` x `model`, with the release's
        gres.conf and the node line `Gres=<node_gres>`: `slurmd -G` (detect, print, exit)."""
        probe = self.dir / f"probe-{len(list(self.dir.glob('probe-*')))}"
        etc = probe / "etc"
        etc.mkdir(parents=True)
        (etc / "slurm.key").write_bytes(os.urandom(1024))
        (etc / "slurm.key").chmod(0o600)
        (etc / "gres.conf").write_text(self.release.config_files["gres.conf"])
        (etc / "slurm.conf").write_text(
            "ClusterName=probe\nSlurmctldHost=probe\nAuthType=auth/slurm\nCredType=cred/slurm\n"
            f"GresTypes=gpu\nNodeName=probe CPUs={os.cpu_count()} Gres={node_gres}\n"
        )
        (probe / "log").mkdir()
        if not (self.dir / "hosts").exists():
            (self.dir / "hosts").write_text("127.0.0.1 localhost probe\n")
        (self.fs / "etc/hosts").touch()
        if not (self.dir / "identities").exists():
            self._write_identities()
        write_nvidia_driver_files(probe / "gpu", model, count, f"0-{os.cpu_count() - 1}")
        saved, self.gpus = self.gpus, count
        try:
            script = self._mounts(
                "probe", str(etc.relative_to(self.dir)), None, str(probe / "log"), probe / "gpu"
            )
        finally:
            self.gpus = saved
        # -vvv: gpu/nvidia logs, at debug2, the name it derived from each GPU's model.
        result = subprocess.run(
            [
                "unshare",
                "--uts",
                "--mount",
                "--propagation",
                "private",
                "--",
                "sh",
                "-c",
                f"{script}\nexec chroot {shlex.quote(str(self.fs))} slurmd -G -vvv",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env=_daemon_env(),
        )
        out = result.stdout + result.stderr
        return GresProbe(
            re.findall(r"gpu/nvidia: _set_basic_info: Name: (\S+)", out),
            re.findall(r"Gres Name=gpu Type=(\S+) ", out),
            out,
        )

    # -- clients -----------------------------------------------------------------------------

    def _enter(
        self,
        pid: int,
        argv: list[str],
        cwd: pathlib.Path | str | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess:
        chdir = f"--chdir={cwd}" if cwd else "--chdir=/"
        return subprocess.run(
            ["nsenter", "-t", str(pid), "--mount", "--uts", "--root", "--", "/usr/bin/env", chdir, *argv],
            env={**_daemon_env(), **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def run(
        self,
        argv: list[str],
        cwd: pathlib.Path | str | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess:
        """A command on the login pod (configless client commands, the tools' scripts)."""
        return self._enter(self.login.pid, argv, cwd, env, timeout)

    def run_ok(self, argv: list[str]) -> str:
        """A command on the login pod that must succeed: its output."""
        result = self.run(argv)
        assert result.returncode == 0, f"{argv}: {result.stdout}{result.stderr}"
        return result.stdout

    def job_fields(self, job: str) -> dict[str, str]:
        """The job as `scontrol show job -o` describes it, field by field."""
        return dict(re.findall(r"(\w+)=(\S*)", self.run_ok(["scontrol", "show", "job", "-o", job])))

    def slurm_node(self, name: str) -> rollout.SlurmNode:
        """One node as `scontrol -o show node` describes it, read as the rollout wait reads it."""
        (node,) = rollout.parse_scontrol(self.run(["scontrol", "-o", "show", "node", name]).stdout)
        return node

    def states(self) -> dict[str, str]:
        out = self.run(["sinfo", "-h", "-N", "-o", "%N %T"]).stdout.split()
        return dict(zip(out[::2], out[1::2], strict=True))

    def wait_for_states(self, wanted: dict[str, str], timeout: float = 60) -> dict[str, str]:
        def reached() -> bool:
            if dead := [d.name for d in self.workers.values() if d.proc.poll() is not None]:
                raise RuntimeError(f"slurmd of {dead} exited:\n{self.logs()}")
            return all(self.states().get(n) == s for n, s in wanted.items())

        self._wait_for(reached, timeout, f"node states {wanted}", lambda: f"last: {self.states()}")
        return self.states()

    def _wait_for(self, check, timeout: float, what: str, detail=lambda: "") -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if check():
                return
            time.sleep(0.3)
        raise RuntimeError(f"timed out after {timeout} s waiting for {what} {detail()}\n{self.logs()}")

    def logs(self) -> str:
        out = []
        for f in sorted(self.dir.rglob("*.log")) + sorted(self.dir.rglob("*.stdout")):
            if f.is_relative_to(self.dir / DATABASE_FILES):
                continue
            out.append(
                f"--- {f.relative_to(self.dir)}\n"
                + "\n".join(f.read_text(errors="replace").splitlines()[-15:])
            )
        return "\n".join(out)

    def run_on_controller(self, argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
        """A command in the slurmctld pod as the slurm user, as `kubectl exec` into its container
        runs it (the operator runs slurmctld as slurm: controller_app.go)."""
        return self._enter(
            self.controller.pid,
            ["setpriv", "--reuid=slurm", "--regid=slurm", "--init-groups", *argv],
            timeout=timeout,
        )

    def run_as(
        self,
        user: User,
        argv: list[str],
        cwd: pathlib.Path | str | None = None,
        timeout: float = 120,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess:
        """A command on the login pod as a named user (their UID, GID and home), as after their
        ssh login, with `env` added to the environment."""
        return self.run(
            [
                "setpriv",
                f"--reuid={user.uid}",
                f"--regid={user.uid}",
                "--init-groups",
                "--",
                "env",
                f"HOME={user.home}",
                f"USER={user.name}",
                f"LOGNAME={user.name}",
                *argv,
            ],
            cwd=cwd or user.home,
            env=env,
            timeout=timeout,
        )

    def wait_for_job(self, job: str, timeout: float = 300) -> str:
        """`scontrol show job -o` once the job has ended."""
        deadline = time.time() + timeout
        info, state = "", "PENDING"
        while time.time() < deadline:
            info = self.run(["scontrol", "show", "job", "-o", job]).stdout
            state = re.search(r"JobState=(\S+)", info).group(1)
            if state not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
                return info
            time.sleep(0.5)
        self.run(["scancel", job])
        raise TimeoutError(f"job {job} still {state} after {timeout} s\n{self.logs()}")

    def sbatch(
        self, script: pathlib.Path, workdir: pathlib.Path, env: dict[str, str], timeout: float = 300
    ) -> tuple[str, str, str]:
        """Submit from the login pod, poll until the job ends; return (state, exit code, output)."""
        submitted = self.run(["sbatch", "--parsable", str(script)], cwd=workdir, env=env)
        if submitted.returncode != 0:
            raise RuntimeError(f"sbatch failed: {submitted.stderr}")
        info = self.wait_for_job(submitted.stdout.strip().split(";")[0], timeout)
        stdout = pathlib.Path(re.search(r"StdOut=(\S+)", info).group(1))
        output = stdout.read_text(errors="replace") if stdout.exists() else f"(no output file {stdout})"
        return (
            re.search(r"JobState=(\S+)", info).group(1),
            re.search(r"ExitCode=(\S+)", info).group(1),
            output,
        )


def _daemon_env() -> dict[str, str]:
    """The caller's environment without anything that would point Slurm at a config file."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SRUN_"))}
