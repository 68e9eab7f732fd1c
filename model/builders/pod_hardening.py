"""What every pod the program puts into the cluster is held to, and each accepted exception with
its reason and source: the data the security page cites, and what tests/graph/test_pod_hardening.py
and tests/charts/test_pod_hardening.py compare the program's pods and the rendered charts' pods
with. A pod that misses a rule without an entry here fails those tests; so does an entry whose
pod now keeps the rule (the exception is gone: remove it, and from the security page).

A workload is named `Kind/name` for the program's own pods (the name without the content hash a
Job's name ends in) and `<release>:Kind/name` for a chart's; the pod itself is container None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator, Optional

from model.facts.contract import SHARED_JOBS, SHARED_MOUNT, SHARED_WORK

# Rule -> what keeping it means.
RULES = {
    "seccomp": "the RuntimeDefault (or a Localhost) seccomp profile, on the pod or on the container",
    "drop-all": "capabilities: drop ALL, and none added",
    "no-escalation": "allowPrivilegeEscalation: false",
    "non-root": "runAsNonRoot: true (pod or container) and no runAsUser 0",
    "read-only-root": "readOnlyRootFilesystem: true",
    "unprivileged": "not privileged, and no host network, PID or IPC namespace",
    "no-token": "automountServiceAccountToken: false (the pod calls no Kubernetes API)",
}


@dataclass(frozen=True)
class Accepted:
    """Rules one pod or container does not keep, on purpose."""

    workload: str
    container: Optional[str]
    rules: frozenset[str]
    reason: str
    source: str


def _accepted(workload: str, container: Optional[str], rules: str, reason: str, source: str) -> Accepted:
    return Accepted(workload, container, frozenset(rules.split()), reason, source)


_CALLS_THE_API = "no-token"
ACCEPTED: tuple[Accepted, ...] = (
    # The program's own pods (components/).
    _accepted(
        "Job/stage-jobs",
        "copy",
        "non-root drop-all",
        f"Writes {SHARED_JOBS} and {SHARED_WORK} at the root of the EFS file system, which is owned "
        "by uid 0 with mode 755 (the PV mounts the file system's root, no access point), replaces "
        "files earlier copies wrote as root, and gives each named user's work directory under "
        f"{SHARED_WORK} to the user, a chown, which needs CAP_CHOWN. It runs as root with every "
        "capability dropped but CHOWN (added only for a stack with `users`), no escalation and a "
        "read-only root.",
        "components/shared_storage.py (_shared_claim); components/job_staging.py (staging_script); "
        "chown(2) (EPERM without CAP_CHOWN); "
        "https://docs.aws.amazon.com/efs/latest/ug/accessing-fs-nfs-permissions.html",
    ),
    _accepted(
        "Job/user-homes",
        "homes",
        "non-root drop-all",
        f"Makes each named user's home under {SHARED_MOUNT}/home and gives it to the user: the EFS root "
        "is owned by uid 0 with mode 755, and giving a directory to another uid is a chown, which "
        "needs CAP_CHOWN. It runs as root with CHOWN alone, no escalation and a read-only root; only "
        "for a stack with `users`.",
        "components/user_identities.py (homes_script); chown(2) (EPERM without CAP_CHOWN); "
        "https://docs.aws.amazon.com/efs/latest/ug/accessing-fs-nfs-permissions.html",
    ),
    _accepted(
        "Deployment/slurm-state-volume-guard",
        None,
        _CALLS_THE_API,
        "Reads the state claim and lists PersistentVolumes (a Role and a ClusterRole allowing only that).",
        "cluster_programs/state_volume_guard.py (Api.get); components/state_volume_guard.py (_read_access)",
    ),
    _accepted(
        "Deployment/slurm-network-topology",
        None,
        _CALLS_THE_API,
        "Lists and annotates the GPU nodes and writes topology.yaml into the chart's extra config "
        "ConfigMap (a ClusterRole on nodes, a Role on that one ConfigMap); only in a stack with a "
        "pool that has a network place.",
        "cluster_programs/network_topology.py (run_once); components/network_topology.py (_access)",
    ),
    _accepted(
        "Job/slurm-ready",
        None,
        _CALLS_THE_API,
        "Reads its NodeSet, lists pods and execs scontrol in the controller pod (a Role allowing only that).",
        "cluster_programs/rollout.py, cluster_programs/incluster.py; components/slurm_readiness.py (_access)",
    ),
    _accepted(
        "Job/accounting-registration",
        None,
        _CALLS_THE_API,
        "Execs sacctmgr in the controller pod (a Role allowing only that).",
        "cluster_programs/accounting_registration.py, cluster_programs/incluster.py; "
        "components/accounting_registration.py (_access)",
    ),
    # cert-manager v1.21.1: hardened by its chart's defaults; every pod is a client of the API.
    *(
        _accepted(
            f"cert-manager:{w}",
            None,
            _CALLS_THE_API,
            "cert-manager's controllers and its startup check work through the Kubernetes API.",
            "cert-manager/cert-manager v1.21.1 deploy/charts/cert-manager/templates (their RBAC)",
        )
        for w in (
            "Deployment/cert-manager",
            "Deployment/cert-manager-cainjector",
            "Deployment/cert-manager-webhook",
            "Job/cert-manager-startupapicheck",
        )
    ),
    _accepted(
        "aws-load-balancer-controller:Deployment/aws-load-balancer-controller",
        None,
        _CALLS_THE_API,
        "The controller reconciles Services and TargetGroupBindings through the API.",
        "aws/eks-charts stable/aws-load-balancer-controller 3.5.0 templates/rbac.yaml",
    ),
    # Only where a pool autoscales (docs/scaling.md): both hardened by the chart's defaults (KEDA)
    # or charts-values/cluster-autoscaler.yaml, and clients of the API.
    _accepted(
        "cluster-autoscaler:Deployment/cluster-autoscaler",
        None,
        _CALLS_THE_API,
        "cluster-autoscaler watches pods and nodes and evicts pods from nodes it empties.",
        "kubernetes/autoscaler cluster-autoscaler/charts/cluster-autoscaler 9.59.0 templates/clusterrole.yaml",
    ),
    *(
        _accepted(
            f"keda:Deployment/{w}",
            None,
            _CALLS_THE_API,
            "KEDA's operator scales the NodeSets and keeps their HPAs; its metrics server answers the "
            "HPA through the API's aggregation layer; its webhook validates ScaledObjects.",
            "kedacore/charts v2.20.2 keda/templates (manager, metrics-server, webhooks: their RBAC)",
        )
        for w in ("keda-operator", "keda-operator-metrics-apiserver", "keda-admission-webhooks")
    ),
    _accepted(
        "slurm-operator:Deployment/slurm-operator",
        None,
        _CALLS_THE_API,
        "The operator reconciles the Slinky custom resources into pods through the API.",
        "SlinkyProject/slurm-operator v1.2.1 helm/slurm-operator/templates/operator/rbac.yaml",
    ),
    _accepted(
        "slurm-operator:Deployment/slurm-operator-webhook",
        None,
        _CALLS_THE_API,
        "The webhook's service account mounts its token on purpose: it reads cluster objects "
        "under its own ClusterRole while validating.",
        "SlinkyProject/slurm-operator v1.2.1 helm/slurm-operator/templates/webhook/rbac.yaml "
        "(automountServiceAccountToken: true), files/webhook_rbac_rules.yaml",
    ),
    # The metrics store's GPU source: NVIDIA's DCGM exporter 4.5.3-4.8.2 (components/dcgm_exporter.py).
    _accepted(
        "dcgm-exporter:DaemonSet/dcgm-exporter",
        "exporter",
        "non-root read-only-root",
        "Root: it reads the kubelet's pod-resources socket (which pod holds which GPU), root-only under "
        "/var/lib/kubelet/pod-resources, and its image runs as root. Writable root, as the chart has it: "
        "what the exporter writes was not checked on a GPU here. Every capability dropped: it runs no "
        "DCGM host engine of its own (the chart's SYS_ADMIN is for that engine's profiling module) but "
        "reads the GPUs through the node monitoring agent's (-r, components/dcgm_exporter.py). No "
        "escalation, not privileged, RuntimeDefault seccomp, no token; the job-mapping directory is "
        "mounted read-only.",
        "NVIDIA/dcgm-exporter 4.5.3-4.8.2 deployment/values.yaml (securityContext: SYS_ADMIN "
        '"Required for profiling metrics (DCGM_FI_PROF_*)", `arguments` -r, kubeletPath), '
        "docker/Dockerfile (USER root)",
    ),
    # NVIDIA device plugin 0.20.0.
    _accepted(
        "nvidia-device-plugin:DaemonSet/nvidia-device-plugin",
        "nvidia-device-plugin-ctr",
        "non-root",
        "Creates its socket in the kubelet's root-owned /var/lib/kubelet/device-plugins; its image runs "
        "as root. Every capability is dropped, with no escalation and a read-only root.",
        "NVIDIA/k8s-device-plugin v0.20.0 deployments/container/Dockerfile (USER 0:0), "
        "internal/plugin/server.go (socket under pluginapi.DevicePluginPath)",
    ),
    _accepted(
        "nvidia-device-plugin:DaemonSet/nvidia-device-plugin",
        None,
        "no-token",
        "The plugin calls no API (only config-manager and GPU feature discovery, both off here, do), "
        "but the chart has no value to turn the token off.",
        "NVIDIA/k8s-device-plugin v0.20.0 internal/flags/kubeclient.go users: cmd/config-manager, "
        "cmd/gpu-feature-discovery; deployments/helm/nvidia-device-plugin/templates/daemonset-device-plugin.yml",
    ),
    *(
        _accepted(
            "nvidia-device-plugin:DaemonSet/nvidia-device-plugin-mps-control-daemon",
            c,
            "drop-all no-escalation non-root read-only-root unprivileged",
            "The chart always renders the MPS control daemon, privileged and in the host PID namespace "
            "by its template; it is scheduled only on nodes labelled nvidia.com/mps.capable=true, which "
            "nothing sets here (no MPS sharing configuration, GPU feature discovery off), so it never runs.",
            "NVIDIA/k8s-device-plugin v0.20.0 deployments/helm/nvidia-device-plugin/templates/"
            "daemonset-mps-control-daemon.yml (privileged: true, mps.enableHostPID, the nodeSelector)",
        )
        for c in ("mps-control-daemon-mounts", "mps-control-daemon-ctr")
    ),
    _accepted(
        "nvidia-device-plugin:DaemonSet/nvidia-device-plugin-mps-control-daemon",
        None,
        "unprivileged no-token",
        "As its containers: host PID by the chart's default, never scheduled here.",
        "NVIDIA/k8s-device-plugin v0.20.0 deployments/helm/nvidia-device-plugin/values.yaml (mps.enableHostPID)",
    ),
    # EFA device plugin v0.5.30 (app v0.5.20).
    _accepted(
        "aws-efa-k8s-device-plugin:DaemonSet/aws-efa-k8s-device-plugin",
        "aws-efa-k8s-device-plugin",
        "seccomp drop-all no-escalation non-root read-only-root unprivileged",
        "Privileged as root by the chart's default, which AWS set when the plugin began aligning EFA "
        "interfaces with the accelerators' topology (reading device information that needs privilege); "
        "the plugin's source is not published, so a narrower context cannot be checked against what "
        "it does (others report a narrower one working on p5 with app v0.5.18: NVIDIA/aicr PR #872; "
        "untested here). The chart has no pod-level securityContext value.",
        "aws/eks-charts stable/aws-efa-k8s-device-plugin v0.5.30 values.yaml (securityContext) and "
        "templates/daemonset.yaml; aws/eks-charts PR #1245 (why privileged); aws-samples/aws-efa-eks issue #26 "
        "(the code is not open source)",
    ),
    _accepted(
        "aws-efa-k8s-device-plugin:DaemonSet/aws-efa-k8s-device-plugin",
        None,
        "unprivileged",
        "Host networking by its template (hostNetwork: true, not a value).",
        "aws/eks-charts stable/aws-efa-k8s-device-plugin v0.5.30 templates/daemonset.yaml",
    ),
)

# The slurm chart's pods are custom resources the Slinky operator turns into pods; their security
# settings come from the operator's builders, not from what the chart renders, so the rendered
# templates are not held to the rules. Kind -> (what the operator sets, its source).
OPERATOR_BUILT = {
    "NodeSet": (
        "slurmd runs privileged with BPF, NET_ADMIN, SYS_ADMIN and SYS_NICE added (cgroups, "
        "devices and the node's network for jobs); no service account token.",
        "SlinkyProject/slurm-operator v1.2.1 internal/builder/workerbuilder/worker_app.go",
    ),
    "LoginSet": (
        "the login pod runs sshd as root (the operator sets no securityContext); no service account "
        "token. The release's values add RuntimeDefault seccomp, requests and a memory limit "
        "(model/builders/slurm_values.py RESOURCES).",
        "SlinkyProject/slurm-operator v1.2.1 internal/builder/loginbuilder/login_app.go",
    ),
    "Controller": (
        "slurmctld runs as the slurm user, runAsNonRoot; no service account token. The release's "
        "values add RuntimeDefault seccomp, requests and the control plane's PriorityClass.",
        "SlinkyProject/slurm-operator v1.2.1 internal/builder/controllerbuilder/controller_app.go",
    ),
    "Accounting": (
        "slurmdbd runs as the slurm user, runAsNonRoot, no service account token; the release's "
        "values add RuntimeDefault seccomp, every capability dropped, no escalation and a read-only "
        "root, requests, a memory limit and the control plane's PriorityClass (model/builders/slurm_values.py "
        "accounting).",
        "SlinkyProject/slurm-operator v1.2.1 internal/builder/accountingbuilder/accounting_app.go",
    ),
    "RestApi": (
        "slurmrestd runs as its own non-root user; no service account token. The release's values "
        "add RuntimeDefault seccomp, requests, a memory limit and the control plane's PriorityClass.",
        "SlinkyProject/slurm-operator v1.2.1 internal/builder/restapibuilder/restapi_app.go",
    ),
}

_JOB_HASH = re.compile(r"-[0-9a-f]{12}$")


def workload_name(kind: str, name: str, release: Optional[str] = None) -> str:
    """The name a workload has here: a Job's content hash left out; a chart's under its release."""
    name = _JOB_HASH.sub("", name) if kind == "Job" else name
    return f"{release}:{kind}/{name}" if release else f"{kind}/{name}"


def _seccomp_ok(context: dict) -> bool:
    return (context.get("seccompProfile") or {}).get("type") in ("RuntimeDefault", "Localhost")


def container_misses(pod: dict, container: dict) -> set[str]:
    """The container rules one container of `pod` does not keep (pod-level settings count)."""
    pod_ctx, ctx = pod.get("securityContext") or {}, container.get("securityContext") or {}
    missed = set()
    if not (_seccomp_ok(ctx) or ("seccompProfile" not in ctx and _seccomp_ok(pod_ctx))):
        missed.add("seccomp")
    capabilities = ctx.get("capabilities") or {}
    if "ALL" not in (capabilities.get("drop") or []) or capabilities.get("add"):
        missed.add("drop-all")
    if ctx.get("allowPrivilegeEscalation") is not False or ctx.get("privileged"):
        missed.add("no-escalation")
    non_root = ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot"))
    if non_root is not True or ctx.get("runAsUser", pod_ctx.get("runAsUser")) == 0:
        missed.add("non-root")
    if ctx.get("readOnlyRootFilesystem") is not True:
        missed.add("read-only-root")
    if ctx.get("privileged"):
        missed.add("unprivileged")
    return missed


def pod_misses(pod: dict) -> set[str]:
    """The pod rules the pod itself does not keep."""
    missed = set()
    if any(pod.get(k) for k in ("hostNetwork", "hostPID", "hostIPC")):
        missed.add("unprivileged")
    if pod.get("automountServiceAccountToken") is not False:
        missed.add("no-token")
    return missed


def findings(workload: str, pod: dict) -> Iterator[tuple[str, Optional[str], str]]:
    """(workload, container or None for the pod, rule) for every rule the pod misses."""
    for rule in sorted(pod_misses(pod)):
        yield workload, None, rule
    for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
        for rule in sorted(container_misses(pod, container)):
            yield workload, container["name"], rule


# What every container of the program's own pods (and Grafana's, whose values are the program's)
# declares: a CPU and memory request, so the scheduler places it and the kubelet ranks it for eviction
# by what it asked for, and a limit of each, so it cannot take the core nodes from the control plane
# (https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/). The charts'
# controllers keep what their charts set (docs/security.md, upstream charts).
BOUNDED = {"requests": ("cpu", "memory"), "limits": ("cpu", "memory")}


def unbounded(pod: dict) -> list[str]:
    """`<container>: no <requests|limits>.<cpu|memory>` for each bound a container of `pod` (init
    containers included) does not declare."""
    return [
        f"{container['name']}: no {kind}.{resource}"
        for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]
        for kind, resources in BOUNDED.items()
        for resource in resources
        if resource not in ((container.get("resources") or {}).get(kind) or {})
    ]


def accepted_findings() -> set[tuple[str, Optional[str], str]]:
    return {(a.workload, a.container, rule) for a in ACCEPTED for rule in a.rules}


def _where(workload: str, container: Optional[str]) -> str:
    return f"{workload} {container or '(pod)'}"


def problems(
    found: set[tuple[str, Optional[str], str]], accepted: set[tuple[str, Optional[str], str]]
) -> list[str]:
    """One line per finding without an accepted exception, and per accepted exception no longer found."""

    def order(f):
        return tuple(str(x) for x in f)

    return [
        f"{_where(w, c)}: misses {rule} ({RULES[rule]}), and no exception accepts it"
        for w, c, rule in sorted(found - accepted, key=order)
    ] + [
        f"{_where(w, c)}: keeps {rule} now: remove its exception from model/builders/pod_hardening.py"
        for w, c, rule in sorted(accepted - found, key=order)
    ]
