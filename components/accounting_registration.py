"""Every account and user registered in Slurm's accounting: a Job that runs
cluster_programs/accounting_registration.py, which execs sacctmgr in the slurmctld container and
makes slurmdbd hold exactly the desired state model/builders/accounting.py derives from the users (why
sacctmgr in that pod rather than slurmrestd or a Job holding the auth key:
docs/decisions/accounting-registration.md).

The desired state reaches the Job as an immutable ConfigMap named by its hash, and the Job is
named by the same hash: a change of `users` (who, their account, their admin flag) is a new Job,
one more registration; an `up` that leaves the users as they were leaves the Job as it is. The
program changes nothing when slurmdbd already holds the state, so a re-run is harmless."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components._parts.job_identity import exec_rule, job_identity
from components._parts.jobs_await import job_annotations
from components._parts.program_code import digest, program_code
from components.cluster import ClusterContext
from model.builders.accounting import desired_state, to_json
from model.builders.program_job import program_pod
from model.checks.users import User

# What runs in the Job, from cluster_programs/ (components/_parts/program_code.py ships it).
MODULES = ("accounting_registration.py", "incluster.py")
DESIRED_FILE = "desired.json"
# slurmctld adds the cluster to slurmdbd when it first connects: on a first `up` the Job may start
# before that; it waits up to this long (less a margin for its own work).
TIMEOUT_SECONDS = 900
# The ServiceAccount, Role and RoleBinding share it.
ACCOUNT = "slurm-accounting-registration"


def desired_files(users: Sequence[User]) -> dict[str, str]:
    """The desired-state ConfigMap's one file."""
    return {DESIRED_FILE: to_json(desired_state(users))}


def registration_trigger(users: Sequence[User]) -> str:
    """12 hex digits that change exactly when the desired state does (the Job's name)."""
    return digest(desired_files(users))


@dataclass(frozen=True)
class AccountingRegistrationArgs:
    """Every field is required (no defaults)."""

    users: Sequence[User]  # StackConfig.users: who is registered, under which account
    # Where the Slurm release runs; the Job, its ConfigMaps and RBAC objects are created there.
    namespace: str
    # What the objects in the namespace wait for: the Namespace (SharedStorage.namespace_ready).
    depends_on: Sequence[pulumi.Resource]
    # Slurm's ClusterName (model/facts/contract.py): the cluster the associations are on.
    slurm_cluster: str
    # The pod of fixed name with sacctmgr and slurm.conf (the controller): the only pod exec is
    # allowed into.
    slurm_pod: str
    slurm_container: str  # that pod's container with sacctmgr (slurmctld)
    # The EKS cluster it is part of (ClusterContext), for its Kubernetes provider.
    cluster: ClusterContext
    # What the Job waits for besides: the Slurm release with its Accounting (SlurmCluster.ready).
    job_depends_on: Sequence[pulumi.Resource]
    # The accounting database's resource id (AccountingDatabase.resource_id), part of the Job's
    # name: a new database (a replacement, a restore) is registered again, though `users` is the same.
    database: pulumi.Input[str]


class AccountingRegistration(pulumi.ComponentResource):
    """The registration Job, with its RBAC, code and desired state."""

    trigger: str  # the 12 hex digits in the Job's and the desired-state ConfigMap's names

    def __init__(
        self, name: str, args: AccountingRegistrationArgs, opts: Optional[pulumi.ResourceOptions] = None
    ):
        super().__init__("slinky-eks:accounting:AccountingRegistration", name, None, opts)
        self._name, self._args = name, args
        self.trigger = registration_trigger(args.users)
        binding = self._access()
        code = program_code(f"{name}-code", f"{ACCOUNT}-code", MODULES, args.namespace, self._in_namespace())
        desired = self._config_map("desired", f"{ACCOUNT}-users-{self.trigger}", desired_files(args.users))
        self._job(code, desired, binding)
        self.register_outputs({"trigger": self.trigger})

    def _in_namespace(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(
            parent=self, provider=self._args.cluster.provider, depends_on=list(self._args.depends_on)
        )

    def _access(self) -> k8s.rbac.v1.RoleBinding:
        """The Job's identity: exec into the one Slurm pod, nothing else."""
        args = self._args
        return job_identity(
            self._name,
            ACCOUNT,
            args.namespace,
            [exec_rule(args.slurm_pod)],
            parent=self,
            provider=args.cluster.provider,
            depends_on=args.depends_on,
        )

    def _config_map(self, suffix: str, name: str, data: dict[str, str]) -> k8s.core.v1.ConfigMap:
        """Immutable and named by its content's hash: a change is a new ConfigMap, never an edit
        under a running Job."""
        return k8s.core.v1.ConfigMap(
            f"{self._name}-{suffix}",
            metadata={"name": name, "namespace": self._args.namespace},
            data=data,
            immutable=True,
            opts=self._in_namespace(),
        )

    def _job(
        self, code: k8s.core.v1.ConfigMap, desired: k8s.core.v1.ConfigMap, binding: k8s.rbac.v1.RoleBinding
    ) -> k8s.batch.v1.Job:
        args = self._args
        return k8s.batch.v1.Job(
            f"{self._name}-job",
            metadata={
                "name": pulumi.Output.from_input(args.database).apply(
                    lambda database: (
                        f"accounting-registration-{digest({'users': self.trigger, 'database': database})}"
                    )
                ),
                "namespace": args.namespace,
                # A failed registration is run again by the next `pulumi up`.
                "annotations": job_annotations(TIMEOUT_SECONDS),
            },
            spec={
                "backoffLimit": 2,
                "activeDeadlineSeconds": TIMEOUT_SECONDS,
                "template": {
                    "spec": program_pod(
                        "register",
                        "accounting_registration",
                        [
                            "--desired",
                            f"/config/{DESIRED_FILE}",
                            "--cluster",
                            args.slurm_cluster,
                            "--namespace",
                            args.namespace,
                            "--slurm-pod",
                            args.slurm_pod,
                            "--slurm-container",
                            args.slurm_container,
                            "--timeout",
                            str(TIMEOUT_SECONDS - 120),
                        ],
                        ACCOUNT,
                        code.metadata.name,
                        mounts=[{"name": "desired", "mountPath": "/config", "readOnly": True}],
                        volumes=[{"name": "desired", "configMap": {"name": desired.metadata.name}}],
                    )
                },
            },
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.cluster.provider,
                depends_on=[binding, code, desired, *args.job_depends_on],
            ),
        )
