"""Slurm readiness after every change to the NodeSet's pod template or replicas: a Job that runs
tools/rollout.py in the cluster. It waits for the operator's rolling update (the `slurm` Helm
release holds only custom resources, so Helm returns before any pod is replaced), then until
every NodeSet node takes jobs, resuming only what the rollout left stuck; `pulumi up` fails with
its message otherwise.

The Job's name carries a hash of what the program puts in the NodeSet (image digest, GRES,
resources, replicas, volumes, placement), so it runs again exactly when the operator has pods to
replace, and on the first install."""
from __future__ import annotations

import hashlib
import json
import pathlib
from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components.chart_values import base_values
from components.helm import merge
from components.jobs_await import job_annotations
from model import versions
from model.contract import CORE_LABELS
from model.gpu_pools import DEFAULT_POOL
from tools import rollout

TOOLS = pathlib.Path(__file__).resolve().parent.parent / "tools"
# What runs in the Job: standard library only, on a plain Python image.
MODULES = ("__init__.py", "rollout.py", "incluster.py")
TIMEOUT_SECONDS = 1800


def nodeset_template(release_values: dict, nodeset: str = DEFAULT_POOL) -> dict:
    """The NodeSet block as the chart renders it: nodesetDefaults under the nodeset's own keys
    (helm/slurm/templates/nodeset/nodeset-cr.yaml, chart 1.2.1), over the reviewed base values."""
    merged = merge(base_values("slurm"), release_values)
    return merge(merged.get("nodesetDefaults") or {}, merged["nodesets"][nodeset])


def rollout_trigger(release_values: dict, nodeset: str = DEFAULT_POOL) -> str:
    """12 hex digits that change with anything the program puts into the NodeSet."""
    canonical = json.dumps(nodeset_template(release_values, nodeset), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class SlurmReadinessArgs:
    """Every field is required (no defaults)."""
    # The slurm namespace's name: the Job, its RBAC and the NodeSet live there.
    namespace: str
    # What the objects in the namespace wait for: the Namespace itself (SharedStorage.namespace_ready),
    # so its RBAC objects are created in it and deleted before it.
    depends_on: Sequence[pulumi.Resource]
    # The NodeSet waited for: the first GPU pool's (a stack with several pools waits for that one).
    nodeset: str
    nodeset_object: str          # the NodeSet's Kubernetes name
    node_prefix: str             # its Slurm nodes' names
    slurm_pod: str               # a pod of fixed name with scontrol: the only one exec is allowed into
    slurm_container: str         # that pod's container with scontrol
    # The Slurm release's computed values (SlurmCluster.release_values): the trigger's source.
    release_values: pulumi.Input[dict]
    # The cluster's Kubernetes provider (Cluster.provider).
    provider: k8s.Provider
    # What the Job waits for besides: the Slurm release and its login endpoint (SlurmCluster.ready).
    job_depends_on: Sequence[pulumi.Resource]


class SlurmReadiness(pulumi.ComponentResource):
    trigger: pulumi.Output[str]   # the 12 hex digits in the Job's name (rollout_trigger)

    def __init__(self, name: str, args: SlurmReadinessArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:slurm:SlurmReadiness", name, None, opts)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.provider,
                                          depends_on=list(args.depends_on))
        meta = {"name": "slurm-rollout-wait", "namespace": args.namespace}
        account = k8s.core.v1.ServiceAccount(f"{name}-account", metadata=meta, opts=k8s_opts)
        role = k8s.rbac.v1.Role(f"{name}-role", metadata=meta, rules=[
            {"apiGroups": ["slinky.slurm.net"], "resources": ["nodesets"], "verbs": ["get"],
             "resourceNames": [args.nodeset_object]},
            # Listing by label selector cannot be narrowed by name.
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
            # scontrol in one pod. A WebSocket exec is a GET, authorized as `get`
            # (kubernetes-client/python#2084); Kubernetes 1.35 also requires `create` for it
            # (feature gate AuthorizePodWebsocketUpgradeCreatePermission).
            {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["get", "create"],
             "resourceNames": [args.slurm_pod]}], opts=k8s_opts)
        binding = k8s.rbac.v1.RoleBinding(
            f"{name}-binding", metadata=meta,
            role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": meta["name"]},
            subjects=[{"kind": "ServiceAccount", "name": meta["name"], "namespace": args.namespace}],
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider,
                                        depends_on=[*args.depends_on, account, role]))
        code = {m: (TOOLS / m).read_text() for m in MODULES}
        code_hash = hashlib.sha256("".join(f"{k}\0{v}\0" for k, v in sorted(code.items())).encode()).hexdigest()
        module = k8s.core.v1.ConfigMap(
            f"{name}-code", metadata={"name": f"slurm-rollout-wait-{code_hash[:12]}", "namespace": args.namespace},
            data=code, immutable=True, opts=k8s_opts)
        self.trigger = pulumi.Output.from_input(args.release_values).apply(
            lambda values: rollout_trigger(values, args.nodeset))
        k8s.batch.v1.Job(
            f"{name}-job",
            metadata={"name": self.trigger.apply(lambda h: f"slurm-ready-{h}"), "namespace": args.namespace,
                      # A failed wait is run again by the next `pulumi up`.
                      "annotations": job_annotations(TIMEOUT_SECONDS)},
            spec={"backoffLimit": 2, "activeDeadlineSeconds": TIMEOUT_SECONDS, "template": {"spec": {
                "restartPolicy": "Never", "serviceAccountName": meta["name"],
                "nodeSelector": dict(CORE_LABELS),
                "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534},
                "containers": [{
                    "name": "wait", "image": versions.PYTHON_IMAGE, "workingDir": "/app",
                    "command": ["python3", "-m", "tools.rollout", "--namespace", args.namespace,
                                "--nodeset", args.nodeset_object, "--node-prefix", args.node_prefix,
                                "--slurm-pod", args.slurm_pod, "--slurm-container", args.slurm_container,
                                "--timeout", str(TIMEOUT_SECONDS - 120),
                                "--stall-after", str(rollout.STALL_AFTER_SECONDS)],
                    "env": [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}],
                    "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                        "capabilities": {"drop": ["ALL"]}},
                    "volumeMounts": [{"name": "code", "mountPath": "/app/tools", "readOnly": True}]}],
                "volumes": [{"name": "code", "configMap": {"name": module.metadata.name}}],
            }}},
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider,
                                        depends_on=[binding, module, *args.job_depends_on]))
        self.register_outputs({"trigger": self.trigger})
