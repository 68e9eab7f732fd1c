"""The Slurm cluster: its keys, the controller's state volume, the node health check's ConfigMap
(model/builders/node_health.py), the slurmd pods' service account and the EKS Pod Identity role
that lets container jobs pull from the account's ECR registry (model/builders/containers.py), the
Slinky `slurm` release, and the login endpoint (an internet-facing NLB that only sshAllowedCidrs can reach)."""

from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pulumi_random as random

import cluster_programs
from components._parts import jobs_await
from components._parts.helm import chart_release
from components._parts.pod_identity import ServiceAccountRef, pod_identity
from components.cluster import ClusterContext
from components.state_volume_guard import StateVolumeGuard, StateVolumeGuardArgs
from model.builders import containers, login_endpoint, node_health
from model.builders.pod_security import container_security
from model.builders.scheduling import SchedulingPolicy
from model.builders.slurm_values import SlurmValuesArgs, control_plane_priority_class, slurm_values
from model.checks.gpu_pools import GpuPool
from model.checks.users import User
from model.facts import versions
from model.facts.contract import (
    GP3,
    HEALTH_CONFIGMAP,
    JWT_KEY_SECRET,
    LOGIN_SERVICE,
    LOGINSET_OBJECT,
    NLB_CLASS,
    RELEASE,
    SLURM_KEY_SECRET,
    SLURM_NAMESPACE,
    STATE_CLAIM,
)


def health_program() -> str:
    """The node health check's source, shipped as it is (cluster_programs/node_health.py)."""
    return (pathlib.Path(cluster_programs.__file__).resolve().parent / node_health.PROGRAM_MODULE).read_text()


@dataclass(frozen=True)
class SlurmClusterArgs:
    """Every field is required (no defaults)."""

    # The Slinky `slurm` chart's version (slinkyChartVersion).
    chart_version: str
    gpu_pools: Sequence[GpuPool]  # one NodeSet and one partition each
    # The slurmd image's repository URL as pushed (SlurmdImage.repository_url).
    image_repository: pulumi.Input[str]
    # Its digest (SlurmdImage.digest): the NodeSet runs the image by digest.
    image_digest: pulumi.Input[str]
    # Its tag (slurmdImageTag), rendered beside the digest.
    image_tag: str
    # The Slinky controller/restd/dbd/login images by name, by digest (StackConfig.images.slinky).
    slinky_images: Mapping[str, str]
    # root's authorized key on the login pod (sshPublicKey); "" for no root login.
    ssh_public_key: str
    # The named users (StackConfig.users): their identities in the pods and their keys.
    users: Sequence[User]
    # The only sources the login NLB admits on port 22 (sshAllowedCidrs).
    ssh_allowed_cidrs: Sequence[str]
    # The /shared claim's name (SharedStorage.claim_name), mounted by slurmd and login pods.
    shared_claim: str
    # Where slurmdbd stores the records: the database's address (AccountingDatabase.address).
    accounting_host: pulumi.Input[str]
    # The Secret with the database's password, which slurmdbd reads by reference
    # (AccountingDatabase.password_secret).
    accounting_password_secret: str
    # Fair share and enforcement in slurm.conf (StackConfig.scheduling; model/builders/scheduling.py).
    scheduling: SchedulingPolicy
    # slurmctld's metrics endpoints and the DCGM job mapping prolog (the `metrics` key).
    metrics: bool
    # The `Topology=` of each placed pool's partition (model/builders/topology.py partition_topologies).
    partition_topologies: Mapping[str, str]
    # The EKS cluster it is part of (ClusterContext), for its Kubernetes provider, and its name,
    # ARN, account and region for the slurmd pods' Pod Identity role.
    cluster: ClusterContext
    # What every object in the slurm namespace here waits for (the release through its keys and
    # state claim): the Namespace (SharedStorage.namespace_ready).
    depends_on: Sequence[pulumi.Resource]
    # What the controller's gp3 state claim (and its guard) waits for, and must be deleted
    # before: StorageClass and EBS driver (SharedStorage.gp3_ready).
    state_depends_on: Sequence[pulumi.Resource]
    # What the Slurm release waits for: operator webhook Ready, the /shared claim bound, the
    # device plugins running, the accounting database available with its ingress rule and password
    # Secret (SlinkyOperator.ready, SharedStorage.ready, DevicePlugins.ready, AccountingDatabase.ready).
    release_depends_on: Sequence[pulumi.Resource]
    # What the login Service waits for: the load balancer controller (LoadBalancerController.ready),
    # so the Service is deleted while the controller still runs to delete the NLB.
    login_depends_on: Sequence[pulumi.Resource]
    # The login NLB's subnets, one per AZ, where the stack is given its VPC (ExistingVpc.
    # login_subnet_ids); () to let the controller discover the stack's own tagged subnets.
    login_subnet_ids: Sequence[str]
    # An internal NLB: a given VPC with no public subnet (ExistingVpc.login_internal).
    login_internal: bool


# The identities' init containers (model/builders/identities.py): they read the image's files and write an
# emptyDir, as the pod's own user, with no capability.
_INIT_SECURITY = {**container_security(), "seccompProfile": {"type": "RuntimeDefault"}}


def login_user(root_key: str, users: Sequence[User]) -> str:
    """Who the sshCommand output logs in as: root where root has a key (as before named users),
    else the first admin (the config's rules require one: model/checks/config_schema.py)."""
    if root_key:
        return "root"
    return next(u.name for u in users if u.admin)


class SlurmCluster(pulumi.ComponentResource):
    release: k8s.helm.v3.Release  # the Slinky `slurm` release (custom resources only)
    release_values: pulumi.Output[dict]  # the values computed here, before the reviewed base
    login: k8s.core.v1.Service  # the login NLB's Service
    login_hostname: pulumi.Output[str]  # the NLB's DNS name
    ssh_command: pulumi.Output[str]  # `ssh <login_user>@<login_hostname>`
    # What waits for the Slurm cluster (the readiness check): the release and the login endpoint.
    ready: list[pulumi.Resource]

    def __init__(self, name: str, args: SlurmClusterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:slurm:SlurmCluster", name, None, opts)
        self._name, self._args = name, args
        slurm_key = self._key_secret("slurm", SLURM_KEY_SECRET, "slurm.key", 1024)
        jwt_key = self._key_secret("jwt", JWT_KEY_SECRET, "jwt.key", 64)
        state = self._state_claim()
        health = self._health_check()
        priority = self._control_plane_priority()
        service_account, association = self._registry_identity()
        self.release_values = self._values()
        self.release = self._release(
            [slurm_key, jwt_key, state, health, priority, service_account, association]
        )
        self.login = self._login()
        self.login_hostname = self.login.status.load_balancer.ingress[0].hostname
        self.ssh_command = pulumi.Output.concat(
            f"ssh {login_user(args.ssh_public_key, args.users)}@", self.login_hostname
        )
        self.ready = [self.release, self.login]
        self.register_outputs({"login_hostname": self.login_hostname, "ssh_command": self.ssh_command})

    def _key_secret(self, suffix: str, secret: str, key: str, length: int) -> k8s.core.v1.Secret:
        # Random bytes live in the state: the same keys on every preview and update.
        name, args = self._name, self._args
        raw = random.RandomBytes(
            f"{name}-{suffix}-key-bytes", length=length, opts=pulumi.ResourceOptions(parent=self)
        )
        return k8s.core.v1.Secret(
            f"{name}-{suffix}-key",
            metadata={"name": secret, "namespace": SLURM_NAMESPACE},
            data={key: raw.base64},
            immutable=True,
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.cluster.provider, depends_on=list(args.depends_on)
            ),
        )

    def _control_plane_priority(self) -> k8s.scheduling.v1.PriorityClass:
        """The daemons' PriorityClass (model/builders/slurm_values.py control_plane_priority_class): before
        the release, whose pods name it, and deleted after it."""
        args = self._args
        return k8s.scheduling.v1.PriorityClass(
            f"{self._name}-control-plane-priority",
            **control_plane_priority_class(),
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.cluster.provider, depends_on=list(args.depends_on)
            ),
        )

    def _health_check(self) -> k8s.core.v1.ConfigMap:
        """The health check and every pool's expectations. A fixed name and mutable: the NodeSets
        mount it as a directory, which the kubelet keeps current, so a changed check reaches the
        running slurmd pods without a rollout."""
        args = self._args
        return k8s.core.v1.ConfigMap(
            f"{self._name}-node-health",
            metadata={"name": HEALTH_CONFIGMAP, "namespace": SLURM_NAMESPACE},
            data=node_health.configmap_data(health_program(), args.gpu_pools),
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.cluster.provider, depends_on=list(args.depends_on)
            ),
        )

    def _state_claim(self) -> k8s.core.v1.PersistentVolumeClaim:
        name, args = self._name, self._args
        # Deleted after the claim and before the StorageClass, the EBS driver and the nodes, the
        # guard holds destroy until the claim's EBS volume is deleted too.
        guard = StateVolumeGuard(
            f"{name}-state-guard",
            StateVolumeGuardArgs(
                namespace=SLURM_NAMESPACE,
                claim=STATE_CLAIM,
                cluster=args.cluster,
                depends_on=[*args.depends_on, *args.state_depends_on],
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        return k8s.core.v1.PersistentVolumeClaim(
            f"{name}-state",
            metadata={
                "name": STATE_CLAIM,
                "namespace": SLURM_NAMESPACE,
                # gp3 binds when slurmctld is scheduled (WaitForFirstConsumer): no wait here.
                "annotations": {"pulumi.com/skipAwait": "true"},
            },
            spec={
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": GP3,
                "resources": {"requests": {"storage": "4Gi"}},
            },
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.cluster.provider,
                depends_on=[*args.depends_on, *args.state_depends_on, guard.deployment],
            ),
        )

    def _registry_identity(self) -> tuple[k8s.core.v1.ServiceAccount, aws.eks.PodIdentityAssociation]:
        """The slurmd pods' service account and the Pod Identity role it is handed: pull from the
        account's ECR repositories in the stack's region tagged for this cluster, nothing else
        (model/builders/containers.py registry_pull_policy). Both before the release: EKS gives
        credentials only to pods created after the association (components/_parts/pod_identity.py)."""
        name, args = self._name, self._args
        service_account = k8s.core.v1.ServiceAccount(
            f"{name}-slurmd-account",
            metadata={"name": containers.SLURMD_SERVICE_ACCOUNT, "namespace": SLURM_NAMESPACE},
            # No Kubernetes API token in the pods (Pod Identity's is a projected volume of its own).
            automount_service_account_token=False,
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.cluster.provider, depends_on=list(args.depends_on)
            ),
        )
        document = pulumi.Output.all(args.image_repository, args.cluster.arn).apply(
            lambda known: json.dumps(
                containers.registry_pull_policy(containers.EcrRegistry.of(*known), args.cluster.name)
            )
        )
        account = ServiceAccountRef(
            args.cluster.name, args.cluster.arn, SLURM_NAMESPACE, containers.SLURMD_SERVICE_ACCOUNT
        )
        association = pod_identity(
            f"{name}-registry",
            account,
            document,
            self,
            [*args.depends_on, *args.cluster.pod_identity_ready],
        )
        return service_account, association

    def _values(self) -> pulumi.Output[dict]:
        args = self._args
        return pulumi.Output.all(
            args.image_repository, args.image_digest, args.accounting_host, args.cluster.arn
        ).apply(
            lambda known: slurm_values(
                SlurmValuesArgs(
                    gpu_pools=args.gpu_pools,
                    image_repository=known[0],
                    image_digest=known[1],
                    image_tag=args.image_tag,
                    ssh_public_key=args.ssh_public_key,
                    users=args.users,
                    init_security=_INIT_SECURITY,
                    shared_claim=args.shared_claim,
                    state_claim=STATE_CLAIM,
                    slurm_key_secret=SLURM_KEY_SECRET,
                    jwt_key_secret=JWT_KEY_SECRET,
                    slinky_images=args.slinky_images,
                    accounting_host=known[2],
                    accounting_password_secret=args.accounting_password_secret,
                    scheduling=args.scheduling,
                    metrics=args.metrics,
                    partition_topologies=args.partition_topologies,
                    registry=containers.EcrRegistry.of(known[0], known[3]),
                )
            )
        )

    def _release(self, own: list[pulumi.Resource]) -> k8s.helm.v3.Release:
        """The release, after what it waits for and this component's keys and state claim (`own`)."""
        args = self._args
        return chart_release(
            f"{self._name}-release",
            "slurm",
            args.chart_version,
            versions.SLINKY_REPOSITORY,
            release_name=RELEASE,
            namespace=SLURM_NAMESPACE,
            values=self.release_values,
            parent=self,
            provider=args.cluster.provider,
            depends_on=[*args.release_depends_on, *own],
            timeout=1200,
        )

    def _login(self) -> k8s.core.v1.Service:
        args = self._args
        return k8s.core.v1.Service(
            f"{self._name}-login",
            metadata={
                "name": LOGIN_SERVICE,
                "namespace": SLURM_NAMESPACE,
                "annotations": {
                    **login_endpoint.annotations(args.login_subnet_ids, args.login_internal),
                    # Pulumi waits for the NLB's hostname and a Ready login pod behind it
                    # (pulumi-kubernetes provider/pkg/await/service.go): the NLB is provisioned while
                    # the release installs, so the wait covers the release's own timeout.
                    jobs_await.TIMEOUT: "1500",
                },
            },
            spec={
                "type": "LoadBalancer",
                "loadBalancerClass": NLB_CLASS,
                # The controller turns these into the NLB security group's only SSH rules.
                "loadBalancerSourceRanges": list(args.ssh_allowed_cidrs),
                "selector": {"app.kubernetes.io/instance": LOGINSET_OBJECT},
                "ports": [{"name": "ssh", "port": 22, "targetPort": 22, "protocol": "TCP"}],
            },
            # Not after the release: nothing of it is needed to create the NLB. The controller
            # must run first (and still run on delete to remove the NLB); the namespace holds it.
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.cluster.provider,
                depends_on=[*args.login_depends_on, *args.depends_on],
            ),
        )
