"""Container jobs: the two files that turn `srun --container-image=...` on, rendered from paths so
the product (model/builders/slurm_values.py) and the real-Slurm test cluster (tests/slurm/) render
them the same way, each with its own directories.

plugstack.conf: one plain `required` line naming pyxis's plugin. slurmctld serves plugstack.conf to
every node in configless mode but not a file it `include`s, and a glob `include` makes slurmctld log
errors (seen on the real Slurm 26.05.5 test cluster, tests/support/local_slurm.py), so the line is
in plugstack.conf itself and the plugin file is in every image that runs srun or slurmd.
`required`: a node where pyxis cannot load refuses the step rather than running it outside its
container (https://slurm.schedmd.com/spank.html#SECTION_CONFIGURATION, "required"/"optional").

enroot.conf: enroot reads /etc/enroot/enroot.conf (its ENROOT_SYSCONF_PATH) before anything else.
pyxis runs enroot with the job's environment less a deny list that holds ENROOT_RUNTIME_PATH,
ENROOT_DATA_PATH, ENROOT_TEMP_PATH and ENROOT_CACHE_PATH (NVIDIA/pyxis v0.24.0 pyxis_slurmstepd.c,
enroot_deny_env), and enroot gives the environment precedence over its file (NVIDIA/enroot v4.1.2
enroot.in config::export; doc/configuration.md), so the paths are set here and a job cannot move
them; every other ENROOT_* setting is the job's own to set. enroot expands each value with `eval
echo` (enroot.in config::load), so `$(id -u)` names each user's own directory. enroot makes its
directories with `mkdir -p` under umask 077 and never checks who owns them (enroot.in, after
config::fini), so no user may be able to make another's first: the per-user runtime and data
directories are made for the job's user by the root Prolog (prolog_script) inside parents only root
may write (node_local_tree, made by the NodeSet pod's init container before slurmd starts).
- runtime (ENROOT_RUNTIME_PATH: the running containers' state), data (ENROOT_DATA_PATH: unpacked
  root filesystems) and temp (ENROOT_TEMP_PATH: a layer being converted) on the node-local disk:
  the instance-store NVMe where the type has it, the root volume where not;
- the layer cache (ENROOT_CACHE_PATH) is not set: enroot's default, $XDG_CACHE_HOME/enroot or
  ~/.cache/enroot (enroot.in), which pyxis resolves from the job's HOME, is in each user's 0700
  home on /shared (components/user_identities.py), so the nodes of a multi-node step share one
  copy of a user's layers and no other user can add to it;
- config (ENROOT_CONFIG_PATH), where given: where enroot reads `.credentials` (netrc format, a
  password starting with `$` is command-substituted: NVIDIA/enroot v4.1.2 doc/cmd/import.md), so a
  registry's login can be the cluster's. Not given, it stays enroot's default, each user's own
  ~/.config/enroot.
(NVIDIA/enroot v4.1.2 doc/configuration.md lists each setting and its default.)

.credentials: the cluster's registry logins (`credentials`), one line per registry the stack knows:
the account's ECR registry in the stack's region, whose password a helper in the image prints at
each import from the slurmd pod's own EKS Pod Identity role (image/ecr-password.sh; the role may
only pull, and only from repositories tagged for the cluster: `registry_pull_policy`). An image URI that names no user takes the login of its
registry's line (NVIDIA/enroot v4.1.2 src/docker.sh docker::_parse_uri, "Try to infer the user from
the credential file"), and ECR answers Basic auth, which enroot meets with that line
(docker::_authenticate), so `srun --container-image=<account>.dkr.ecr.<region>.amazonaws.com/<repo>:<tag>`
needs nothing in the user's home. pyxis runs enroot with the job's environment, not slurmstepd's
(NVIDIA/pyxis v0.24.0 pyxis_slurmstepd.c slurm_clear_env), so the Pod Identity variables the webhook
puts in the slurmd container do not reach the helper: the line hands it the agent's address and the
token file's path (POD_IDENTITY_AGENT, POD_IDENTITY_TOKEN).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Sequence

from model.facts.contract import SCRIPT_PATH, SLURM_NAMESPACE

# Where pyxis's Debian package puts its SPANK plugin (NVIDIA/pyxis v0.24.0 debian/rules: libdir
# /usr/lib/<multiarch>): Slinky's login-pyxis image has it there, and image/Dockerfile installs it
# there in the slurmd image, so one line names it on the login pod and on every worker.
PYXIS_PLUGIN = "/usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so"
# enroot's system configuration directory as its packages build it (ENROOT_SYSCONF_PATH=/etc/enroot:
# NVIDIA/enroot v4.1.2 Makefile, sysconfdir), and the file in it it reads first.
ENROOT_SYSCONF_DIR = "/etc/enroot"
ENROOT_CONF = f"{ENROOT_SYSCONF_DIR}/enroot.conf"

# Each user's own subdirectory of a node-local parent: `user-<uid>`, as enroot evaluates it at every
# run (`$(id -u)`) and as the Prolog makes it for the job's user (SLURM_JOB_UID).
_PER_USER_PREFIX = "user-"
_PER_USER = f"{_PER_USER_PREFIX}$(id -u)"
# Where image/Dockerfile installs image/ecr-password.sh: run by each job's user, so readable and
# executable by all.
ECR_PASSWORD_HELPER = "/usr/local/bin/ecr-password.sh"
# The cluster's enroot configuration directory (ENROOT_CONFIG_PATH): its `.credentials`, a
# ConfigMap mounted read-only in every slurmd pod. Beside enroot.conf, apart from the system
# directories enroot reads anyway (hooks.d, mounts.d, environ.d under /etc/enroot: NVIDIA/enroot
# v4.1.2 src/runtime.sh), so nothing there is read twice.
CLUSTER_CONFIG_DIR = f"{ENROOT_SYSCONF_DIR}/cluster"
CREDENTIALS_FILE = ".credentials"
# Where EKS Pod Identity's agent answers a pod on its node, and where the webhook mounts the pod's
# token: the values it gives AWS_CONTAINER_CREDENTIALS_FULL_URI and
# AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (Amazon EKS user guide, "Understand how EKS Pod Identity
# works": https://docs.aws.amazon.com/eks/latest/userguide/pod-id-how-it-works.html;
# aws/amazon-eks-pod-identity-webhook pkg/handler/handler.go). The IPv4 address: the stack's
# clusters are IPv4.
POD_IDENTITY_AGENT = "http://169.254.170.23/v1/credentials"
POD_IDENTITY_TOKEN = "/var/run/secrets/pods.eks.amazonaws.com/serviceaccount/eks-pod-identity-token"
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
    """Where enroot keeps what: `local` is a node-local directory (enroot's runtime, data and temp
    under <local>/enroot), `config` the directory holding `.credentials` (None: enroot's default,
    the user's own)."""

    local: str
    config: str | None = None

    @property
    def root(self) -> str:
        return f"{self.local}/enroot"

    @property
    def runtime(self) -> str:
        return f"{self.root}/runtime"

    @property
    def data(self) -> str:
        return f"{self.root}/data"

    @property
    def temp(self) -> str:
        return f"{self.root}/tmp"


def plugstack_conf(pyxis_plugin: str = PYXIS_PLUGIN) -> str:
    """plugstack.conf: pyxis, required, with its defaults but for its runtime directory, on the
    node-local disk (PYXIS_RUNTIME_PATH) (NVIDIA/pyxis v0.24.0 README, "Slurm plugstack
    configuration"; config.c, the arguments it reads)."""
    return f"required {pyxis_plugin} runtime_path={PYXIS_RUNTIME_PATH}\n"


def enroot_conf(paths: EnrootPaths) -> str:
    """enroot.conf: each user's runtime and data under the node-local directory, the shared temp
    directory beside them, and the credentials directory where one is given."""
    lines = {
        "ENROOT_RUNTIME_PATH": f"{paths.runtime}/{_PER_USER}",
        "ENROOT_DATA_PATH": f"{paths.data}/{_PER_USER}",
        # enroot makes no temp directory of its own (only `mktemp -d -p` in it: src/common.sh), so
        # this one is the shared sticky directory itself, as /tmp is.
        "ENROOT_TEMP_PATH": paths.temp,
    }
    if paths.config is not None:
        lines["ENROOT_CONFIG_PATH"] = paths.config
    return "".join(f"{key} {value}\n" for key, value in lines.items())


def credentials(registries: Sequence[EcrRegistry]) -> str:
    """The cluster's `.credentials`: one line per registry (credentials_line), each calling the
    helper with the pod's Pod Identity agent and token file."""
    return "".join(credentials_line(r.host, r.region, r.endpoint) for r in registries)


def credentials_line(
    host: str,
    region: str,
    endpoint: str,
    agent: str = POD_IDENTITY_AGENT,
    token_file: str = POD_IDENTITY_TOKEN,
) -> str:
    """One registry's line: its host, ECR's fixed login `AWS`, and a password enroot takes from the
    helper's output at each import (a password field that starts with `$` is command-substituted:
    NVIDIA/enroot v4.1.2 src/common.sh common::evalnetrc; ECR's user name:
    https://docs.aws.amazon.com/AmazonECR/latest/userguide/registry_auth.html), the helper asking
    ECR's API at `endpoint` in `region` with the credentials `agent` gives for `token_file`. No
    secret is in the file: a password lives 12 hours (the same page) and is fetched when needed.
    The real-Slurm test renders its own registry's line here, with stand-ins for the agent and
    ECR (tests/slurm/test_containers.py)."""
    return f"machine {host} login AWS password $({ECR_PASSWORD_HELPER} {region} {endpoint} {agent} {token_file})\n"


# ECR's actions that read an image: the token (GetAuthorizationToken, which ECR grants on "*"
# only), the manifest (BatchGetImage) and the layers (GetDownloadUrlForLayer,
# BatchCheckLayerAvailability), all of access level Read. Service Authorization Reference, Amazon
# ECR (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonelasticcontainerregistry.html):
# GetAuthorizationToken has no resource type; the others act on `repository`, here the account's
# repositories in the stack's region that carry REGISTRY_TAG for the cluster.
PULL_ACTIONS = ("ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer")


# The repository tag that opens a repository to the cluster's container jobs, its value the
# cluster's name: the role pulls only from repositories that carry it (tag-based access control:
# Amazon ECR user guide, "Using Tag-Based Access Control",
# https://docs.aws.amazon.com/AmazonECR/latest/userguide/ecr-supported-iam-actions-tagging.html;
# aws:ResourceTag on the repository resource type: Service Authorization Reference, Amazon ECR).
# Any job user can use the role's keys (docs/security.md, "Container jobs"), so a repository is
# readable by them only when its owner says so.
REGISTRY_TAG = "slinky-eks/container-jobs"


def registry_pull_policy(registry: EcrRegistry, cluster: str) -> dict:
    """The slurmd pods' role: pull the images of the account's repositories in the stack's region
    that are tagged for this cluster's jobs, nothing else (no push, no untagged repository, no other
    region or account, no other service)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "ecr:GetAuthorizationToken", "Resource": "*"},
            {
                "Effect": "Allow",
                "Action": list(PULL_ACTIONS),
                "Resource": f"arn:{registry.partition}:ecr:{registry.region}:{registry.account}:repository/*",
                "Condition": {"StringEquals": {f"aws:ResourceTag/{REGISTRY_TAG}": cluster}},
            },
        ],
    }


# The cluster's own directories (model/builders/slurm_values.py mounts them into every slurmd).
# Node-local: an emptyDir. On a type with NVMe instance store the kubelet's directory, where
# emptyDirs live, is on the node's NVMe RAID0: nodeadm's localStorage runs setup-local-disks, which
# copies /var/lib/kubelet (and containerd's store) onto the array it mounts at /mnt/k8s-disks/0 and
# bind-mounts it back in place (awslabs/amazon-eks-ami v20260724
# templates/al2023/runtime/bin/setup-local-disks, maybe_raid and BIND_MOUNTS;
# model/builders/node_templates.py local_storage_node_config). Elsewhere it is on the root volume.
# An emptyDir rather than a hostPath: no host directory is opened to the pod, and it is emptied with
# the pod. The kubelet makes an emptyDir's directory mode 0777, not sticky (kubernetes/kubernetes
# pkg/volume/emptydir/empty_dir.go: `const perm os.FileMode = 0777`, setupDir), where any user
# could rename or replace what root later walks: the init container (node_local_script) closes it
# before slurmd starts.
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
# Registry logins are the cluster's (CLUSTER_CONFIG_DIR), from the pod's own role, not the node's:
# pods do not reach IMDS (hop limit 1, docs/decisions/imds-hop-limit.md), and the node role would
# let any job user act as the node in Kubernetes (docs/security.md, "Container jobs").
PATHS = EnrootPaths(local=NODE_LOCAL_MOUNT, config=CLUSTER_CONFIG_DIR)
ENROOT_CONFIGMAP = "enroot-config"
ENROOT_VOLUME = "enroot-config"
CREDENTIALS_KEY = "credentials"
CREDENTIALS_VOLUME = "enroot-credentials"
HASH_ENV = "SLINKY_EKS_ENROOT_CONF"
# The NodeSet pod's init container that makes the node-local tree (init_container).
INIT_CONTAINER = "node-local"
# The scripts' names under prologScripts and epilogScripts (the chart stores each as
# prolog-<name>/epilog-<name> and the operator lists it in slurm.conf: SlinkyProject/slurm-operator
# v1.2.1 internal/builder/controllerbuilder/controller_config.go).
PROLOG_SCRIPT = "containers.sh"
EPILOG_SCRIPT = "job-scratch.sh"


def node_local_tree(
    paths: EnrootPaths = PATHS, job_scratch: str = JOB_SCRATCH
) -> tuple[tuple[str, int], ...]:
    """The node-local directories made before any job, parents first, each root's with its mode:
    none a user may write but enroot's temp directory (sticky, as /tmp: enroot only `mktemp -d`s
    there), so no user can create or rename an entry that root or another user's enroot later
    walks. The scratch parent may be passed through (0711), not listed."""
    return (
        (paths.local, 0o755),
        (paths.root, 0o755),
        (paths.runtime, 0o755),
        (paths.data, 0o755),
        (paths.temp, 0o1777),
        (job_scratch, 0o711),
    )


def node_local_lock(paths: EnrootPaths = PATHS) -> str:
    """The file the Prolog and Epilog lock (flock(1)), root's and 0600 in the root-owned node-local
    directory: no user can open it, so no user's job can hold the lock and stall other jobs'
    Prologs and Epilogs (a directory every user can read could be locked by any of them)."""
    return f"{paths.local}/.slinky-eks.lock"


def node_local_script(paths: EnrootPaths = PATHS, job_scratch: str = JOB_SCRATCH) -> str:
    """The init container's script: node_local_tree made (or set again, in a pod whose volume
    outlived a restart) root's with its modes. `chown 0:0` needs no capability on the kubelet's own
    root-owned directory (chown(2): an owner may set the owner it has), and fails the pod, rather
    than running jobs on an open tree, on one that is not."""
    steps = [
        f"mkdir -p {d} && chown 0:0 {d} && chmod {mode:o} {d}"
        for d, mode in node_local_tree(paths, job_scratch)
    ]
    lock = node_local_lock(paths)
    steps.append(f": > {lock} && chown 0:0 {lock} && chmod 600 {lock}")
    return f"set -eu; PATH={SCRIPT_PATH}; " + "; ".join(steps)


def init_container(
    image: str, security: dict, paths: EnrootPaths = PATHS, job_scratch: str = JOB_SCRATCH
) -> dict:
    """The NodeSet pod's init container, of the slurmd image, as root (the image's user) with the
    given security context: the node-local tree made before slurmd, and so any job, starts. The
    operator appends the podSpec's init containers to its own (SlinkyProject/slurm-operator v1.2.1
    internal/builder/common/pod_template.go BuildPodTemplate)."""
    return {
        "name": INIT_CONTAINER,
        "image": image,
        "command": ["sh", "-c", node_local_script(paths, job_scratch)],
        "securityContext": dict(security),
        "volumeMounts": [{"name": NODE_LOCAL_VOLUME, "mountPath": paths.local}],
    }


def _tree_check(paths: EnrootPaths, job_scratch: str) -> str:
    """Shell lines that exit 1 unless every directory of the tree is a directory (not a link),
    root's, with its mode."""
    checks = " &&\n  ".join(f'as_made {d} "0 {mode:o}"' for d, mode in node_local_tree(paths, job_scratch))
    lock = node_local_lock(paths)
    return (
        'as_made() { [ -d "$1" ] && [ ! -L "$1" ] && [ "$(stat -c \'%u %a\' "$1")" = "$2" ]; }\n'
        f'{checks} &&\n  [ -f {lock} ] && [ ! -L {lock} ] && [ "$(stat -c \'%u %a\' {lock})" = "0 600" ]'
        f" || {{ echo 'slinky-eks: {paths.local} is not as the init container made it' >&2; exit 1; }}\n"
    )


def prolog_script(paths: EnrootPaths = PATHS, job_scratch: str = JOB_SCRATCH) -> str:
    """The workers' Prolog (root, in the slurmd container, before a job's first step on the node:
    https://slurm.schedmd.com/prolog_epilog.html): the job user's enroot runtime and data
    directories (0700, theirs) and the job's scratch directory (0700, theirs), each made in a
    directory only root may write, so no path it walks can be a user's link. It checks the tree
    first and refuses a node where it is not as made: a Prolog that exits non-zero drains the node
    (slurm.conf(5) Prolog). A user directory that is a link or another's is refused the same way;
    only root can make either. A directory it cannot make (a full disk, which any job can cause) is
    said on its log and the job runs without it: draining the node for it would let one user take
    nodes from everyone. It touches nothing on /shared. One Prolog or Epilog at a time per node
    holds the lock (node_local_lock), so two jobs of one user starting together do not race to make
    the same directory, and an Epilog does not remove one a starting job needs."""
    per_user = f"{_PER_USER_PREFIX}$SLURM_JOB_UID"
    return f"""#!/bin/sh
# slinky-eks: the job's enroot directories and scratch (model/builders/containers.py).
PATH={SCRIPT_PATH}
case "$SLURM_JOB_ID$SLURM_JOB_UID$SLURM_JOB_GID" in *[!0-9]*) exit 1 ;; esac
[ -n "$SLURM_JOB_ID" ] && [ -n "$SLURM_JOB_UID" ] && [ -n "$SLURM_JOB_GID" ] || exit 1
{_tree_check(paths, job_scratch)}exec 9<{node_local_lock(paths)} && flock 9 || exit 1
for parent in {paths.runtime} {paths.data}; do
  d="$parent/{per_user}"
  if [ ! -e "$d" ] && [ ! -L "$d" ]; then
    mkdir -m 0700 "$d" && chown "$SLURM_JOB_UID:$SLURM_JOB_GID" "$d" || {{
      echo "slinky-eks: could not make $d (is the node-local disk full?)" >&2; exit 0; }}
  fi
  [ -d "$d" ] && [ ! -L "$d" ] && [ "$(stat -c %u "$d")" = "$SLURM_JOB_UID" ] || {{
    echo "slinky-eks: $d is not the job user's directory" >&2; exit 1; }}
done
scratch={job_scratch}/"$SLURM_JOB_ID"
rm -rf "$scratch" && mkdir -m 0700 "$scratch" && chown "$SLURM_JOB_UID:$SLURM_JOB_GID" "$scratch" || {{
  echo "slinky-eks: could not make $scratch (is the node-local disk full?)" >&2; exit 0; }}
exit 0
"""


def epilog_script(paths: EnrootPaths = PATHS, job_scratch: str = JOB_SCRATCH) -> str:
    """The workers' Epilog (root, on each of the job's nodes when it ends): the job's scratch
    directory removed, and when the user has no other job on the node (no other scratch directory
    of theirs: each of their jobs here has one from its Prolog to its Epilog), their enroot runtime
    and data directories and their entries in enroot's temp directory too, so nothing a user wrote
    on the node-local disk outlives their last job there. Named containers
    (`--container-name`) therefore last while the user has a job on the node. Always 0: an Epilog
    that fails drains the node, and a directory left behind is only disk space, reclaimed with the
    pod."""
    per_user = f"{_PER_USER_PREFIX}$SLURM_JOB_UID"
    return f"""#!/bin/sh
# slinky-eks: the job's scratch, and the user's enroot directories after their last job here (model/builders/containers.py).
PATH={SCRIPT_PATH}
case "$SLURM_JOB_ID" in ''|*[!0-9]*) exit 0 ;; esac
case "$SLURM_JOB_UID" in ''|*[!0-9]*) exit 0 ;; esac
[ -f {node_local_lock(paths)} ] && exec 9<{node_local_lock(paths)} && flock 9 || exit 0
rm -rf {job_scratch}/"$SLURM_JOB_ID"
if [ -z "$(find {job_scratch} -mindepth 1 -maxdepth 1 -user "$SLURM_JOB_UID" -print -quit)" ]; then
  rm -rf {paths.runtime}/{per_user} {paths.data}/{per_user}
  find {paths.temp} -mindepth 1 -maxdepth 1 -user "$SLURM_JOB_UID" -exec rm -rf {{}} +
fi
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
