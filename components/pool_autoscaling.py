"""KEDA and one ScaledObject per autoscaling GPU pool: the pool's NodeSet follows its partition's
pending work (model/builders/autoscaling.py), asked of the metrics store (AMP) with SigV4 under the KEDA
operator's own EKS Pod Identity, whose role may only query that one workspace.

SlinkyProject/slurm-operator docs/usage/autoscaling.md at v1.2.1 prescribes this shape: KEDA (for its
metrics API server and 0 <-> 1 scaling) rather than a bare HPA, a ScaledObject on the NodeSet's scale
subresource, a Prometheus trigger on Slurm's partition metrics, idleReplicaCount 0."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components._parts.helm import pinned_release
from components._parts.pod_identity import ServiceAccountRef, pod_identity
from components.cluster import ClusterContext
from model.builders import autoscaling, keda
from model.checks.gpu_pools import GpuPool
from model.facts import versions

NAMESPACE = "keda"
# The chart's operator ServiceAccount (values.yaml serviceAccount.operator.name, keda-2.20.2): the
# identity the `aws` pod identity provider signs with by default (identityOwner keda;
# kedacore/keda-docs content/docs/2.20/authentication-providers/aws.md).
OPERATOR_ACCOUNT = "keda-operator"
# The TriggerAuthentication every pool's triggers name, beside the ScaledObjects (a
# TriggerAuthentication is namespaced and must be in the ScaledObject's namespace).
AUTHENTICATION = "slinky-eks-metrics-store"
KEDA_API = "keda.sh/v1alpha1"


def query_policy(workspace_arn: str) -> str:
    """Only aps:QueryMetrics, only on the stack's workspace: KEDA's Prometheus scaler calls nothing
    but the instant query API (GET <serverAddress>/api/v1/query, kedacore/keda
    pkg/scalers/prometheus_scaler.go at v2.20.2), which AMP authorizes as aps:QueryMetrics on the
    workspace (Service Authorization Reference, Amazon Managed Service for Prometheus: QueryMetrics,
    resource type workspace; https://docs.aws.amazon.com/prometheus/latest/userguide/AMP-onboard-query-APIs.html)."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "QueryTheWorkspace",
                    "Effect": "Allow",
                    "Action": ["aps:QueryMetrics"],
                    "Resource": workspace_arn,
                }
            ],
        }
    )


@dataclass(frozen=True)
class PoolAutoscalingArgs:
    """Every field is required (no defaults)."""

    # The EKS cluster it is part of (ClusterContext), for its name, its region, its Kubernetes provider
    # and what Pod Identity associations wait for.
    cluster: ClusterContext
    # The pools that autoscale (GpuPool.autoscales): one ScaledObject each.
    pools: Sequence[GpuPool]
    # Every pool of the stack (StackConfig.gpu_pools), in order: the first one's triggers also
    # count the default partition's jobs (model/builders/autoscaling.py queue_partitions).
    gpu_pools: Sequence[GpuPool]
    # The metrics store's query endpoint (MetricsStore.query_endpoint): the triggers' serverAddress.
    query_endpoint: pulumi.Input[str]
    # The metrics store's workspace (MetricsStore.workspace_arn): the only one KEDA may query.
    workspace_arn: pulumi.Input[str]
    # scaleDownIdleMinutes: the cooldown and the scale-down stabilization window.
    idle_minutes: int
    # The NodeSets' namespace, where the ScaledObjects and their TriggerAuthentication go.
    namespace: str
    # What KEDA's release waits for: the core nodes it runs on (NodeGroups.core_ready).
    depends_on: Sequence[pulumi.Resource]
    # What the ScaledObjects wait for besides KEDA: the NodeSets they scale (SlurmCluster.ready) and
    # the namespace they are in (SharedStorage.namespace_ready).
    scaler_depends_on: Sequence[pulumi.Resource]


class PoolAutoscaling(pulumi.ComponentResource):
    release: k8s.helm.v3.Release  # KEDA, in its own namespace
    scaled_objects: dict[str, k8s.apiextensions.CustomResource]  # by pool name
    ready: list[pulumi.Resource]  # what waits for the pools to scale: KEDA and the ScaledObjects

    def __init__(self, name: str, args: PoolAutoscalingArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:scaling:PoolAutoscaling", name, None, opts)
        self._name, self._args = name, args
        association = self._identity()
        self.release = pinned_release(
            f"{name}-release",
            versions.KEDA,
            namespace=NAMESPACE,
            create_namespace=True,
            values=keda.release_values(),
            parent=self,
            provider=args.cluster.provider,
            depends_on=[*args.depends_on, association],
        )
        authentication = self._authentication()
        self.scaled_objects = {pool.name: self._scaled_object(pool, authentication) for pool in args.pools}
        self.ready = [self.release, *self.scaled_objects.values()]
        self.register_outputs(
            {"scaledObjects": {p: o.metadata["name"] for p, o in self.scaled_objects.items()}}
        )

    def _identity(self) -> aws.eks.PodIdentityAssociation:
        name, args = self._name, self._args
        document = pulumi.Output.from_input(args.workspace_arn).apply(query_policy)
        return pod_identity(
            name,
            ServiceAccountRef(args.cluster.name, args.cluster.arn, NAMESPACE, OPERATOR_ACCOUNT),
            document,
            self,
            [*args.depends_on, *args.cluster.pod_identity_ready],
        )

    def _after_keda(self) -> pulumi.ResourceOptions:
        args = self._args
        return pulumi.ResourceOptions(
            parent=self, provider=args.cluster.provider, depends_on=[self.release, *args.scaler_depends_on]
        )

    def _authentication(self) -> k8s.apiextensions.CustomResource:
        # podIdentity provider aws with no roleArn: KEDA signs with the operator's own identity
        # (the association above); it cannot be combined with other auth modes (facts:
        # ../shared/docs/scaling-and-metrics-facts.md, KEDA pkg/scalers/prometheus_scaler.go).
        return k8s.apiextensions.CustomResource(
            f"{self._name}-authentication",
            api_version=KEDA_API,
            kind="TriggerAuthentication",
            metadata={"name": AUTHENTICATION, "namespace": self._args.namespace},
            spec={"podIdentity": {"provider": "aws"}},
            opts=self._after_keda(),
        )

    def _scaled_object(
        self, pool: GpuPool, authentication: k8s.apiextensions.CustomResource
    ) -> k8s.apiextensions.CustomResource:
        args = self._args
        spec = pulumi.Output.from_input(args.query_endpoint).apply(
            lambda endpoint: autoscaling.scaled_object_spec(
                pool,
                autoscaling.server_address(endpoint),
                args.cluster.region,
                AUTHENTICATION,
                args.idle_minutes,
                pools=args.gpu_pools,
            )
        )
        opts = self._after_keda()
        return k8s.apiextensions.CustomResource(
            f"{self._name}-{pool.name}",
            api_version=KEDA_API,
            kind="ScaledObject",
            metadata={"name": autoscaling.scaled_object_name(pool), "namespace": args.namespace},
            spec=spec,
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[authentication])),
        )
