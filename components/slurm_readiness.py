"""Slurm readiness after every image change: a Job that runs tools/resume-nodes.sh in the login
pod, resuming the dynamic nodes a rolling image update leaves DOWN or DRAIN and waiting until
every node takes jobs. Its name carries the image digest, so `pulumi up` runs it exactly when the
image changes (and on the first install), and fails loudly if the nodes never come back."""
from __future__ import annotations

import pathlib
from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components.chart_versions import versions
from components.jobs_await import job_annotations
from model.contract import CORE_LABELS

RESUME_SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "tools" / "resume-nodes.sh"
TIMEOUT_SECONDS = 1800


@dataclass(frozen=True)
class SlurmReadinessArgs:
    namespace: str
    # The Namespace object itself: its RBAC objects are created in it and deleted before it.
    namespace_resource: pulumi.Resource
    login_service: str
    image_digest: pulumi.Input[str]
    expected_nodes: int
    provider: k8s.Provider
    after: Sequence[pulumi.Resource]


class SlurmReadiness(pulumi.ComponentResource):
    def __init__(self, name: str, args: SlurmReadinessArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:slurm:SlurmReadiness", name, None, opts)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.provider,
                                          depends_on=[args.namespace_resource])
        meta = {"name": "slurm-node-resume", "namespace": args.namespace}
        account = k8s.core.v1.ServiceAccount(f"{name}-account", metadata=meta, opts=k8s_opts)
        # `kubectl exec svc/<login>` reads the Service, lists its pods and execs into one.
        role = k8s.rbac.v1.Role(f"{name}-role", metadata=meta, rules=[
            {"apiGroups": [""], "resources": ["services", "pods"], "verbs": ["get", "list"]},
            {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"]}], opts=k8s_opts)
        binding = k8s.rbac.v1.RoleBinding(
            f"{name}-binding", metadata=meta,
            role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": meta["name"]},
            subjects=[{"kind": "ServiceAccount", "name": meta["name"], "namespace": args.namespace}],
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider,
                                        depends_on=[args.namespace_resource, account, role]))
        job_name = pulumi.Output.from_input(args.image_digest).apply(
            lambda digest: f"slurm-ready-{digest.removeprefix('sha256:')[:12]}")
        k8s.batch.v1.Job(
            f"{name}-job",
            metadata={"name": job_name, "namespace": args.namespace,
                      "annotations": job_annotations(TIMEOUT_SECONDS)},
            spec={"backoffLimit": 6, "activeDeadlineSeconds": TIMEOUT_SECONDS, "template": {"spec": {
                "restartPolicy": "Never", "serviceAccountName": meta["name"],
                "nodeSelector": dict(CORE_LABELS),
                "containers": [{"name": "resume", "image": versions()["images"]["kubectl"], "command": [
                    "kubectl", "exec", "-n", args.namespace, f"svc/{args.login_service}", "-c", "login",
                    "--", "bash", "-c", RESUME_SCRIPT.read_text(), "resume-nodes",
                    str(args.expected_nodes), str(TIMEOUT_SECONDS - 120)]}],
            }}},
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider,
                                        depends_on=[binding, *args.after]))
        self.register_outputs({})
