"""Storage: the EBS and EFS CSI drivers, the gp3 StorageClass, and the EFS file system that is
/shared for every slurmd and login pod (a static ReadWriteMany PV bound by name to a PVC).

/shared is for the nodes only. Without a file system policy EFS grants every client that reaches a
mount target full access, root included, and trusts the uid the client sends (Amazon EFS user
guide, "Using IAM to control access to file systems", the default EFS file system policy:
https://docs.aws.amazon.com/efs/latest/ug/iam-access-control-nfs-efs.html). So the file system has
a policy that lets only the nodes' roles mount, write and act as root, and refuses any access
without TLS; the PV mounts with TLS and IAM, so the EFS CSI node plugin signs each mount as the
node it runs on."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components._parts.pod_identity import ServiceAccountRef, pod_identity_role
from components.cluster import ClusterContext
from model.facts.contract import GP3, SHARED_MOUNT_OPTIONS, SLURM_NAMESPACE, SYSTEM_NAMESPACE

SHARED_PV = "slurm-shared"
SHARED_PVC = "shared"
# EFS is elastic; a PV still needs a capacity. Nothing enforces it.
SHARED_CAPACITY = "1Ti"
# What the nodes' roles may do on the file system: mount it, write, and keep root as root (without
# ClientRootAccess EFS maps uid 0 to 65534, and slurmd, the homes Job and the job staging write as
# root). Amazon EFS user guide, "Using IAM to control access to file systems":
# https://docs.aws.amazon.com/efs/latest/ug/iam-access-control-nfs-efs.html
CLIENT_ACTIONS = (
    "elasticfilesystem:ClientMount",
    "elasticfilesystem:ClientRootAccess",
    "elasticfilesystem:ClientWrite",
)


def file_system_policy(file_system_arn: str, node_role_arns: Sequence[str]) -> dict:
    """The EFS file system policy of /shared: the node roles may mount, write and act as root
    through a mount target; every client action without TLS is denied, whoever asks, and so is
    every client action of any other principal. An allow in either an identity policy or the file
    system policy is enough within the account (the guide below: "An allow permission on an action
    in either an IAM identity policy or a file system resource policy allows access"), so without
    that Deny a role of the account whose own policy grants elasticfilesystem:Client* (a power user,
    AmazonElasticFileSystemClientFullAccess) could mount /shared as root. A file system policy
    replaces EFS's default of full access to any client that reaches a mount target (Amazon EFS user
    guide, "Using IAM to control access to file systems", its default policy:
    https://docs.aws.amazon.com/efs/latest/ug/iam-access-control-nfs-efs.html; the TLS statement is
    the console's "Enforce in-transit encryption for all clients", "Creating file system policies":
    https://docs.aws.amazon.com/efs/latest/ug/create-file-system-policy.html)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "NodesMount",
                "Effect": "Allow",
                "Principal": {"AWS": sorted(set(node_role_arns))},
                "Action": list(CLIENT_ACTIONS),
                "Resource": file_system_arn,
                "Condition": {"Bool": {"elasticfilesystem:AccessedViaMountTarget": "true"}},
            },
            {
                "Sid": "TlsOnly",
                "Effect": "Deny",
                "Principal": {"AWS": "*"},
                "Action": list(CLIENT_ACTIONS),
                "Resource": file_system_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
            {
                # aws:PrincipalArn is the role's ARN for a session of the role, and absent for an
                # anonymous client, which ArnNotEquals then denies too (IAM user guide, "Condition
                # operators", ...IfExists and negated operators on a missing key;
                # https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html).
                "Sid": "NodesOnly",
                "Effect": "Deny",
                "Principal": {"AWS": "*"},
                "Action": list(CLIENT_ACTIONS),
                "Resource": file_system_arn,
                "Condition": {"ArnNotEquals": {"aws:PrincipalArn": sorted(set(node_role_arns))}},
            },
        ],
    }


@dataclass(frozen=True)
class SharedStorageArgs:
    """Every field is required (no defaults)."""

    # The EKS cluster it is part of (ClusterContext), for its name, its ARN, its security group and
    # its Kubernetes provider.
    cluster: ClusterContext
    # The role every node runs as (NodeGroups.role_name): the EFS client's (see _client_access).
    node_role_name: pulumi.Input[str]
    # The VPC of the NFS security group (Network.vpc_id).
    vpc_id: pulumi.Input[str]
    # The security group of the stack's nodes (NodeGroups.security_group_id): the only source the
    # mount targets admit.
    node_security_group_id: pulumi.Input[str]
    # The role every node group runs as (NodeGroups.role_arn): the only principal the file system
    # policy lets mount /shared.
    node_role_arns: Sequence[pulumi.Input[str]]
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
    # The CSI drivers' EKS add-ons the stack installs (StackConfig.csi_drivers): both in a cluster
    # of its own; in an existing one those installSharedAddons lists.
    csi_drivers: frozenset[str]
    # Whether the cluster is the stack's own. In one it does not own, a driver it installs takes over
    # nothing installed otherwise and stays on destroy (model/facts/shared_addons.py EBS_CSI_DRIVER).
    owns_cluster: bool
    # Whether the gp3 class is the cluster's default StorageClass: in the stack's own cluster; an
    # existing cluster's default is its owner's (two defaults make Kubernetes pick the newest for
    # every claim that names none: https://kubernetes.io/docs/tasks/administer-cluster/change-default-storage-class/).
    default_storage_class: bool


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
        ebs_driver = self._csi_driver_unless_present(
            "ebs-csi",
            "aws-ebs-csi-driver",
            ("ebs-csi-controller-sa", "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"),
        )
        # The EFS node DaemonSet tolerates every taint by default, so it mounts on GPU nodes too.
        # Its controller gets no role: it calls EFS to make and delete access points for
        # dynamically provisioned volumes (kubernetes-sigs/aws-efs-csi-driver docs/README.md,
        # "Dynamic Provisioning"; what AmazonEFSCSIDriverPolicy is for, with the describes around
        # them), and /shared is a static volume on the file system's root, provisioned by no one.
        # Mounts are the node plugin's (_client_access).
        efs_driver = self._csi_driver_unless_present("efs-csi", "aws-efs-csi-driver", None)
        storage_class = self._gp3_class()
        fs, mount_targets = self._file_system()
        policy = self._file_system_policy(fs)
        client_access = self._client_access(fs)
        namespace = self._slurm_namespace()
        claim = self._shared_claim(fs, [*mount_targets, policy, *efs_driver, client_access], namespace)
        self.file_system_id = fs.id
        self.claim_name = SHARED_PVC
        self.ready = [claim]
        self.namespace_ready = [namespace]
        self.gp3_ready = [storage_class, *ebs_driver]
        self.register_outputs({"file_system_id": self.file_system_id})

    def _csi_driver_unless_present(
        self, short: str, addon: str, identity: tuple[str, str] | None
    ) -> list[aws.eks.Addon]:
        """The add-on as _csi_driver makes it, or nothing where the stack does not install it."""
        return [self._csi_driver(short, addon, identity)] if addon in self._args.csi_drivers else []

    def _csi_driver(self, short: str, addon: str, identity: tuple[str, str] | None) -> aws.eks.Addon:
        """The add-on, and with `identity` (service account, managed policy) a Pod Identity role
        for that service account."""
        name, args = self._name, self._args
        associations, policies = None, []
        if identity is not None:
            account, policy = identity
            # EKS installs the CSI add-ons into kube-system (SYSTEM_NAMESPACE).
            pod_role = pod_identity_role(
                f"{name}-{short}",
                ServiceAccountRef(args.cluster.name, args.cluster.arn, SYSTEM_NAMESPACE, account),
                [policy],
                parent=self,
            )
            associations = [
                aws.eks.AddonPodIdentityAssociationArgs(role_arn=pod_role.role.arn, service_account=account)
            ]
            policies = pod_role.policies
        return aws.eks.Addon(
            f"{name}-{short}",
            cluster_name=args.cluster.name,
            addon_name=addon,
            # In the stack's own cluster nothing but the stack installs a driver. In a cluster it
            # does not own: NONE, so CreateAddon fails on objects installed otherwise instead of
            # taking them over, and preserve, so DeleteAddon leaves the driver the cluster's
            # volumes may use running (EKS API Reference, CreateAddon resolveConflicts:
            # https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAddon.html;
            # DeleteAddon preserve: https://docs.aws.amazon.com/eks/latest/APIReference/API_DeleteAddon.html).
            resolve_conflicts_on_create="OVERWRITE" if args.owns_cluster else "NONE",
            preserve=None if args.owns_cluster else True,
            pod_identity_associations=associations,
            # The driver deletes volumes with the role's policy until its add-on is gone.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*args.depends_on, *policies]),
        )

    def _client_access(self, fs: aws.efs.FileSystem) -> aws.iam.RolePolicy:
        """The node role may mount, write and act as root on this file system, through a mount
        target only. The EFS CSI node plugin mounts with efs-utils, which with the `iam` mount
        option signs in with the first credentials it finds: its service account has no Pod
        Identity association, and it runs on the host network, so that is the node role from IMDS
        (aws/efs-utils README, "Using IAM to authorize mounts"; kubernetes-sigs/aws-efs-csi-driver
        charts/aws-efs-csi-driver/templates/node-daemonset.yaml, hostNetwork). Actions and the
        condition key: Service Authorization Reference, Amazon Elastic File System
        (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonelasticfilesystem.html);
        the EFS user guide, "Using IAM to control file system data access"
        (https://docs.aws.amazon.com/efs/latest/ug/iam-access-control-nfs-efs.html)."""
        document = fs.arn.apply(
            lambda arn: json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Action": [
                                "elasticfilesystem:ClientMount",
                                "elasticfilesystem:ClientWrite",
                                "elasticfilesystem:ClientRootAccess",
                            ],
                            "Resource": arn,
                            "Condition": {"Bool": {"elasticfilesystem:AccessedViaMountTarget": "true"}},
                        }
                    ],
                }
            )
        )
        return aws.iam.RolePolicy(
            f"{self._name}-efs-client",
            role=self._args.node_role_name,
            policy=document,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _gp3_class(self) -> k8s.storage.v1.StorageClass:
        return k8s.storage.v1.StorageClass(
            f"{self._name}-gp3",
            metadata={
                "name": GP3,
                **(
                    {"annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}
                    if self._args.default_storage_class
                    else {}
                ),
            },
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
                    security_groups=[args.node_security_group_id],
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

    def _file_system_policy(self, fs: aws.efs.FileSystem) -> aws.efs.FileSystemPolicy:
        """The nodes' roles alone may mount, write and act as root; nothing without TLS."""
        args = self._args
        document = pulumi.Output.all(fs.arn, *args.node_role_arns).apply(
            lambda known: json.dumps(file_system_policy(known[0], known[1:]), sort_keys=True)
        )
        return aws.efs.FileSystemPolicy(
            f"{self._name}-efs-policy",
            file_system_id=fs.id,
            policy=document,
            # A file system kept on destroy (retainSharedData) keeps its policy: without it EFS
            # would fall back to full access for any client that reaches a mount target.
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=self._args.retain_data),
        )

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
                # TLS: the driver mounts through the efs-utils TLS tunnel unless encryptInTransit is
                # "false" (kubernetes-sigs/aws-efs-csi-driver v3.4.1 pkg/driver/node.go,
                # NodePublishVolume: encryptInTransit defaults to true and adds `tls`); left to that default, since a PV's
                # source (csi, its attributes included) cannot change after creation
                # (kubernetes/kubernetes pkg/apis/core/validation/validation.go,
                # ValidatePersistentVolumeUpdate) and the policy refuses a mount without TLS anyway.
                "csi": {"driver": "efs.csi.aws.com", "volumeHandle": fs.id},
                # IAM: efs-utils signs the mount with the credentials of the EFS CSI node plugin,
                # the node's role, read from IMDS (the plugin has host networking: one hop,
                # docs/decisions/imds-hop-limit.md); unsigned, a mount is anonymous, which the
                # policy refuses (https://docs.aws.amazon.com/efs/latest/ug/mounting-IAM-option.html).
                # Mount options, unlike the source, may change on an existing PV.
                "mountOptions": list(SHARED_MOUNT_OPTIONS),
            },
            # A PV used before its mount targets, its file system policy (and the EFS driver)
            # exist hangs pods in ContainerCreating.
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
