"""The Slurm cluster: its keys, the controller's state volume, the Slinky `slurm` release, and
the login endpoint (an internet-facing NLB that only sshAllowedCidrs can reach)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

from components.helm import chart_release
from components.slurm_values import SlurmValuesArgs, slurm_values
from components.state_volume_guard import StateVolumeGuard, StateVolumeGuardArgs
from model import versions
from model.contract import (
    GP3,
    JWT_KEY_SECRET,
    LOGIN_SERVICE,
    LOGINSET_OBJECT,
    NLB_CLASS,
    RELEASE,
    SLURM_KEY_SECRET,
    SLURM_NAMESPACE,
    STATE_CLAIM,
)
from model.gpu_pools import GpuPool


@dataclass(frozen=True)
class SlurmClusterArgs:
    chart_version: str
    gpu_pools: Sequence[GpuPool]   # one NodeSet and one partition each
    image_repository: pulumi.Input[str]
    image_digest: pulumi.Input[str]
    image_tag: str
    slinky_image_tag: str
    ssh_public_key: str
    ssh_allowed_cidrs: Sequence[str]
    shared_claim: str
    provider: k8s.Provider
    namespace: pulumi.Resource
    # What the controller's gp3 claim needs, and must be deleted before (StorageClass, EBS CSI).
    state_storage: Sequence[pulumi.Resource]
    # What the Slurm release waits for (operator webhook Ready, /shared claim, device plugins).
    after: Sequence[pulumi.Resource]
    # The login Service is deleted while the load balancer controller still runs.
    load_balancer_controller: pulumi.Resource


class SlurmCluster(pulumi.ComponentResource):
    release: k8s.helm.v3.Release
    release_values: pulumi.Output[dict]
    login: k8s.core.v1.Service
    login_hostname: pulumi.Output[str]
    ssh_command: pulumi.Output[str]

    def __init__(self, name: str, args: SlurmClusterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:slurm:SlurmCluster", name, None, opts)

        # Random bytes live in the state: the same keys on every preview and update.
        def key_secret(suffix: str, secret: str, key: str, length: int) -> k8s.core.v1.Secret:
            raw = random.RandomBytes(f"{name}-{suffix}-key-bytes", length=length,
                                     opts=pulumi.ResourceOptions(parent=self))
            return k8s.core.v1.Secret(
                f"{name}-{suffix}-key",
                metadata={"name": secret, "namespace": SLURM_NAMESPACE},
                data={key: raw.base64}, immutable=True,
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[args.namespace]))

        slurm_key = key_secret("slurm", SLURM_KEY_SECRET, "slurm.key", 1024)
        jwt_key = key_secret("jwt", JWT_KEY_SECRET, "jwt.key", 64)
        # Deleted after the claim and before the StorageClass, the EBS driver and the nodes, the
        # guard holds destroy until the claim's EBS volume is deleted too.
        guard = StateVolumeGuard(f"{name}-state-guard", StateVolumeGuardArgs(
            namespace=SLURM_NAMESPACE, claim=STATE_CLAIM, provider=args.provider,
            outlives=[args.namespace, *args.state_storage]), opts=pulumi.ResourceOptions(parent=self))
        state = k8s.core.v1.PersistentVolumeClaim(
            f"{name}-state",
            metadata={"name": STATE_CLAIM, "namespace": SLURM_NAMESPACE,
                      # gp3 binds when slurmctld is scheduled (WaitForFirstConsumer): no wait here.
                      "annotations": {"pulumi.com/skipAwait": "true"}},
            spec={"accessModes": ["ReadWriteOnce"], "storageClassName": GP3,
                  "resources": {"requests": {"storage": "4Gi"}}},
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider,
                                        depends_on=[args.namespace, *args.state_storage, guard.deployment]))

        values = pulumi.Output.all(args.image_repository, args.image_digest).apply(
            lambda image: slurm_values(SlurmValuesArgs(
                gpu_pools=args.gpu_pools, image_repository=image[0],
                image_digest=image[1], image_tag=args.image_tag, ssh_public_key=args.ssh_public_key,
                shared_claim=args.shared_claim, state_claim=STATE_CLAIM,
                slurm_key_secret=SLURM_KEY_SECRET, jwt_key_secret=JWT_KEY_SECRET,
                slinky_image_tag=args.slinky_image_tag)))
        self.release_values = values
        self.release = chart_release(
            f"{name}-release", "slurm", args.chart_version, versions.SLINKY_REPOSITORY,
            release_name=RELEASE, namespace=SLURM_NAMESPACE, values=values, parent=self,
            provider=args.provider, depends_on=[*args.after, slurm_key, jwt_key, state], timeout=1200)

        self.login = login = k8s.core.v1.Service(
            f"{name}-login",
            metadata={"name": LOGIN_SERVICE, "namespace": SLURM_NAMESPACE, "annotations": {
                "service.beta.kubernetes.io/aws-load-balancer-type": "external",
                "service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing",
                # Targets are the login pod's IP: no NodePort on every node.
                "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
                # Pulumi waits for the NLB's hostname and a Ready login pod behind it
                # (pulumi-kubernetes provider/pkg/await/service.go): the NLB is provisioned while
                # the release installs, so the wait covers the release's own timeout.
                "pulumi.com/timeoutSeconds": "1500"}},
            spec={"type": "LoadBalancer", "loadBalancerClass": NLB_CLASS,
                  # The controller turns these into the NLB security group's only SSH rules.
                  "loadBalancerSourceRanges": list(args.ssh_allowed_cidrs),
                  "selector": {"app.kubernetes.io/instance": LOGINSET_OBJECT},
                  "ports": [{"name": "ssh", "port": 22, "targetPort": 22, "protocol": "TCP"}]},
            # Not after the release: nothing of it is needed to create the NLB. The controller
            # must run first (and still run on delete to remove the NLB); the namespace holds it.
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider,
                                        depends_on=[args.load_balancer_controller, args.namespace]))
        self.login_hostname = login.status.load_balancer.ingress[0].hostname
        self.ssh_command = pulumi.Output.concat("ssh root@", self.login_hostname)
        self.register_outputs({"login_hostname": self.login_hostname, "ssh_command": self.ssh_command})
