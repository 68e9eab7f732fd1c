"""Storage: the EBS and EFS CSI drivers, the gp3 StorageClass, and the EFS file system that is
/shared for every slurmd and login pod (a static ReadWriteMany PV bound by name to a PVC)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components._parts.pod_identity import ServiceAccountRef, pod_identity_role
from components.cluster import ClusterContext
from model.facts.contract import GP3, SLURM_NAMESPACE, SYSTEM_NAMESPACE

SHARED_PV = "slurm-shared"
SHARED_PVC = "shared"
# EFS is elastic; a PV still needs a capacity. Nothing enforces it.
SHARED_CAPACITY = "1Ti"


@dataclass(frozen=True)
class SharedStorageArgs:
    """Every field is required (no defaults)."""

    # The EKS cluster it is part of (ClusterContext), for its name, its security group and its Kubernetes
    # provider.
    cluster: ClusterContext
    # The VPC of the NFS security group (Network.vpc_id).
    vpc_id: pulumi.Input[str]
    # Every AZ with nodes needs a mount target, the GPU AZ at least, or mounts time out
    # (https://docs.aws.amazon.com/efs/latest/ug/accessing-fs.html; kubernetes-sigs/aws-efs-csi-driver
    # issue #228). Each node subnet by the key its mount target is named by
    # (Network.private_subnet_by_key): a pool AZ added or removed renames no other mount target.
    node_subnet_by_key: Mapping[str, pulumi.Input[str]]
    # What the CSI drivers wait for: the core nodes their controllers run on (Deployments: created
    # before nodes they stay DEGRADED, the CoreDNS trap) and the Pod Identity agent, which gives
    # them their AWS credentials and outlives them on destroy while they delete volumes.
    depends_on: Sequence[pulumi.Resource]
    # Keep the EFS file system (and /shared's data) when the stack is destroyed (retainSharedData).
    retain_data: bool


class SharedStorage(pulumi.ComponentResource):
    file_system_id: pulumi.Output[str]  # the EFS file system behind /shared
    claim_name: str  # the /shared claim's name, in the slurm namespace
    # What a pod mounting /shared waits for: the claim, bound to the EFS volume.
    ready: list[pulumi.Resource]
    # What an object in the slurm namespace waits for (and is deleted before): the Namespace.
    namespace_ready: list[pulumi.Resource]
    # What a gp3 claim waits for, and must be deleted before: the StorageClass and the EBS driver.
    gp3_ready: list[pulumi.Resource]

    def __init__(self, name: str, args: SharedStorageArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:storage:SharedStorage", name, None, opts)
        self._name, self._args = name, args
        ebs_driver = self._csi_driver(
            "ebs-csi",
            "aws-ebs-csi-driver",
            "ebs-csi-controller-sa",
            "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy",
        )
        # The EFS node DaemonSet tolerates every taint by default, so it mounts on GPU nodes too.
        efs_driver = self._csi_driver(
            "efs-csi",
            "aws-efs-csi-driver",
            "efs-csi-controller-sa",
            "arn:aws:iam::aws:policy/service-role/AmazonEFSCSIDriverPolicy",
        )
        storage_class = self._gp3_class()
        fs, mount_targets = self._file_system()
        namespace = self._slurm_namespace()
        claim = self._shared_claim(fs, [*mount_targets, efs_driver], namespace)
        self.file_system_id = fs.id
        self.claim_name = SHARED_PVC
        self.ready = [claim]
        self.namespace_ready = [namespace]
        self.gp3_ready = [storage_class, ebs_driver]
        self.register_outputs({"file_system_id": self.file_system_id})

    def _csi_driver(self, short: str, addon: str, account: str, policy: str) -> aws.eks.Addon:
        name, args = self._name, self._args
        # EKS installs the CSI add-ons into kube-system (SYSTEM_NAMESPACE).
        role = pod_identity_role(
            f"{name}-{short}",
            ServiceAccountRef(args.cluster.name, SYSTEM_NAMESPACE, account),
            [policy],
            parent=self,
        )
        return aws.eks.Addon(
            f"{name}-{short}",
            cluster_name=args.cluster.name,
            addon_name=addon,
            resolve_conflicts_on_create="OVERWRITE",
            pod_identity_associations=[
                aws.eks.AddonPodIdentityAssociationArgs(role_arn=role.arn, service_account=account)
            ],
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on)),
        )

    def _gp3_class(self) -> k8s.storage.v1.StorageClass:
        return k8s.storage.v1.StorageClass(
            f"{self._name}-gp3",
            metadata={"name": GP3, "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            provisioner="ebs.csi.aws.com",
            parameters={"type": "gp3", "encrypted": "true", "fsType": "ext4"},
            # Bind where the pod lands: an EBS volume lives in one AZ.
            volume_binding_mode="WaitForFirstConsumer",
            allow_volume_expansion=True,
            reclaim_policy="Delete",
            opts=pulumi.ResourceOptions(parent=self, provider=self._args.cluster.provider),
        )

    def _file_system(self) -> tuple[aws.efs.FileSystem, list[aws.efs.MountTarget]]:
        """The EFS file system and a mount target in every node subnet, reachable over NFS from
        the cluster's nodes only."""
        name, args, child = self._name, self._args, pulumi.ResourceOptions(parent=self)
        nfs = aws.ec2.SecurityGroup(
            f"{name}-nfs",
            vpc_id=args.vpc_id,
            description="NFS from the EKS cluster only",
            ingress=[
                aws.ec2.SecurityGroupIngressArgs(
                    protocol="tcp",
                    from_port=2049,
                    to_port=2049,
                    security_groups=[args.cluster.security_group_id],
                    description="NFS from cluster nodes",
                )
            ],
            tags={"Name": f"{args.cluster.name}-nfs"},
            opts=child,
        )
        fs = aws.efs.FileSystem(
            f"{name}-efs",
            encrypted=True,
            throughput_mode="elastic",
            performance_mode="generalPurpose",
            tags={"Name": f"{args.cluster.name}-shared"},
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=args.retain_data),
        )
        mount_targets = [
            aws.efs.MountTarget(
                f"{name}-efs-mt-{key}",
                file_system_id=fs.id,
                subnet_id=subnet,
                security_groups=[nfs.id],
                opts=child,
            )
            for key, subnet in args.node_subnet_by_key.items()
        ]
        return fs, mount_targets

    def _slurm_namespace(self) -> k8s.core.v1.Namespace:
        return k8s.core.v1.Namespace(
            f"{self._name}-slurm-ns",
            metadata={"name": SLURM_NAMESPACE},
            opts=pulumi.ResourceOptions(parent=self, provider=self._args.cluster.provider),
        )

    def _shared_claim(
        self, fs: aws.efs.FileSystem, mountable: list[pulumi.Resource], namespace: k8s.core.v1.Namespace
    ) -> k8s.core.v1.PersistentVolumeClaim:
        """A static ReadWriteMany PV on the file system, bound by name to the /shared claim."""
        name, args = self._name, self._args
        volume = k8s.core.v1.PersistentVolume(
            f"{name}-shared-pv",
            metadata={"name": SHARED_PV},
            spec={
                "capacity": {"storage": SHARED_CAPACITY},
                "accessModes": ["ReadWriteMany"],
                # Deleting the claim never deletes the data (docs/operations.md, Teardown).
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "volumeMode": "Filesystem",
                # Reserved for our claim, so no other claim can take it.
                "claimRef": {"namespace": SLURM_NAMESPACE, "name": SHARED_PVC},
                "csi": {"driver": "efs.csi.aws.com", "volumeHandle": fs.id},
            },
            # A PV used before its mount targets (and the EFS driver) exist hangs pods in
            # ContainerCreating.
            opts=pulumi.ResourceOptions(parent=self, provider=args.cluster.provider, depends_on=mountable),
        )
        return k8s.core.v1.PersistentVolumeClaim(
            f"{name}-shared-pvc",
            metadata={"name": SHARED_PVC, "namespace": SLURM_NAMESPACE},
            spec={
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": SHARED_PV,
                "resources": {"requests": {"storage": SHARED_CAPACITY}},
            },
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.cluster.provider, depends_on=[volume, namespace]
            ),
        )
