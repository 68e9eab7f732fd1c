"""The network-topology writer: a Deployment on the core nodes running
cluster_programs/network_topology.py, which keeps the Controller's topology.yaml and each GPU node's
Slinky topology annotation current from the network-node labels EKS puts on covered nodes. Declared
only for a stack with a pool that has a place (model/builders/topology.py places_any). It needs no
AWS identity: the labels are already on the nodes; why ours and not NVIDIA Topograph:
docs/decisions/network-topology-writer.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components._parts.program_code import program_code
from components.cluster import ClusterContext
from model.builders import topology

# What runs in the writer's pod (components/_parts/program_code.py ships it).
MODULES = ("incluster.py", "network_topology.py")


@dataclass(frozen=True)
class NetworkTopologyArgs:
    """Every field is required (no defaults)."""

    # The EKS cluster it is part of (ClusterContext), for its Kubernetes provider.
    cluster: ClusterContext
    # Every pool's placement (model/builders/topology.py pool_placements).
    placements: Sequence[topology.PoolPlacement]
    # The Slurm namespace: the writer runs there, beside the ConfigMap it writes.
    namespace: str
    # What every object waits for: the namespace and the core nodes.
    depends_on: Sequence[pulumi.Resource]


class NetworkTopology(pulumi.ComponentResource):
    deployment: k8s.apps.v1.Deployment  # the writer
    # What the Slurm release waits for: the writer, so a topology.yaml is there soon after the
    # chart's ConfigMap is.
    ready: list[pulumi.Resource]

    def __init__(self, name: str, args: NetworkTopologyArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:slurm:NetworkTopology", name, None, opts)
        self._name, self._args = name, args
        code = self._code()
        account = self._account()
        bindings = self._access()
        self.deployment = self._deployment(code, account, bindings)
        self.ready = [self.deployment]
        self.register_outputs({"deployment": self.deployment.metadata.name})

    def _code(self) -> k8s.core.v1.ConfigMap:
        """cluster_programs/network_topology.py, shipped as every in-cluster program is."""
        return program_code(
            f"{self._name}-code", f"{topology.WRITER}-code", MODULES, self._args.namespace, self._opts()
        )

    def _account(self) -> k8s.core.v1.ServiceAccount:
        return k8s.core.v1.ServiceAccount(f"{self._name}-account", metadata=self._meta(), opts=self._opts())

    def _deployment(
        self,
        code: k8s.core.v1.ConfigMap,
        account: k8s.core.v1.ServiceAccount,
        bindings: list[pulumi.Resource],
    ) -> k8s.apps.v1.Deployment:
        args = self._args
        # A changed placement or program is a changed pod template: the pod rolls.
        return k8s.apps.v1.Deployment(
            f"{self._name}-deployment",
            metadata=self._meta(),
            spec=topology.writer_deployment_spec(args.placements, args.namespace, code.metadata.name),
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.cluster.provider,
                depends_on=[*args.depends_on, code, account, *bindings],
            ),
        )

    def _meta(self) -> dict:
        return {"name": topology.WRITER, "namespace": self._args.namespace}

    def _opts(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(
            parent=self, provider=self._args.cluster.provider, depends_on=list(self._args.depends_on)
        )

    def _access(self) -> list[pulumi.Resource]:
        """The ConfigMap by name in its namespace; Nodes cluster-wide (writer_rules says why)."""
        name, args = self._name, self._args
        namespaced, cluster = topology.writer_rules()
        role = k8s.rbac.v1.Role(f"{name}-role", metadata=self._meta(), rules=namespaced, opts=self._opts())
        cluster_role = k8s.rbac.v1.ClusterRole(
            f"{name}-cluster-role", metadata={"name": topology.WRITER}, rules=cluster, opts=self._opts()
        )
        subjects = [{"kind": "ServiceAccount", "name": topology.WRITER, "namespace": args.namespace}]
        after = lambda r: pulumi.ResourceOptions.merge(self._opts(), pulumi.ResourceOptions(depends_on=[r]))  # noqa: E731
        return [
            k8s.rbac.v1.RoleBinding(
                f"{name}-role-binding",
                metadata=self._meta(),
                subjects=subjects,
                role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": topology.WRITER},
                opts=after(role),
            ),
            k8s.rbac.v1.ClusterRoleBinding(
                f"{name}-cluster-role-binding",
                metadata={"name": topology.WRITER},
                subjects=subjects,
                role_ref={
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": topology.WRITER,
                },
                opts=after(cluster_role),
            ),
        ]
