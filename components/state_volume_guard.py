"""The guard that makes `pulumi destroy` wait for the Slurm controller's EBS volume itself: a
Deployment the state claim depends on, deleted after the claim and before the EBS CSI driver and
the nodes, whose pod (cluster_programs/state_volume_guard.py) ends only once the claim's volume is
gone. Why the delete waits for that pod: docs/decisions/state-volume-guard.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components._parts.jobs_await import TIMEOUT
from components._parts.program_code import program_code
from components.cluster import ClusterContext
from model.builders.state_volume_guard import GUARD, WAIT_SECONDS, deployment_spec

# What runs in the guard's pod (components/_parts/program_code.py ships it).
MODULES = ("state_volume_guard.py",)


@dataclass(frozen=True)
class StateVolumeGuardArgs:
    """Every field is required (no defaults)."""

    # The namespace's name: the guard's objects and the claim live there.
    namespace: str
    # The name of the claim whose EBS volume destroy waits for.
    claim: str
    # The EKS cluster it is part of (ClusterContext), for its Kubernetes provider.
    cluster: ClusterContext
    # What every object of the guard waits for, and so what outlives the volume: the namespace,
    # the StorageClass and EBS CSI driver (and, through the driver, the core nodes).
    depends_on: Sequence[pulumi.Resource]


class StateVolumeGuard(pulumi.ComponentResource):
    # The guard itself: the state claim depends on it, so destroy deletes it after the claim.
    deployment: k8s.apps.v1.Deployment

    def __init__(self, name: str, args: StateVolumeGuardArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:slurm:StateVolumeGuard", name, None, opts)
        self._name, self._args = name, args
        code = self._code()
        account = self._account()
        bindings = self._read_access()
        self.deployment = self._deployment(code, account, bindings)
        self.register_outputs({"deployment": self.deployment.metadata.name})

    def _meta(self) -> dict:
        return {"name": GUARD, "namespace": self._args.namespace}

    def _k8s_opts(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(
            parent=self, provider=self._args.cluster.provider, depends_on=list(self._args.depends_on)
        )

    def _account(self) -> k8s.core.v1.ServiceAccount:
        return k8s.core.v1.ServiceAccount(
            f"{self._name}-account", metadata=self._meta(), opts=self._k8s_opts()
        )

    def _read_access(self) -> list[pulumi.Resource]:
        """Read-only: the claim in its namespace, and PersistentVolumes (cluster-scoped)."""
        name, args, meta, k8s_opts = self._name, self._args, self._meta(), self._k8s_opts()
        claim_reader = k8s.rbac.v1.Role(
            f"{name}-claim-reader",
            metadata=meta,
            rules=[
                {
                    "apiGroups": [""],
                    "resources": ["persistentvolumeclaims"],
                    "resourceNames": [args.claim],
                    "verbs": ["get"],
                }
            ],
            opts=k8s_opts,
        )
        volume_reader = k8s.rbac.v1.ClusterRole(
            f"{name}-volume-reader",
            metadata={"name": GUARD},
            rules=[{"apiGroups": [""], "resources": ["persistentvolumes"], "verbs": ["list"]}],
            opts=k8s_opts,
        )
        subjects = [{"kind": "ServiceAccount", "name": GUARD, "namespace": args.namespace}]
        return [
            k8s.rbac.v1.RoleBinding(
                f"{name}-claim-reader-binding",
                metadata=meta,
                subjects=subjects,
                role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": GUARD},
                opts=pulumi.ResourceOptions.merge(
                    k8s_opts, pulumi.ResourceOptions(depends_on=[claim_reader])
                ),
            ),
            k8s.rbac.v1.ClusterRoleBinding(
                f"{name}-volume-reader-binding",
                metadata={"name": GUARD},
                subjects=subjects,
                role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": GUARD},
                opts=pulumi.ResourceOptions.merge(
                    k8s_opts, pulumi.ResourceOptions(depends_on=[volume_reader])
                ),
            ),
        ]

    def _code(self) -> k8s.core.v1.ConfigMap:
        """cluster_programs/state_volume_guard.py, shipped as every in-cluster program is."""
        return program_code(
            f"{self._name}-code", f"{GUARD}-code", MODULES, self._args.namespace, self._k8s_opts()
        )

    def _deployment(
        self,
        code: k8s.core.v1.ConfigMap,
        account: k8s.core.v1.ServiceAccount,
        bindings: list[pulumi.Resource],
    ) -> k8s.apps.v1.Deployment:
        args = self._args
        return k8s.apps.v1.Deployment(
            f"{self._name}-deployment",
            metadata={
                **self._meta(),
                "annotations": {
                    # The delete waits for the pod to end: its wait plus a margin.
                    TIMEOUT: str(WAIT_SECONDS + 60)
                },
            },
            # A changed program is a new ConfigMap name in the pod template: the pod rolls.
            spec=deployment_spec(args.namespace, args.claim, code.metadata.name),
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.cluster.provider,
                depends_on=[*args.depends_on, code, account, *bindings],
            ),
        )
