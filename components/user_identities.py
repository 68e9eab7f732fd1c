"""The named users in the cluster: the ConfigMaps of their passwd/group entries and of their SSH
keys, which the login, controller and slurmd pods read (model/builders/identities.py), and a Job that makes
each user's home on the shared volume, owned by them. A stack without `users` gets the component
alone, with nothing in it (no cloud or cluster object: its resources stay as they were)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components._parts.jobs_await import job_annotations
from components.cluster import ClusterContext
from model.builders import identities
from model.builders.shared_volume_writer import writer_spec
from model.checks.users import HOMES, User
from model.facts.contract import IDENTITIES_CONFIGMAP, SHARED_MOUNT, SSH_KEYS_CONFIGMAP

# A mkdir and a chown per user on EFS; the deadline covers a busybox pull onto a fresh node and a
# slow first mount, as the jobs' staging does.
DEADLINE_SECONDS = 600
# Each home is private to its user: sshd's StrictModes accepts no home writable by others.
HOME_MODE = "0700"


def homes_script(users: Sequence[User], shared: str = SHARED_MOUNT) -> str:
    """Creates each missing home with mode 0700 and makes every home its user's (the directory
    itself, never what is in it), so a second run changes nothing. A removed user's home stays."""
    homes = HOMES.replace(SHARED_MOUNT, shared, 1)
    steps = [f"mkdir -p {homes}", f"chmod 0755 {homes}"]
    for u in users:
        home = f"{homes}/{u.name}"
        # chmod before chown: root owns a new directory until then, so no CAP_FOWNER is needed.
        steps.append(f"if [ ! -d {home} ]; then mkdir {home} && chmod {HOME_MODE} {home}; fi")
        steps.append(f'[ "$(stat -c %u:%g {home})" = {u.uid}:{u.uid} ] || chown {u.uid}:{u.uid} {home}')
    return "set -eu; " + "; ".join(steps) + f"; ls -ln {homes}"


@dataclass(frozen=True)
class UserIdentitiesArgs:
    """Every field is required (no defaults)."""

    users: Sequence[User]  # StackConfig.users; none makes nothing
    namespace: str  # the Slurm namespace: where the pods that mount the ConfigMaps run
    shared_claim: str  # the /shared claim's name (SharedStorage.claim_name)
    # The EKS cluster it is part of (ClusterContext), for its Kubernetes provider.
    cluster: ClusterContext
    # What the ConfigMaps wait for: the namespace (SharedStorage.namespace_ready).
    depends_on: Sequence[pulumi.Resource]
    # What the homes Job waits for as well: the bound /shared claim and the core nodes it runs on.
    homes_depends_on: Sequence[pulumi.Resource]


class UserIdentities(pulumi.ComponentResource):
    # What the Slurm release waits for: the ConfigMaps its pods mount.
    ready: list[pulumi.Resource]

    def __init__(self, name: str, args: UserIdentitiesArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:slurm:UserIdentities", name, None, opts)
        self._name, self._args = name, args
        self.ready = []
        if not args.users:
            self.register_outputs({})
            return
        # Fixed names and mutable: the pods mount them as directories, which the kubelet keeps
        # current, so a changed key or entry reaches running pods without a restart.
        entries = self._configmap("entries", IDENTITIES_CONFIGMAP, identities.entry_files(args.users))
        keys = self._configmap("keys", SSH_KEYS_CONFIGMAP, identities.key_files(args.users))
        self.ready = [entries, keys]
        self._homes_job()
        self.register_outputs({})

    def _configmap(self, suffix: str, name: str, data: dict[str, str]) -> k8s.core.v1.ConfigMap:
        args = self._args
        return k8s.core.v1.ConfigMap(
            f"{self._name}-{suffix}",
            metadata={"name": name, "namespace": args.namespace},
            data=data,
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.cluster.provider, depends_on=list(args.depends_on)
            ),
        )

    def _homes_job(self) -> k8s.batch.v1.Job:
        args = self._args
        script = homes_script(args.users)
        # The name carries the homes' hash: a changed list of users runs the Job again.
        digest = hashlib.sha256(script.encode()).hexdigest()[:12]
        return k8s.batch.v1.Job(
            f"{self._name}-homes",
            metadata={
                "name": f"user-homes-{digest}",
                "namespace": args.namespace,
                "annotations": job_annotations(DEADLINE_SECONDS),
            },
            # Root with CAP_CHOWN alone: giving a home to its user is a chown.
            spec=writer_spec(
                "homes", script, args.shared_claim, DEADLINE_SECONDS, add_capabilities=["CHOWN"]
            ),
            # Pulumi waits for the Job to complete: every home is there when `up` returns.
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.cluster.provider,
                depends_on=[*args.depends_on, *args.homes_depends_on],
            ),
        )
