"""Container jobs: the two files that turn `srun --container-image=...` on, rendered from paths so
the product (model/builders/slurm_values.py) and the real-Slurm test cluster (tests/slurm/) render
them the same way, each with its own directories.

plugstack.conf: one plain `required` line naming pyxis's plugin. slurmctld serves plugstack.conf to
every node in configless mode but not a file it `include`s, and a glob `include` makes slurmctld log
errors (seen on the test cluster: issue text "What a trial on this machine showed"), so the line is
in plugstack.conf itself and the plugin file is in every image that runs srun or slurmd.
`required`: a node where pyxis cannot load refuses the step rather than running it outside its
container (https://slurm.schedmd.com/spank.html#SECTION_CONFIGURATION, "required"/"optional").

enroot.conf: enroot reads /etc/enroot/enroot.conf (its ENROOT_SYSCONF_PATH) before anything else,
and pyxis does not pass the job's environment to enroot, so the paths belong there. enroot expands
each value with `eval echo` (NVIDIA/enroot v4.1.2 enroot.in, config::load), so `$(id -u)` gives
each user their own directories; enroot creates those with umask 077 (enroot.in, after
config::fini), so their parents (`enroot_directories`) must exist beforehand, world-writable and
sticky, or the first user's mkdir would lock everyone else out.
- runtime (ENROOT_RUNTIME_PATH: the running containers' state), data (ENROOT_DATA_PATH: unpacked
  root filesystems) and temp (ENROOT_TEMP_PATH: a layer being converted) on the node-local disk:
  the instance-store NVMe where the type has it, the root volume where not;
- cache (ENROOT_CACHE_PATH: the image layers a `docker://` import downloads) on /shared, so the
  nodes of a multi-node step share one copy of each layer;
- config (ENROOT_CONFIG_PATH), where given: where enroot reads `.credentials` (netrc format, a
  password starting with `$` is command-substituted: NVIDIA/enroot v4.1.2 doc/cmd/import.md), so a
  registry's login can be the cluster's. Not given, it stays enroot's default, each user's own
  ~/.config/enroot.
(NVIDIA/enroot v4.1.2 doc/configuration.md lists each setting and its default.)

.credentials: the cluster's registry logins (`credentials`), one line per registry the stack knows:
the account's ECR registry in the stack's region, whose password a helper in the image prints at
each import from the slurmd pod's own EKS Pod Identity role (image/ecr-password.sh; the role may
only pull: `registry_pull_policy`). An image URI that names no user takes the login of its
registry's line (NVIDIA/enroot v4.1.2 src/docker.sh docker::_parse_uri, "Try to infer the user from
the credential file"), and ECR answers Basic auth, which enroot meets with that line
(docker::_authenticate), so `srun --container-image=<account>.dkr.ecr.<region>.amazonaws.com/<repo>:<tag>`
needs nothing in the user's home. pyxis runs enroot with slurmstepd's environment, the slurmd
container's (NVIDIA/pyxis v0.24.0 enroot.c enroot_exec: execvpe(..., environ)), where the Pod
Identity webhook put the variables the helper reads: slurmd is started by supervisord
(SlinkyProject/containers schedmd/slurm/26.05/ubuntu24.04/files/etc/supervisor/conf.d/slurmd.conf),
whose programs inherit its environment (https://supervisord.org/subprocess.html#subprocess-environment).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Sequence

from model.facts.contract import SHARED_MOUNT, SLURM_NAMESPACE

# Where pyxis's Debian package puts its SPANK plugin (NVIDIA/pyxis v0.24.0 debian/rules: libdir
# /usr/lib/<multiarch>): Slinky's login-pyxis image has it there, and image/Dockerfile installs it
# there in the slurmd image, so one line names it on the login pod and on every worker.
PYXIS_PLUGIN = "/usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so"
# enroot's system configuration directory as its packages build it (ENROOT_SYSCONF_PATH=/etc/enroot:
# NVIDIA/enroot v4.1.2 Makefile, sysconfdir), and the file in it it reads first.
ENROOT_SYSCONF_DIR = "/etc/enroot"
ENROOT_CONF = f"{ENROOT_SYSCONF_DIR}/enroot.conf"

# Each user's own subdirectory of a shared parent; evaluated by enroot at every run.
_PER_USER = "user-$(id -u)"
# Where image/Dockerfile installs image/ecr-password.sh: run by each job's user, so readable and
# executable by all.
ECR_PASSWORD_HELPER = "/usr/local/bin/ecr-password.sh"
# The cluster's enroot configuration directory (ENROOT_CONFIG_PATH): its `.credentials`, a
# ConfigMap mounted read-only in every slurmd pod. Beside enroot.conf, apart from the system
# directories enroot reads anyway (hooks.d, mounts.d, environ.d under /etc/enroot: NVIDIA/enroot
# v4.1.2 src/runtime.sh), so nothing there is read twice.
CLUSTER_CONFIG_DIR = f"{ENROOT_SYSCONF_DIR}/cluster"
CREDENTIALS_FILE = ".credentials"
# The slurmd pods' service account: the one EKS Pod Identity hands the registry role to
# (components/slurm_cluster.py), named in every NodeSet's podSpec.
SLURMD_SERVICE_ACCOUNT = "slurmd"


@dataclass(frozen=True)
class EcrRegistry:
    """An account's private ECR registry in one region, as the stack's own repository names it."""

    account: str
    region: str
    # The partition (aws, aws-cn, aws-us-gov) and the DNS suffix of the region's endpoints
    # (amazonaws.com, amazonaws.com.cn): both differ outside the commercial partition.
    partition: str
    dns_suffix: str

    @classmethod
    def of(cls, repository_url: str, cluster_arn: str) -> EcrRegistry:
        """The registry of the stack's repository (its URL, <account>.dkr.ecr.<region>.<suffix>/
        <name>: Amazon ECR user guide, "Amazon ECR private registry",
        https://docs.aws.amazon.com/AmazonECR/latest/userguide/Registries.html) in the cluster's
        partition (its ARN, arn:<partition>:eks:...)."""
        host = repository_url.split("/", 1)[0]
        found = _REGISTRY_HOST.fullmatch(host)
        if found is None:
            raise ValueError(f"{repository_url!r} is not a private ECR repository URL")
        return cls(found["account"], found["region"], cluster_arn.split(":", 2)[1], found["suffix"])

    @property
    def host(self) -> str:
        """The registry's address, the host of every repository URI in it."""
        return f"{self.account}.dkr.ecr.{self.region}.{self.dns_suffix}"

    @property
    def endpoint(self) -> str:
        """ECR's API endpoint in the region, where GetAuthorizationToken is called (AWS General
        Reference, "Amazon Elastic Container Registry endpoints and quotas":
        https://docs.aws.amazon.com/general/latest/gr/ecr.html)."""
        return f"https://api.ecr.{self.region}.{self.dns_suffix}"


_REGISTRY_HOST = re.compile(
    r"(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.(?P<suffix>amazonaws\.com(?:\.cn)?)"
)


@dataclass(frozen=True)
class EnrootPaths:
    """Where enroot keeps what: `local` is a node-local directory (runtime, data, temp under it),
    `cache` a directory every node shares, `config` the directory holding `.credentials` (None:
    enroot's default, the user's own)."""

    local: str
    cache: str
    config: str | None = None

    @property
    def runtime(self) -> str:
        return f"{self.local}/enroot/runtime"

    @property
    def data(self) -> str:
        return f"{self.local}/enroot/data"

    @property
    def temp(self) -> str:
        return f"{self.local}/enroot/tmp"


def plugstack_conf(pyxis_plugin: str = PYXIS_PLUGIN) -> str:
    """plugstack.conf: pyxis, required, with its defaults but for its runtime directory, on the
    node-local disk (PYXIS_RUNTIME_PATH) (NVIDIA/pyxis v0.24.0 README, "Slurm plugstack
    configuration"; config.c, the arguments it reads)."""
    return f"required {pyxis_plugin} runtime_path={PYXIS_RUNTIME_PATH}\n"


def enroot_conf(paths: EnrootPaths) -> str:
    """enroot.conf: each user's runtime, data and temp under the node-local directory, their layer
    cache under the shared one, and the credentials directory where one is given."""
    lines = {
        "ENROOT_RUNTIME_PATH": f"{paths.runtime}/{_PER_USER}",
        "ENROOT_DATA_PATH": f"{paths.data}/{_PER_USER}",
        # enroot makes no temp directory of its own (only `mktemp -d -p` in it: src/common.sh), so
        # this one is the shared sticky directory itself, as /tmp is.
        "ENROOT_TEMP_PATH": paths.temp,
        "ENROOT_CACHE_PATH": f"{paths.cache}/{_PER_USER}",
    }
    if paths.config is not None:
        lines["ENROOT_CONFIG_PATH"] = paths.config
    return "".join(f"{key} {value}\n" for key, value in lines.items())


def credentials(registries: Sequence[EcrRegistry], helper: str = ECR_PASSWORD_HELPER) -> str:
    """The cluster's `.credentials`: for each registry, its host, ECR's fixed login `AWS`, and a
    password enroot takes from the helper's output at each import (a password field that starts
    with `$` is command-substituted: NVIDIA/enroot v4.1.2 src/common.sh common::evalnetrc; ECR's
    user name: https://docs.aws.amazon.com/AmazonECR/latest/userguide/registry_auth.html). No
    secret is in the file: a password lives 12 hours (the same page) and is fetched when needed."""
    return "".join(
        f"machine {r.host} login AWS password $({helper} {r.region} {r.endpoint})\n" for r in registries
    )


# ECR's actions that read an image: the token (GetAuthorizationToken, which ECR grants on "*"
# only), the manifest (BatchGetImage) and the layers (GetDownloadUrlForLayer,
# BatchCheckLayerAvailability), all of access level Read. Service Authorization Reference, Amazon
# ECR (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonelasticcontainerregistry.html):
# GetAuthorizationToken has no resource type; the others act on `repository`, here the account's
# repositories in the stack's region only.
PULL_ACTIONS = ("ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer")


def registry_pull_policy(registry: EcrRegistry) -> dict:
    """The slurmd pods' role: pull any image of the account's repositories in the stack's region,
    nothing else (no push, no other region or account, no other service)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "ecr:GetAuthorizationToken", "Resource": "*"},
            {
                "Effect": "Allow",
                "Action": list(PULL_ACTIONS),
                "Resource": f"arn:{registry.partition}:ecr:{registry.region}:{registry.account}:repository/*",
            },
        ],
    }


def enroot_directories(paths: EnrootPaths) -> tuple[str, ...]:
    """The directories to make mode 1777 (world-writable, sticky, as /tmp) before the first job: the
    parents of the per-user runtime, data and cache directories, which enroot makes itself with
    umask 077, and the temp directory, which it does not make."""
    return (paths.runtime, paths.data, paths.temp, paths.cache)


# The cluster's own directories (model/builders/slurm_values.py mounts them into every slurmd).
# Node-local: an emptyDir. On a type with NVMe instance store the kubelet's directory, where
# emptyDirs live, is on the node's NVMe RAID0: nodeadm's localStorage runs setup-local-disks, which
# copies /var/lib/kubelet (and containerd's store) onto the array it mounts at /mnt/k8s-disks/0 and
# bind-mounts it back in place (awslabs/amazon-eks-ami v20260724
# templates/al2023/runtime/bin/setup-local-disks, maybe_raid and BIND_MOUNTS;
# model/builders/node_templates.py local_storage_node_config). Elsewhere it is on the root volume.
# An emptyDir rather than a hostPath: no host directory is opened to the pod, and it is emptied with
# the pod.
NODE_LOCAL_VOLUME = "node-local"
NODE_LOCAL_MOUNT = "/mnt/local"
# pyxis's own runtime directory: a `docker://` image is imported there, as a whole squashfs file
# per step (<runtime_path>/<uid>/<job>.<step>.squashfs), before `enroot create` unpacks it
# (NVIDIA/pyxis v0.24.0 pyxis_slurmstepd.c, enroot_create_user_runtime_dir and the import path).
# Its default, /run/pyxis (config.c), is in the slurmd container's writable layer: the operator
# mounts nothing at /run (SlinkyProject/slurm-operator v1.2.1
# internal/builder/workerbuilder/worker_app.go). On the node-local disk with enroot's directories
# instead; slurmd's pyxis makes this last component itself, mode 0755, when it starts
# (pyxis_slurmd.c, pyxis_slurmd_init), and each user's directory in it 0700, the user's own.
PYXIS_RUNTIME_PATH = f"{NODE_LOCAL_MOUNT}/pyxis"
# Each job's scratch directory on each of its nodes: <JOB_SCRATCH>/<job id>, the job's user's own,
# removed when the job ends (prolog_script, epilog_script).
JOB_SCRATCH = f"{NODE_LOCAL_MOUNT}/jobs"
SHARED_ENROOT_CACHE = f"{SHARED_MOUNT}/enroot/cache"
# Registry logins are the cluster's (CLUSTER_CONFIG_DIR), from the pod's own role, not the node's:
# pods do not reach IMDS (hop limit 1, docs/decisions/imds-hop-limit.md), and the node role would
# let any job user act as the node in Kubernetes (docs/security.md, "Container jobs").
PATHS = EnrootPaths(local=NODE_LOCAL_MOUNT, cache=SHARED_ENROOT_CACHE, config=CLUSTER_CONFIG_DIR)
ENROOT_CONFIGMAP = "enroot-config"
ENROOT_VOLUME = "enroot-config"
CREDENTIALS_KEY = "credentials"
CREDENTIALS_VOLUME = "enroot-credentials"
HASH_ENV = "SLINKY_EKS_ENROOT_CONF"
# The scripts' names under prologScripts and epilogScripts (the chart stores each as
# prolog-<name>/epilog-<name> and the operator lists it in slurm.conf: SlinkyProject/slurm-operator
# v1.2.1 internal/builder/controllerbuilder/controller_config.go).
PROLOG_SCRIPT = "containers.sh"
EPILOG_SCRIPT = "job-scratch.sh"


def prolog_script(paths: EnrootPaths = PATHS, job_scratch: str = JOB_SCRATCH) -> str:
    """The workers' Prolog (root, in the slurmd container, before a job's first step on the node:
    https://slurm.schedmd.com/prolog_epilog.html): enroot's shared directories, sticky and
    world-writable, and the job's scratch directory, its user's own (0700). A Prolog that exits
    non-zero drains the node (slurm.conf(5) Prolog): a node whose local disk cannot take a directory
    should take no job. The shared cache's directory is made as well, but a failure there (/shared
    unreachable) is only logged: the import then fails the one job, with enroot's own error."""
    local = " ".join(d for d in enroot_directories(paths) if d != paths.cache)
    return f"""#!/bin/sh
# slinky-eks: container jobs' and job scratch directories (model/builders/containers.py).
mkdir -p {local} {job_scratch} && chmod 1777 {local} || exit 1
chmod 0711 {job_scratch} || exit 1
mkdir -p {paths.cache} && chmod 1777 {paths.cache} || echo "slinky-eks: could not make {paths.cache}" >&2
scratch={job_scratch}/"$SLURM_JOB_ID"
mkdir -p "$scratch" && chown "$SLURM_JOB_UID:$SLURM_JOB_GID" "$scratch" && chmod 0700 "$scratch" || exit 1
exit 0
"""


def epilog_script(job_scratch: str = JOB_SCRATCH) -> str:
    """The workers' Epilog (root, on each of the job's nodes when it ends): the job's scratch
    directory removed. Always 0: an Epilog that fails drains the node, and a directory left behind
    is only disk space, reclaimed with the pod."""
    return f"""#!/bin/sh
# slinky-eks: the job's scratch directory (model/builders/containers.py).
case "$SLURM_JOB_ID" in ''|*[!0-9]*) exit 0 ;; esac
rm -rf {job_scratch}/"$SLURM_JOB_ID"
exit 0
"""


def enroot_conf_hash(registry: EcrRegistry, paths: EnrootPaths = PATHS) -> str:
    """12 hex digits of enroot.conf and .credentials: in the slurmd template, so a change rolls the
    pods (a subPath mount is never updated in place)."""
    text = enroot_conf(paths) + credentials([registry])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def configmap(registry: EcrRegistry) -> dict:
    """enroot.conf and the cluster's .credentials in a ConfigMap, as a Kubernetes object for the
    chart's extraObjects."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": ENROOT_CONFIGMAP, "namespace": SLURM_NAMESPACE},
        "data": {"enroot.conf": enroot_conf(PATHS), CREDENTIALS_KEY: credentials([registry])},
    }


def slurmd_volumes() -> list[dict]:
    # Read by each user's enroot: readable by all, as /etc/enroot's own files are. Neither file
    # holds a secret.
    return [
        {"name": NODE_LOCAL_VOLUME, "emptyDir": {}},
        {"name": ENROOT_VOLUME, "configMap": {"name": ENROOT_CONFIGMAP, "defaultMode": 0o444}},
        {
            "name": CREDENTIALS_VOLUME,
            "configMap": {
                "name": ENROOT_CONFIGMAP,
                "items": [{"key": CREDENTIALS_KEY, "path": CREDENTIALS_FILE}],
                "defaultMode": 0o444,
            },
        },
    ]


def slurmd_mounts() -> list[dict]:
    return [
        {"name": NODE_LOCAL_VOLUME, "mountPath": NODE_LOCAL_MOUNT},
        {"name": ENROOT_VOLUME, "mountPath": ENROOT_CONF, "subPath": "enroot.conf", "readOnly": True},
        {"name": CREDENTIALS_VOLUME, "mountPath": CLUSTER_CONFIG_DIR, "readOnly": True},
    ]


def slurmd_env(registry: EcrRegistry) -> dict:
    return {"name": HASH_ENV, "value": enroot_conf_hash(registry)}
