"""Storage: the EBS and EFS CSI drivers, the gp3 StorageClass, and the EFS file system that is
/shared for every slurmd and login pod (a static ReadWriteMany PV bound by name to a PVC)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.pod_identity import ServiceAccountRef, pod_identity_role
from model.contract import GP3, SLURM_NAMESPACE

SHARED_PV = "slurm-shared"
SHARED_PVC = "shared"
# EFS is elastic; a PV still needs a capacity. Nothing enforces it.
SHARED_CAPACITY = "1Ti"


@dataclass(frozen=True)
class SharedStorageArgs:
    cluster_name: str
    vpc_id: pulumi.Input[str]
    cluster_security_group_id: pulumi.Input[str]
    # Every AZ with nodes needs a mount target, the GPU AZ at least, or mounts time out
    # (https://docs.aws.amazon.com/efs/latest/ug/accessing-fs.html; kubernetes-sigs/aws-efs-csi-driver
    # issue #228).
    node_subnet_ids: Sequence[pulumi.Input[str]]
    provider: k8s.Provider
    system_nodes: Sequence[pulumi.Resource]
    # The CSI controllers get their AWS credentials through Pod Identity (and delete volumes on
    # destroy with them): they wait for its agent, which outlives them.
    pod_identity_agent: pulumi.Resource
    # Keep the EFS file system (and /shared's data) when the stack is destroyed.
    retain_data: bool


class SharedStorage(pulumi.ComponentResource):
    file_system_id: pulumi.Output[str]
    claim_name: str
    namespace: k8s.core.v1.Namespace
    claim: k8s.core.v1.PersistentVolumeClaim
    storage_class: k8s.storage.v1.StorageClass
    ebs_driver: aws.eks.Addon

    def __init__(self, name: str, args: SharedStorageArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("slinky-eks:storage:SharedStorage", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.provider)

        # CSI controllers are Deployments: created before nodes they stay DEGRADED (the CoreDNS
        # trap), so they wait for the core nodes.
        def csi_driver(short: str, addon: str, account: str, policy: str) -> aws.eks.Addon:
            # EKS installs the CSI add-ons into kube-system.
            role = pod_identity_role(f"{name}-{short}", ServiceAccountRef(args.cluster_name, "kube-system", account),
                                     [policy], parent=self)
            return aws.eks.Addon(
                f"{name}-{short}", cluster_name=args.cluster_name, addon_name=addon,
                resolve_conflicts_on_create="OVERWRITE",
                pod_identity_associations=[aws.eks.AddonPodIdentityAssociationArgs(
                    role_arn=role.arn, service_account=account)],
                opts=pulumi.ResourceOptions(parent=self,
                                            depends_on=[*args.system_nodes, args.pod_identity_agent]))

        self.ebs_driver = csi_driver("ebs-csi", "aws-ebs-csi-driver", "ebs-csi-controller-sa",
                                     "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy")
        # The EFS node DaemonSet tolerates every taint by default, so it mounts on GPU nodes too.
        efs_driver = csi_driver("efs-csi", "aws-efs-csi-driver", "efs-csi-controller-sa",
                                "arn:aws:iam::aws:policy/service-role/AmazonEFSCSIDriverPolicy")

        self.storage_class = k8s.storage.v1.StorageClass(
            f"{name}-gp3",
            metadata={"name": GP3, "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            provisioner="ebs.csi.aws.com",
            parameters={"type": "gp3", "encrypted": "true", "fsType": "ext4"},
            # Bind where the pod lands: an EBS volume lives in one AZ.
            volume_binding_mode="WaitForFirstConsumer", allow_volume_expansion=True,
            reclaim_policy="Delete", opts=k8s_opts)

        nfs = aws.ec2.SecurityGroup(
            f"{name}-nfs", vpc_id=args.vpc_id, description="NFS from the EKS cluster only",
            ingress=[aws.ec2.SecurityGroupIngressArgs(
                protocol="tcp", from_port=2049, to_port=2049,
                security_groups=[args.cluster_security_group_id], description="NFS from cluster nodes")],
            tags={"Name": f"{args.cluster_name}-nfs"}, opts=child)
        fs = aws.efs.FileSystem(
            f"{name}-efs", encrypted=True, throughput_mode="elastic", performance_mode="generalPurpose",
            tags={"Name": f"{args.cluster_name}-shared"},
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=args.retain_data))
        mount_targets = [
            aws.efs.MountTarget(f"{name}-efs-mt-{i}", file_system_id=fs.id, subnet_id=subnet,
                                security_groups=[nfs.id], opts=child)
            for i, subnet in enumerate(args.node_subnet_ids)]

        self.namespace = k8s.core.v1.Namespace(
            f"{name}-slurm-ns", metadata={"name": SLURM_NAMESPACE}, opts=k8s_opts)
        volume = k8s.core.v1.PersistentVolume(
            f"{name}-shared-pv",
            metadata={"name": SHARED_PV},
            spec={"capacity": {"storage": SHARED_CAPACITY}, "accessModes": ["ReadWriteMany"],
                  # Deleting the claim never deletes the data (README: teardown).
                  "persistentVolumeReclaimPolicy": "Retain",
                  "storageClassName": "", "volumeMode": "Filesystem",
                  # Reserved for our claim, so no other claim can take it.
                  "claimRef": {"namespace": SLURM_NAMESPACE, "name": SHARED_PVC},
                  "csi": {"driver": "efs.csi.aws.com", "volumeHandle": fs.id}},
            # A PV used before its mount targets exist hangs pods in ContainerCreating.
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider,
                                        depends_on=[*mount_targets, efs_driver]))
        self.claim = k8s.core.v1.PersistentVolumeClaim(
            f"{name}-shared-pvc",
            metadata={"name": SHARED_PVC, "namespace": SLURM_NAMESPACE},
            spec={"accessModes": ["ReadWriteMany"], "storageClassName": "",
                  "volumeName": SHARED_PV, "resources": {"requests": {"storage": SHARED_CAPACITY}}},
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider,
                                        depends_on=[volume, self.namespace]))
        self.file_system_id = fs.id
        self.claim_name = SHARED_PVC
        self.register_outputs({"file_system_id": self.file_system_id})
