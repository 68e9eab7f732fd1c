"""What makes an autoscaling pool grow and shrink: the PromQL KEDA's Prometheus scaler asks of the
metrics store over Slurm's own series, and the ScaledObject that turns the answers into the pool
NodeSet's replica count. Pure: components/pool_autoscaling.py applies it.

The series are slurmctld's OpenMetrics (SchedMD/slurm src/plugins/metrics/openmetrics/openmetrics.c
at slurm-26-05-3-1, ADD_METRIC_KEYVAL: "slurm_" + the name, one series per partition, label
`partition`), counted in src/slurmctld/statistics.c (_statistics_part_aggregate_job and
_statistics_part_aggregate_node, same tag):
- slurm_partition_jobs_pending counts every pending job of the partition, held ones included
  (jobs_pending += job_array_cnt for IS_JOB_PENDING); slurm_partition_jobs_hold the held ones
  (state_reason WAIT_HELD or WAIT_HELD_USER). Nodes cannot help a held job, so they are taken off.
- slurm_partition_jobs_max_job_nodes_nohold is the largest max_nodes over the pending jobs that
  are not held, where a job's max_nodes is at least its min_nodes (MAX(details->max_nodes,
  min_nodes) in _statistics_job_*): the node count of the largest pending job.
- slurm_partition_nodes_alloc and slurm_partition_nodes_mixed count the nodes doing work (a node is
  one of future, down, mixed, allocated, idle, unknown, in that order).
A job is counted in a partition only when its partition string is exactly that partition
(xstrcmp(j->partition, ps->name)): a job submitted to `-p a,b` or to the partition `all` over every
pool counts for no pool's scaler (docs/scaling.md says so to the user).

Each query answers "how many nodes the pool should have": the nodes doing work plus what the queue
asks for. With metricType AverageValue and a target of 1 node, the HPA KEDA makes asks for
ceil(answer) replicas whatever the current count (Kubernetes HPA algorithm: for an External metric
with an AverageValue target, desired = ceil(value / target);
https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/#algorithm-details), and
takes the larger of the two triggers' answers. Counting the busy nodes in means the HPA never asks
to give back a node that runs a job while the queue is empty.
"""

from __future__ import annotations

from model.builders.slurm_values import pool_partition
from model.checks.gpu_pools import GpuPool
from model.facts.contract import nodeset_object

PENDING_JOBS = "slurm_partition_jobs_pending"
HELD_JOBS = "slurm_partition_jobs_hold"
LARGEST_PENDING_JOB_NODES = "slurm_partition_jobs_max_job_nodes_nohold"
ALLOCATED_NODES = "slurm_partition_nodes_alloc"
MIXED_NODES = "slurm_partition_nodes_mixed"
SERIES = (PENDING_JOBS, HELD_JOBS, LARGEST_PENDING_JOB_NODES, ALLOCATED_NODES, MIXED_NODES)

# One node per unit of the answer (the AverageValue target), and any answer above 0 is activity
# (KEDA's Prometheus scaler: activationThreshold, "strictly greater than", default 0; kedacore/
# keda-docs content/docs/2.20/concepts/scaling-deployments.md "Activating and Scaling thresholds").
NODES_PER_UNIT = "1"
ACTIVATION = "0"
# How often KEDA asks the store (ScaledObject pollingInterval, default 30 s: kedacore/keda-docs
# content/docs/2.20/reference/scaledobject-spec.md). The answers are cached for that long
# (useCachedMetrics), so the HPA's own reads (every 15 s) cost the store no query.
POLLING_SECONDS = 30
# The idle period's default (scaleDownIdleMinutes): about what a scale-up from zero costs in wait
# (docs/scaling.md, "The idle period"), so an idle pool never holds more node time than it saves.
IDLE_MINUTES = 15

# What KEDA targets: the pool's NodeSet through its scale subresource (slinky.slurm.net/v1beta1
# NodeSet; the CRD declares specReplicasPath .spec.replicas, statusReplicasPath .status.replicas and
# labelSelectorPath .status.selector, the last of which the HPA needs: SlinkyProject/slurm-operator
# helm/slurm-operator-crds/templates/slinky.slurm.net_nodesets.yaml at v1.2.1).
NODESET_API_VERSION = "slinky.slurm.net/v1beta1"
NODESET_KIND = "NodeSet"


def server_address(query_endpoint: str) -> str:
    """KEDA's serverAddress from the metrics store's query endpoint (MetricsStore.query_endpoint,
    AMP's prometheus_endpoint, which ends in '/'): KEDA appends /api/v1/query itself
    (kedacore/keda pkg/scalers/prometheus_scaler.go at v2.20.2), and a doubled slash would be a
    different path to sign and to serve."""
    return query_endpoint.rstrip("/")


def _series(name: str, partition: str) -> str:
    # max() folds the copies of one series a restarted slurmctld pod or a second scrape target
    # would add (one value each, never a sum); `or vector(0)` answers 0 where the series is absent
    # (no scrape yet), so a missing term never empties the whole sum.
    return f'(max({name}{{partition="{partition}"}}) or vector(0))'


def busy_nodes(partition: str) -> str:
    """The partition's nodes running work (allocated or mixed)."""
    return f"{_series(ALLOCATED_NODES, partition)} + {_series(MIXED_NODES, partition)}"


def pending_jobs_query(partition: str) -> str:
    """Nodes for every job the partition runs or holds pending: the busy nodes plus one node per
    pending job that is not held."""
    return (
        f"{busy_nodes(partition)} + clamp_min({_series(PENDING_JOBS, partition)} - "
        f"{_series(HELD_JOBS, partition)}, 0)"
    )


def largest_job_query(partition: str) -> str:
    """Nodes for the busy work plus the largest pending job that is not held, all of it at once."""
    return f"{busy_nodes(partition)} + {_series(LARGEST_PENDING_JOB_NODES, partition)}"


def trigger_queries(pool: GpuPool) -> dict[str, str]:
    """The pool's triggers by name: its partition's pending jobs, and its largest pending job."""
    partition = pool_partition(pool)
    return {
        "pending-jobs": pending_jobs_query(partition),
        "largest-pending-job": largest_job_query(partition),
    }


def scaled_object_name(pool: GpuPool) -> str:
    return f"scale-{pool.name}"


def replica_bounds(pool: GpuPool) -> dict[str, int]:
    """KEDA's bounds for the pool. A pool that goes to zero has minReplicaCount 1 and
    idleReplicaCount 0: KEDA takes it to zero when no trigger is active for the cooldown, and
    straight back to 1 on activity, then the HPA up to the maximum (idleReplicaCount must be below
    minReplicaCount and 0 is its only supported value: scaledobject-spec.md § idleReplicaCount, as
    SlinkyProject/slurm-operator docs/usage/autoscaling.md at v1.2.1 prescribes)."""
    if pool.min_nodes == 0:
        return {"idleReplicaCount": 0, "minReplicaCount": 1, "maxReplicaCount": pool.max_nodes}
    return {"minReplicaCount": pool.min_nodes, "maxReplicaCount": pool.max_nodes}


def scaled_object_spec(
    pool: GpuPool, server_address: str, region: str, authentication: str, idle_minutes: int
) -> dict:
    """The ScaledObject's spec for an autoscaling pool (keda.sh/v1alpha1). `server_address` is the
    metrics store's query root (AMP: https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>),
    signed with SigV4 by KEDA through `authentication` (a TriggerAuthentication of podIdentity aws;
    kedacore/keda-docs content/docs/2.20/scalers/prometheus.md, "Amazon Managed Service for
    Prometheus"). The idle period is the cooldown to zero and the HPA's scale-down stabilization
    window, so every scale-down, N to M as well as 1 to 0, waits for a whole idle period."""
    idle = idle_minutes * 60
    return {
        "scaleTargetRef": {
            "apiVersion": NODESET_API_VERSION,
            "kind": NODESET_KIND,
            "name": nodeset_object(pool.name),
        },
        **replica_bounds(pool),
        "pollingInterval": POLLING_SECONDS,
        "cooldownPeriod": idle,
        "advanced": {
            "horizontalPodAutoscalerConfig": {
                "behavior": {
                    "scaleDown": {
                        "stabilizationWindowSeconds": idle,
                        # One node at a time: the operator drains each before its pod goes.
                        "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
                    }
                }
            }
        },
        "triggers": [
            {
                "type": "prometheus",
                "name": name,
                "metricType": "AverageValue",
                "useCachedMetrics": True,
                "authenticationRef": {"name": authentication},
                "metadata": {
                    "serverAddress": server_address,
                    "awsRegion": region,
                    "query": query,
                    "threshold": NODES_PER_UNIT,
                    "activationThreshold": ACTIVATION,
                },
            }
            for name, query in trigger_queries(pool).items()
        ],
    }
