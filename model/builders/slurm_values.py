"""The Slurm release's computed values: what depends on the stack's config and on other resources
(chart_release merges them over the reviewed base, charts-values/slurm.yaml). Pure functions;
tests walk the release's values against chart 1.2.1's defaults and check what the chart renders
from them (tests/charts/test_rendered_charts.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from model.builders import containers, identities, job_environment, login_sshd, metrics, node_health
from model.builders.scheduling import SchedulingPolicy
from model.builders.scheduling import slurm_conf as scheduling_conf
from model.checks.gpu_pools import ALL_POOLS_PARTITION, GpuPool, pool_labels
from model.checks.image_digests import LOGIN_IMAGE
from model.checks.users import User
from model.facts import versions
from model.facts.catalog import GpuInstanceType
from model.facts.contract import (
    ACCOUNTING_CA_CONFIGMAP,
    ACCOUNTING_CA_DIR,
    ACCOUNTING_CA_KEY,
    ACCOUNTING_DATABASE,
    ACCOUNTING_PASSWORD_KEY,
    ACCOUNTING_PORT,
    ACCOUNTING_USER,
    CORE_LABELS,
    EFA_RESOURCE,
    GPU_LABELS,
    GPU_RESOURCE,
    GPU_TOLERATION,
    IDENTITIES_CONFIGMAP,
    LOGINSET,
    SHARED_MOUNT,
    SHARED_MOUNT_OPTIONS,
    SHARED_MOUNT_OPTIONS_ENV,
    SSH_KEYS_CONFIGMAP,
)


@dataclass(frozen=True)
class SlurmValuesArgs:
    """Every field is required (no defaults)."""

    gpu_pools: Sequence[GpuPool]  # one NodeSet and one partition each
    image_repository: str  # the slurmd image's repository URL
    image_digest: str  # its sha256:<digest>: what the NodeSet runs
    image_tag: str  # its tag, rendered beside the digest
    ssh_public_key: str  # root's authorized key on the login pod; "" for no root login
    users: Sequence[User]  # the named users: their identities in the pods and their keys
    # The security context of the identities' init containers (model/builders/pod_security.py).
    init_security: dict
    shared_claim: str  # the /shared claim mounted by slurmd and login pods
    state_claim: str  # the controller's state claim (slurmctld's save-state directory)
    slurm_key_secret: str  # the Secret holding slurm.key (auth/slurm between daemons)
    jwt_key_secret: str  # the Secret holding jwt.key (auth/jwt: slurmrestd tokens)
    # The Slinky images (slurmctld, slurmrestd, slurmdbd, login) of the Slurm build the slurmd image
    # is built on, by name, each by digest as its registry resolved it at preview
    # (model/checks/image_digests.py ResolvedImages.slinky): the chart defaults to the floating
    # <major.minor>-<flavour> tag.
    slinky_images: Mapping[str, str]
    # The accounting database's address (AccountingDatabase.address) and the Secret holding its
    # password (AccountingDatabase.password_secret): slurmdbd's storage, by reference.
    accounting_host: str
    accounting_password_secret: str
    # Fair share and enforcement (model/builders/scheduling.py): in slurm.conf when accounting is enabled.
    scheduling: SchedulingPolicy
    # Metrics (docs/metrics.md): slurmctld's OpenMetrics endpoints and the DCGM job mapping (the `metrics` key).
    metrics: bool
    # The `Topology=` of each placed pool's partition, by pool (model/builders/topology.py
    # partition_topologies); a pool not listed takes the cluster default (flat), as every pool did.
    partition_topologies: Mapping[str, str]
    # The account's ECR registry in the stack's region: container jobs pull from it with the
    # cluster's login (model/builders/containers.py credentials).
    registry: containers.EcrRegistry


def gpu_resources(gpu: GpuInstanceType) -> dict:
    # A pod that does not request the EFA devices sees no /dev/infiniband and NCCL falls back to
    # sockets (https://docs.aws.amazon.com/eks/latest/userguide/device-management-efa.html): every
    # EFA interface of the node goes to its one slurmd.
    amounts = {GPU_RESOURCE: gpu.gpus, EFA_RESOURCE: gpu.efa_interfaces}
    return {"limits": dict(amounts), "requests": dict(amounts)}


def pool_partition(pool: GpuPool) -> str:
    """The Slurm partition of a pool's own nodes: named after the pool (`sbatch -p <pool>`)."""
    return pool.name


def partitions(pools: Sequence[GpuPool], topologies: Mapping[str, str]) -> dict:
    """One partition per pool, named after it; with several pools, the default partition `all`
    over every pool (with one, the pool's own partition is the default). A pool in `topologies`
    runs on that topology (the partition's Topology=, https://slurm.schedmd.com/slurm.conf.html#OPT_Topology);
    `all` spans pools with and without a place, so it keeps the cluster default (flat)."""
    up = {"MaxTime": "UNLIMITED", "State": "UP"}

    def placed(pool: GpuPool) -> dict:
        return {"Topology": topologies[pool.name]} if pool.name in topologies else {}

    if len(pools) == 1:
        (pool,) = pools
        return {
            pool_partition(pool): {
                "enabled": True,
                "nodesets": [pool.name],
                "configMap": {"Default": "YES", **up, **placed(pool)},
            }
        }
    out = {
        pool_partition(p): {"enabled": True, "nodesets": [p.name], "configMap": {**up, **placed(p)}}
        for p in pools
    }
    out[ALL_POOLS_PARTITION] = {
        "enabled": True,
        "nodesets": [p.name for p in pools],
        "configMap": {"Default": "YES", **up},
    }
    return out


# The core nodes carry slurmctld, slurmdbd, slurmrestd and the login pod, where users run what they
# like. Under memory pressure the kubelet evicts first the pods whose use exceeds their requests,
# then by priority, then by use over requests; a container over its memory limit is killed in its
# own cgroup before the node is short (https://kubernetes.io/docs/concepts/scheduling-eviction/
# node-pressure-eviction/#pod-selection-for-kubelet-eviction). So the daemons request what they
# use and run under a PriorityClass of their own, and the login pod has a memory limit: a user's
# memory hog is killed inside the login pod and never evicts the control plane. Sized for the
# default core type, m6i.2xlarge (8 vCPU, 32 GiB, Pulumi.yaml coreInstanceType): together they
# request 2 vCPU and 2.5 GiB of one node, and the login pod may use up to half its CPUs and a quarter
# of its memory.
CONTROL_PLANE_PRIORITY_CLASS = "slurm-control-plane"
# Above the default 0 of every other pod (no PriorityClass is globalDefault here), far below the
# system classes (2000000000 and up; user classes may go to 1000000000); `Never` preempts nothing
# at scheduling: the class only ranks the daemons last for eviction
# (https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/#priorityclass,
# #non-preempting-priority-class).
CONTROL_PLANE_PRIORITY = 1_000_000
RESOURCES = {
    # The chart's own example for slurmctld (slurm-1.2.1 values.yaml controller.slurmctld.resources).
    # No memory limit: slurmctld holds every job record in memory (MaxJobCount, MinJobAge:
    # https://slurm.schedmd.com/slurm.conf.html#OPT_MaxJobCount), and a limit would kill the
    # scheduler as the queue grows.
    "slurmctld": {"requests": {"cpu": "1", "memory": "1Gi"}},
    # slurmdbd and slurmrestd keep no state of their own (the database is RDS; slurmctld keeps the
    # records for slurmdbd while it restarts: https://slurm.schedmd.com/slurm.conf.html#OPT_MaxDBDMsgs),
    # so a memory limit only restarts them; the limits leave room for a large sacct query.
    "slurmdbd": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "2Gi"}},
    "slurmrestd": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
    # Users' shells, builds and sbatch: a floor to log in with, and a ceiling on one node's share.
    "login": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}},
}


def control_plane_priority_class() -> dict:
    """The PriorityClass of slurmctld, slurmdbd and slurmrestd (components/slurm_cluster.py makes it)."""
    return {
        "metadata": {"name": CONTROL_PLANE_PRIORITY_CLASS},
        "value": CONTROL_PLANE_PRIORITY,
        "preemption_policy": "Never",
        "global_default": False,
        "description": "Slurm's daemons (slurmctld, slurmdbd, slurmrestd): evicted after the login pod "
        "and anything else on the core nodes.",
    }


def _control_plane_pod(pod_spec: dict) -> dict:
    """A daemon's podSpec with the control plane's priority and the container runtime's default
    seccomp profile."""
    return {
        **pod_spec,
        "priorityClassName": CONTROL_PLANE_PRIORITY_CLASS,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
    }


def shared_mount_options_env() -> dict:
    """/shared's mount options in the template of each pod that mounts it: the EFS CSI driver
    applies them only when it mounts the volume for a new pod (kubernetes-sigs/aws-efs-csi-driver
    v3.4.1 pkg/driver/node.go, NodePublishVolume), so a change rolls those pods, which then mount
    with them."""
    return {"name": SHARED_MOUNT_OPTIONS_ENV, "value": ",".join(SHARED_MOUNT_OPTIONS)}


# The slurmdbd pod's volume with the RDS CA bundle (ACCOUNTING_CA_CONFIGMAP).
ACCOUNTING_CA_VOLUME = "accounting-ca"


def storage_parameters() -> str:
    """slurmdbd.conf's StorageParameters: TLS to the database, the server's certificate verified
    against the RDS CA bundle (slurmdbd.conf(5) of Slurm 26.05, StorageParameters: SSL_CERT,
    SSL_CA, SSL_CAPATH, SSL_KEY, SSL_CIPHER; SchedMD/slurm doc/man/man5/slurmdbd.conf.5, tag
    slurm-26-05-3-1). No client certificate: RDS authenticates by password."""
    return f"SSL_CA={ACCOUNTING_CA_DIR}/{ACCOUNTING_CA_KEY}"


def accounting(a: SlurmValuesArgs) -> dict:
    """slurmdbd on the core nodes, storing into the RDS database; the password only by reference.
    The operator builds its pod as the slurm user, non-root, with no service account token
    (SlinkyProject/slurm-operator v1.2.1 internal/builder/accountingbuilder/accounting_app.go); the
    container and pod settings here are merged over that (strategic merge: common/container.go,
    common/pod_template.go), adding what the operator leaves out. slurmdbd writes only its pid file,
    on the operator's own volume (LogFile=/dev/null: accounting_config.go), so its root can be
    read-only (the image runs `slurmdbd -D` under tini and nothing else: SlinkyProject/containers
    schedmd/slurm/26.05/ubuntu24.04/Dockerfile, target slurmdbd).

    It connects as its own user (ACCOUNTING_USER, not the RDS master user) and over TLS, verifying
    the server against the region's RDS CA bundle mounted from its ConfigMap: the database refuses
    anything else (components/accounting_database.py)."""
    return {
        "enabled": True,
        "slurmdbd": {
            "image": a.slinky_images["slurmdbd"],
            "resources": RESOURCES["slurmdbd"],
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "capabilities": {"drop": ["ALL"]},
            },
            "volumeMounts": [
                {"name": ACCOUNTING_CA_VOLUME, "mountPath": ACCOUNTING_CA_DIR, "readOnly": True}
            ],
        },
        # The operator appends it to the slurmdbd.conf it writes (### EXTRA CONFIG ###:
        # accountingbuilder/accounting_config.go buildSlurmdbdConf at v1.2.1).
        "extraConf": f"StorageParameters={storage_parameters()}",
        "storageConfig": {
            "host": a.accounting_host,
            "port": ACCOUNTING_PORT,
            "database": ACCOUNTING_DATABASE,
            "username": ACCOUNTING_USER,
            "passwordKeyRef": {"name": a.accounting_password_secret, "key": ACCOUNTING_PASSWORD_KEY},
        },
        "podSpec": _control_plane_pod(
            {
                "nodeSelector": dict(CORE_LABELS),
                "volumes": [{"name": ACCOUNTING_CA_VOLUME, "configMap": {"name": ACCOUNTING_CA_CONFIGMAP}}],
            }
        ),
    }


def slurm_values(a: SlurmValuesArgs) -> dict:
    shared_volume = {"name": "shared", "persistentVolumeClaim": {"claimName": a.shared_claim}}
    shared_mount = {"name": "shared", "mountPath": SHARED_MOUNT}
    # The named users' entries, only where there are users: a stack without them renders as before.
    named = bool(a.users)
    worker_mounts = [identities.entries_mount()] if named else []
    worker_volumes = [identities.entries_volume(IDENTITIES_CONFIGMAP)] if named else []

    def nodeset(pool: GpuPool) -> dict:
        return {
            "enabled": True,
            # An autoscaling pool's NodeSet is written at its floor, a value that changes only with
            # minNodes: Helm patches a custom resource with a two-way merge of the old and new
            # manifests (helm/helm#9937), so an `up` that leaves minNodes alone never sends
            # `replicas` and the count KEDA set stays (docs/scaling.md).
            "replicas": pool.initial_nodes,
            "slurmd": {
                "image": {"repository": a.image_repository, "tag": a.image_tag, "digest": a.image_digest},
                "env": [shared_mount_options_env(), containers.slurmd_env(a.registry)],
                "resources": gpu_resources(pool.gpu),
                "volumeMounts": [
                    shared_mount,
                    {"name": "dshm", "mountPath": "/dev/shm"},
                    node_health.mount(),
                    node_health.state_mount(),
                    # Container jobs' enroot.conf and the node-local disk (enroot, job scratch).
                    *containers.slurmd_mounts(),
                    *worker_mounts,
                ],
            },
            # The type must be what slurmd autodetects, or GRES is (null) (catalog.gres_type).
            "extraConfMap": {"Gres": [pool.gpu.gres]},
            # The pool's partition comes from `partitions` (partitions()).
            "partition": {"enabled": False},
            "podSpec": {
                # The service account EKS Pod Identity hands the registry role to: its credentials
                # are what enroot's .credentials line signs with (model/builders/containers.py).
                # No Kubernetes API token: the operator's own default (SlinkyProject/slurm-operator
                # v1.2.1 internal/builder/workerbuilder/worker_app.go), said here as well; Pod
                # Identity's token is a projected volume of its own.
                "serviceAccountName": containers.SLURMD_SERVICE_ACCOUNT,
                "automountServiceAccountToken": False,
                # The node-local tree made root's before slurmd starts (model/builders/containers.py),
                # by the slurmd image itself, as the nodes run it (<repository>@<digest>).
                "initContainers": [
                    containers.init_container(f"{a.image_repository}@{a.image_digest}", a.init_security)
                ],
                "nodeSelector": {**GPU_LABELS, **pool_labels(pool, a.gpu_pools)},
                # Tolerations replace the operator's defaults rather than merge.
                "tolerations": [dict(GPU_TOLERATION)],
                # NCCL's shared-memory transport needs more than the container's 64 MiB /dev/shm.
                # The health check and this pool's expectations, and the node's directory for the
                # check's Xid cursor (model/builders/node_health.py).
                "volumes": [
                    shared_volume,
                    {"name": "dshm", "emptyDir": {"medium": "Memory"}},
                    node_health.volume(pool),
                    node_health.state_volume(),
                    *containers.slurmd_volumes(),
                    *worker_volumes,
                ],
            },
        }

    # Each Slinky image as a string, tag and digest: given an object with a digest the chart drops
    # the tag (templates/_helpers.tpl slurm.format-image), and a string is used as it is.
    slurmctld = a.slinky_images["slurmctld"]
    sidecar = {"image": versions.SIDECAR_IMAGE}  # a string: tag and digest (versions.py)
    values = {
        # Pinned references only (the slurmd image by digest), so a pod starts from the node's
        # cache when the image is there: the pre-pull DaemonSet (image_prepull.py) puts it there.
        "imagePullPolicy": "IfNotPresent",
        # Keys made by the program and passed by reference: the chart would otherwise generate
        # random ones, and its Secrets are immutable.
        "slurmKey": {"create": False, "secretRef": {"name": a.slurm_key_secret, "key": "slurm.key"}},
        "jwtKey": {"create": False, "secretRef": {"name": a.jwt_key_secret, "key": "jwt.key"}},
        "controller": {
            # Pulumi owns the gp3 claim, so destroy deletes it (and its EBS volume); a claim from
            # the StatefulSet's template would outlive the release.
            "persistence": {"existingClaim": a.state_claim},
            "podSpec": _control_plane_pod({"nodeSelector": dict(CORE_LABELS)}),
            # slurmd runs the node health check (model/builders/node_health.py); merged over the base's lines.
            "extraConfMap": node_health.slurm_conf(),
            "slurmctld": {"image": slurmctld, "resources": RESOURCES["slurmctld"]},
            "reconfigure": {"image": slurmctld},
            "logfile": sidecar,
        },
        "accounting": accounting(a),
        "restapi": {
            "podSpec": _control_plane_pod({"nodeSelector": dict(CORE_LABELS)}),
            "slurmrestd": {
                "image": a.slinky_images["slurmrestd"],
                "resources": RESOURCES["slurmrestd"],
            },
        },
        # One NodeSet per GPU pool, named after it: Slurm nodes <pool>-0, <pool>-1, ... (slinky-0
        # for the default pool).
        "nodesetDefaults": {"logfile": sidecar},
        "nodesets": {pool.name: nodeset(pool) for pool in a.gpu_pools},
        "partitions": partitions(a.gpu_pools, a.partition_topologies),
        # pyxis on every node that runs srun or slurmd (model/builders/containers.py) and PMIx's
        # settings for PMIx steps (model/builders/job_environment.py): slurmctld serves both files
        # to them configless. Merged over the base's configFiles.
        "configFiles": {
            "plugstack.conf": containers.plugstack_conf(),
            job_environment.MPI_CONF: job_environment.mpi_conf(),
        },
        # The job user's enroot directories and the job's scratch on the node-local disk: made
        # before a job's first step, removed when it ends (model/builders/containers.py).
        "prologScripts": {containers.PROLOG_SCRIPT: containers.prolog_script()},
        "epilogScripts": {containers.EPILOG_SCRIPT: containers.epilog_script()},
        # The login sshd's drop-in, and enroot.conf with the cluster's .credentials, rendered by the
        # release with the pods that mount them.
        "extraObjects": [login_sshd.configmap(), containers.configmap(a.registry)],
        "loginsetDefaults": {"initconf": sidecar},
        "loginsets": {
            LOGINSET: {
                "enabled": True,
                "replicas": 1,
                "rootSshAuthorizedKeys": a.ssh_public_key + "\n",
                # sshd's own settings are a drop-in the operator's sshd_config includes first
                # (model/builders/login_sshd.py); its hash rolls the pod when it changes.
                "login": {
                    "image": a.slinky_images[LOGIN_IMAGE],
                    "env": [login_sshd.hash_env(), shared_mount_options_env()],
                    "resources": RESOURCES["login"],
                    "volumeMounts": [shared_mount, login_sshd.mount()],
                },
                # sshd as root with the runtime's default capabilities (SYS_CHROOT for its privilege
                # separation, SETUID/SETGID to become the user) under the container runtime's default
                # seccomp profile, which allows what those capabilities allow (the operator sets no context:
                # SlinkyProject/slurm-operator v1.2.1 internal/builder/loginbuilder/login_app.go;
                # https://kubernetes.io/docs/tutorials/security/seccomp/). No priority class: the
                # login pod is the one evicted first.
                "podSpec": {
                    "nodeSelector": dict(CORE_LABELS),
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "volumes": [shared_volume, login_sshd.volume()],
                },
                # The chart's default LoadBalancer would go to the in-tree cloud provider: a Classic
                # ELB with SSH open to 0.0.0.0/0. The program owns the login NLB instead.
                "service": {"spec": {"type": "ClusterIP"}},
            }
        },
    }
    if not a.ssh_public_key:
        del values["loginsets"][LOGINSET]["rootSshAuthorizedKeys"]
    if named:
        _add_identities(values, a)
    if a.metrics:
        _add_metrics(values)
    return with_scheduling(values, a.scheduling)


def _add_metrics(values: dict) -> None:
    """slurmctld's metrics on, its ServiceMonitor off (no Prometheus Operator: the AMP scraper's jobs,
    model/builders/metrics.py, take its place); and the chart's DCGM job mapping: a prolog and epilog on every
    slurmd writing/removing one file per allocated GPU holding the job id, in a host directory the
    chart mounts into every GPU NodeSet (slurm-1.2.1 values.yaml vendor.nvidia.dcgm,
    templates/vendor/nvidia/dcgm, _vendor/nvidia/dcgm/scripts), which the DCGM exporter reads
    (components/dcgm_exporter.py)."""
    values["controller"]["metrics"] = dict(metrics.CONTROLLER_METRICS_VALUES)
    values["vendor"] = {"nvidia": {"dcgm": {"enabled": True, "jobMappingDir": metrics.DCGM_JOB_MAPPING_DIR}}}


def with_scheduling(values: dict, policy: SchedulingPolicy) -> dict:
    """`values` with the scheduling policy's slurm.conf lines in controller.extraConfMap (merged
    key by key over the base's GresTypes and ReturnToService) when they enable accounting, and as
    they are without it: slurmctld refuses to start with AccountingStorageTRES=gres/gpu and no
    slurmdbd ("fatal: slurmdbd is required to run with TRES gres/gpu", seen on the test cluster),
    and ignores the fair-share and age weights (SchedMD/slurm src/plugins/priority/multifactor/
    priority_multifactor.c at slurm-26-05-3-1)."""
    if not (values.get("accounting") or {}).get("enabled"):
        return values
    controller = dict(values.get("controller") or {})
    controller["extraConfMap"] = {**(controller.get("extraConfMap") or {}), **scheduling_conf(policy)}
    return {**values, "controller": controller}


def _add_identities(values: dict, a: SlurmValuesArgs) -> None:
    """The named users into the login, controller and worker pods (model/builders/identities.py): merged
    entries in the login and controller pods, the entries' directory and the Prolog on the workers,
    the keys' directory and the sshd lines on the login pod."""
    entries = identities.entries_volume(IDENTITIES_CONFIGMAP)
    login = values["loginsets"][LOGINSET]
    login["extraSshdConfig"] = identities.sshd_config(root_login=bool(a.ssh_public_key))
    login["login"]["volumeMounts"] += [*identities.merged_mounts(), identities.keys_mount()]
    login["podSpec"]["initContainers"] = [
        identities.init_container(a.slinky_images[LOGIN_IMAGE], a.users, a.init_security)
    ]
    login["podSpec"]["volumes"] += [
        entries,
        identities.merged_volume(),
        identities.keys_volume(SSH_KEYS_CONFIGMAP),
    ]
    # slurmctld resolves each user's name to a UID for their associations (SchedMD/slurm
    # src/common/assoc_mgr.c, uid_from_string_cached, tag slurm-26-05-3-1): it needs the entries
    # too. The chart passes the container and pod spec through whole (templates/_helpers.tpl
    # slurm.format-container, slurm.format-podSpec), so the keys its values.yaml does not list
    # reach the Controller.
    controller = values["controller"]
    controller["slurmctld"]["volumeMounts"] = identities.merged_mounts()
    controller["podSpec"]["initContainers"] = [
        identities.init_container(a.slinky_images["slurmctld"], a.users, a.init_security)
    ]
    controller["podSpec"]["volumes"] = [entries, identities.merged_volume()]
    values["prologScripts"][identities.PROLOG_SCRIPT] = identities.prolog_script()
