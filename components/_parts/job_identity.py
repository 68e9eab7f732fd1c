"""The identity of one of the program's own Jobs that calls the Kubernetes API: a service account
and a Role with exactly the rules the Job needs, bound together in the Job's namespace."""

from __future__ import annotations

from typing import Sequence

import pulumi
import pulumi_kubernetes as k8s


def exec_rule(pod: str) -> dict:
    """Exec into one pod, by name. A WebSocket exec is a GET, authorized as `get`
    (kubernetes-client/python#2084); Kubernetes 1.35 also requires `create` for it (feature gate
    AuthorizePodWebsocketUpgradeCreatePermission)."""
    return {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["get", "create"], "resourceNames": [pod]}


def job_identity(
    name: str,
    account: str,
    namespace: str,
    rules: list[dict],
    *,
    parent: pulumi.Resource,
    provider: k8s.Provider,
    depends_on: Sequence[pulumi.Resource],
) -> k8s.rbac.v1.RoleBinding:
    """The service account `account` with the Role of the same name; the binding is what a Job
    that runs as the account waits for."""
    meta = {"name": account, "namespace": namespace}
    opts = pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=list(depends_on))
    service_account = k8s.core.v1.ServiceAccount(f"{name}-account", metadata=meta, opts=opts)
    role = k8s.rbac.v1.Role(f"{name}-role", metadata=meta, rules=rules, opts=opts)
    return k8s.rbac.v1.RoleBinding(
        f"{name}-binding",
        metadata=meta,
        role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
        subjects=[{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        opts=pulumi.ResourceOptions(
            parent=parent, provider=provider, depends_on=[*depends_on, service_account, role]
        ),
    )
