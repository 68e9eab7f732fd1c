"""Slurm readiness after every change to a NodeSet's pod template or replicas: a Job that runs
cluster_programs/rollout.py in the cluster. It waits for the operator's rolling update of every GPU pool's
NodeSet (the `slurm` Helm release holds only custom resources, so Helm returns before any pod is
replaced), then until every NodeSet node takes jobs, resuming only what the rollout left stuck;
`pulumi up` fails with its message otherwise, naming the NodeSet that is not ready.

One Job per pool, named by a hash of its NodeSet, so each runs again exactly when the operator
has pods to replace in that pool (docs/decisions/readiness-job-per-pool.md)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from cluster_programs import rollout
from components._parts.chart_values import base_values
from components._parts.helm import merge
from components._parts.job_identity import exec_rule, job_identity
from components._parts.jobs_await import job_annotations
from components._parts.program_code import program_code
from components.cluster import ClusterContext
from model.builders.program_job import program_pod
from model.checks.gpu_pools import DEFAULT_POOL, GpuPool
from model.facts.contract import nodeset_object, slurm_node_prefix

# What runs in the Job, from cluster_programs/: standard library only, on a plain Python image.
MODULES = ("rollout.py", "incluster.py")
# And for a stack with an autoscaling pool, the wait over the pool's floor (cluster_programs/pool_floor.py).
FLOOR_MODULE = "pool_floor.py"


def shipped_modules(autoscaling: bool = False) -> tuple[str, ...]:
    """The modules the Jobs run (with the floor wait where a pool autoscales)."""
    return (*MODULES, FLOOR_MODULE) if autoscaling else MODULES


TIMEOUT_SECONDS = 1800
# The ServiceAccount, Role and RoleBinding share it.
ACCOUNT = "slurm-rollout-wait"


def nodeset_template(release_values: dict, nodeset: str = DEFAULT_POOL) -> dict:
    """The NodeSet block as the chart renders it: nodesetDefaults under the nodeset's own keys
    (helm/slurm/templates/nodeset/nodeset-cr.yaml, chart 1.2.1), over the reviewed base values."""
    merged = merge(base_values("slurm"), release_values)
    return merge(merged.get("nodesetDefaults") or {}, merged["nodesets"][nodeset])


def rollout_trigger(release_values: dict, nodeset: str = DEFAULT_POOL) -> str:
    """12 hex digits that change with anything the program puts into the NodeSet."""
    canonical = json.dumps(nodeset_template(release_values, nodeset), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def job_suffix(pool: GpuPool) -> str:
    """The part of a pool's wait Job names that is the pool's: none for the default pool (its
    pre-pool names, so adding pools beside it re-creates nothing), `-<name>` for every other.
    Pool names have at most 20 characters (model/checks/gpu_pools.py): slurm-ready-<pool>-<hash> stays
    within the 63 characters of the job-name label Kubernetes puts on the Job's pods."""
    return "" if pool.name == DEFAULT_POOL else f"-{pool.name}"


@dataclass(frozen=True)
class SlurmReadinessArgs:
    """Every field is required (no defaults)."""

    # Where the Slurm release runs; the Job and its RBAC objects are created there.
    namespace: str
    # What the objects in the namespace wait for: the Namespace itself (SharedStorage.namespace_ready),
    # so the RBAC objects are created in it and deleted before it.
    depends_on: Sequence[pulumi.Resource]
    # The GPU pools (StackConfig.gpu_pools: at least one): each pool's NodeSet is waited for by
    # its own Job, and only those NodeSets can be read.
    gpu_pools: Sequence[GpuPool]
    # A pod of fixed name with scontrol (the controller): the only pod exec is allowed into.
    slurm_pod: str
    slurm_container: str  # that pod's container with scontrol
    # The slurm release's values (SlurmCluster.release_values): each pool's NodeSet template is
    # hashed into its Job's name.
    release_values: pulumi.Input[dict]
    # The EKS cluster it is part of (ClusterContext), for its Kubernetes provider.
    cluster: ClusterContext
    # What the Jobs wait for besides: the Slurm release and its login endpoint (SlurmCluster.ready).
    job_depends_on: Sequence[pulumi.Resource]


class SlurmReadiness(pulumi.ComponentResource):
    """One wait Job per GPU pool, with the RBAC and code they share."""

    # By pool name, the 12 hex digits in its Job's name (rollout_trigger of its NodeSet): a new
    # value is a new Job, i.e. one more wait for that pool.
    triggers: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: SlurmReadinessArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:slurm:SlurmReadiness", name, None, opts)
        self._name, self._args = name, args
        binding = self._access()
        code = self._code()
        values = pulumi.Output.from_input(args.release_values)
        self.triggers = {
            pool.name: values.apply(lambda v, name=pool.name: rollout_trigger(v, name))
            for pool in args.gpu_pools
        }
        for pool in args.gpu_pools:
            self._wait_job(pool, code, binding)
        self.register_outputs({"triggers": self.triggers})

    def _in_namespace(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(
            parent=self, provider=self._args.cluster.provider, depends_on=list(self._args.depends_on)
        )

    def _access(self) -> k8s.rbac.v1.RoleBinding:
        """The Job's identity: `get` on exactly the pools' NodeSets, `list` pods, exec into the
        one Slurm pod (scontrol)."""
        args = self._args
        return job_identity(
            self._name,
            ACCOUNT,
            args.namespace,
            [
                {
                    "apiGroups": ["slinky.slurm.net"],
                    "resources": ["nodesets"],
                    "verbs": ["get"],
                    "resourceNames": [nodeset_object(pool.name) for pool in args.gpu_pools],
                },
                # Listing by label selector cannot be narrowed by name.
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
                exec_rule(args.slurm_pod),
            ],
            parent=self,
            provider=args.cluster.provider,
            depends_on=args.depends_on,
        )

    def _code(self) -> k8s.core.v1.ConfigMap:
        """cluster_programs/rollout.py and what it imports, shipped as every in-cluster program is
        (components/_parts/program_code.py)."""
        modules = shipped_modules(any(pool.autoscales for pool in self._args.gpu_pools))
        return program_code(
            f"{self._name}-code", ACCOUNT, modules, self._args.namespace, self._in_namespace()
        )

    def _wait_job(
        self, pool: GpuPool, code: k8s.core.v1.ConfigMap, binding: k8s.rbac.v1.RoleBinding
    ) -> k8s.batch.v1.Job:
        """The pool's Job: `python -m cluster_programs.rollout` on its NodeSet, named after its
        trigger; for an autoscaling pool `cluster_programs.pool_floor`, which waits for its
        minNodes nodes only."""
        args, suffix = self._args, job_suffix(pool)
        module, floor = (
            ("pool_floor", ["--min-nodes", str(pool.min_nodes)]) if pool.autoscales else ("rollout", [])
        )
        return k8s.batch.v1.Job(
            f"{self._name}-job{suffix}",
            metadata={
                "name": self.triggers[pool.name].apply(lambda h: f"slurm-ready{suffix}-{h}"),
                "namespace": args.namespace,
                # A failed wait is run again by the next `pulumi up`.
                "annotations": job_annotations(TIMEOUT_SECONDS),
            },
            spec={
                "backoffLimit": 2,
                "activeDeadlineSeconds": TIMEOUT_SECONDS,
                "template": {
                    "spec": program_pod(
                        "wait",
                        module,
                        [
                            "--namespace",
                            args.namespace,
                            "--nodeset",
                            nodeset_object(pool.name),
                            "--node-prefix",
                            slurm_node_prefix(pool.name),
                            "--slurm-pod",
                            args.slurm_pod,
                            "--slurm-container",
                            args.slurm_container,
                            "--timeout",
                            str(TIMEOUT_SECONDS - 120),
                            "--stall-after",
                            str(rollout.STALL_AFTER_SECONDS),
                            *floor,
                        ],
                        ACCOUNT,
                        code.metadata.name,
                    )
                },
            },
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.cluster.provider, depends_on=[binding, code, *args.job_depends_on]
            ),
        )
