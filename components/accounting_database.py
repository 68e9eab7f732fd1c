"""Slurm's accounting database: RDS for MariaDB in the VPC's private subnets, reachable on its port
from the cluster's nodes and pods only, encrypted, backed up, kept by `destroy` as a final snapshot
unless retainAccountingData is false; its generated password reaches slurmdbd only through a Kubernetes
Secret that the release's accounting.storageConfig.passwordKeyRef names
(docs/decisions/accounting-database.md)."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pulumi_random as random

from components.cluster import ClusterContext
from model.facts import audit_logs, versions
from model.facts.contract import (
    ACCOUNTING_DATABASE,
    ACCOUNTING_PASSWORD_KEY,
    ACCOUNTING_PASSWORD_SECRET,
    ACCOUNTING_PORT,
    ACCOUNTING_USER,
    SLURM_NAMESPACE,
)

# Automated backups kept this many days: point-in-time restore within the last week.
BACKUP_RETENTION_DAYS = 7
# SchedMD's server settings for slurmdbd that RDS does not already meet: long purge and upgrade
# queries must not time out on a lock (SchedMD/slurm doc/html/accounting.shtml at slurm-26-05-3-1,
# "innodb_lock_wait_timeout": 900). Both are dynamic, so they apply without a reboot.
SERVER_PARAMETERS = {
    "innodb_lock_wait_timeout": "900",
    # "at least 16M" (same page); 64 MiB leaves room for job scripts if they are stored.
    "max_allowed_packet": str(64 * 1024 * 1024),
}
# Letters and digits only: slurmdbd.conf, which the operator writes the password into
# (StoragePass=...), treats '#' as the start of a comment, and RDS refuses '/', '@', '"' and
# spaces in a master password (RDS API reference, CreateDBInstance MasterUserPassword).
PASSWORD_LENGTH = 40
# The MariaDB log RDS publishes to CloudWatch Logs: the server's errors (a failed login, a crash,
# an aborted connection). The general and slow query logs stay off: they record every statement.
LOG_EXPORTS = ("error",)


def instance_identifier(cluster_name: str) -> str:
    """The DB instance's name: the cluster's, with the runs of '-' an RDS identifier refuses (two in a
    row, or one at the end: RDS API reference, CreateDBInstance DBInstanceIdentifier) collapsed.
    Named, not generated, so its log group can be made before it."""
    return re.sub(r"-+", "-", cluster_name).strip("-") + "-accounting"


@dataclass(frozen=True)
class AccountingDatabaseArgs:
    """Every field is required (no defaults)."""

    # The EKS cluster it is part of (ClusterContext), for its name, its security group and its Kubernetes
    # provider.
    cluster: ClusterContext
    # The VPC of the database's security group (Network.vpc_id).
    vpc_id: pulumi.Input[str]
    # The cluster's two zones' private subnets (Network.private_subnet_ids): the DB subnet group
    # (RDS wants two AZs, and a Multi-AZ standby goes to the other one). Never the public subnets.
    private_subnet_ids: Sequence[pulumi.Input[str]]
    instance_class: str  # accountingInstanceClass
    storage_gib: int  # accountingStorageGiB
    multi_az: bool  # accountingMultiAz
    # Keep every record when the stack is destroyed, as a final snapshot (retainAccountingData).
    retain_data: bool
    # What the password's Secret waits for, and is deleted before: the slurm Namespace
    # (SharedStorage.namespace_ready). Nothing else here waits for the cluster.
    secret_depends_on: Sequence[pulumi.Resource]


class AccountingDatabase(pulumi.ComponentResource):
    address: pulumi.Output[str]  # the instance's DNS name, as slurmdbd's StorageHost
    port: pulumi.Output[int]  # its port (ACCOUNTING_PORT)
    arn: pulumi.Output[str]  # its ARN (arn:aws:rds:<region>:<account>:db:<identifier>)
    resource_id: pulumi.Output[str]  # RDS's own id of the instance (db-...): new on every replacement
    password_secret: str  # the Secret holding the password, in the slurm namespace
    # What slurmdbd's release waits for: the instance available, its ingress rule and the Secret.
    ready: list[pulumi.Resource]

    def __init__(
        self, name: str, args: AccountingDatabaseArgs, opts: Optional[pulumi.ResourceOptions] = None
    ):
        super().__init__("slinky-eks:accounting:AccountingDatabase", name, None, opts)
        self._name, self._args = name, args
        self._password = self._generated_password()
        self._identifier = instance_identifier(args.cluster.name)
        security_group, rule = self._security_group()
        instance = self._instance(security_group, self._log_groups())
        secret = self._password_secret()
        self.address, self.port, self.arn = instance.address, instance.port, instance.arn
        self.resource_id = instance.resource_id
        self.password_secret = ACCOUNTING_PASSWORD_SECRET
        self.ready = [instance, rule, secret]
        self.register_outputs({"address": self.address, "port": self.port, "arn": self.arn})

    def _generated_password(self) -> pulumi.Output[str]:
        # Drawn once and kept in the state (as the Slurm keys are); RandomPassword marks `result`
        # secret already, said again here so no refactor loses it.
        password = random.RandomPassword(
            f"{self._name}-password",
            length=PASSWORD_LENGTH,
            special=False,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return pulumi.Output.secret(password.result)

    def _security_group(self) -> tuple[aws.ec2.SecurityGroup, aws.vpc.SecurityGroupIngressRule]:
        """A group with no rule of its own (the provider removes AWS's default egress rule: the
        database opens no connection), and one ingress rule from the cluster security group."""
        name, args, child = self._name, self._args, pulumi.ResourceOptions(parent=self)
        group = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description="Slurm accounting database: MariaDB from the EKS cluster only",
            tags={"Name": f"{args.cluster.name}-accounting-db"},
            opts=child,
        )
        rule = aws.vpc.SecurityGroupIngressRule(
            f"{name}-from-cluster",
            security_group_id=group.id,
            ip_protocol="tcp",
            from_port=ACCOUNTING_PORT,
            to_port=ACCOUNTING_PORT,
            referenced_security_group_id=args.cluster.security_group_id,
            description="MariaDB from the cluster's nodes and pods (slurmdbd)",
            opts=child,
        )
        return group, rule

    def _log_groups(self) -> list[aws.cloudwatch.LogGroup]:
        # RDS creates a missing group with no retention (kept forever) and leaves it after the
        # instance is deleted; made here first, it has one and goes with the stack, as the
        # control plane's does (components/cluster.py).
        return [
            aws.cloudwatch.LogGroup(
                f"{self._name}-{log_type}-logs",
                name=audit_logs.database_log_group(self._identifier, log_type),
                retention_in_days=audit_logs.DEFAULT_RETENTION_DAYS,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for log_type in LOG_EXPORTS
        ]

    def _instance(
        self, security_group: aws.ec2.SecurityGroup, log_groups: list[aws.cloudwatch.LogGroup]
    ) -> aws.rds.Instance:
        name, args, child = self._name, self._args, pulumi.ResourceOptions(parent=self)
        subnets = aws.rds.SubnetGroup(
            f"{name}-subnets",
            subnet_ids=list(args.private_subnet_ids),
            description="Slurm accounting database: the cluster's private subnets",
            tags={"Name": f"{args.cluster.name}-accounting-db"},
            opts=child,
        )
        parameters = aws.rds.ParameterGroup(
            f"{name}-parameters",
            family=versions.ACCOUNTING_PARAMETER_FAMILY,
            description="Slurm accounting database: slurmdbd's server settings",
            parameters=[
                aws.rds.ParameterGroupParameterArgs(name=k, value=v, apply_method="immediate")
                for k, v in SERVER_PARAMETERS.items()
            ],
            opts=child,
        )
        return aws.rds.Instance(
            f"{name}-db",
            identifier=self._identifier,
            engine=versions.ACCOUNTING_ENGINE,
            engine_version=versions.ACCOUNTING_ENGINE_VERSION,
            # Minor releases come in the maintenance window; a major upgrade is a decision (docs/upgrading.md).
            auto_minor_version_upgrade=True,
            allow_major_version_upgrade=False,
            instance_class=args.instance_class,
            allocated_storage=args.storage_gib,
            storage_type="gp3",
            storage_encrypted=True,
            multi_az=args.multi_az,
            db_name=ACCOUNTING_DATABASE,
            username=ACCOUNTING_USER,
            password=self._password,
            db_subnet_group_name=subnets.name,
            vpc_security_group_ids=[security_group.id],
            publicly_accessible=False,
            parameter_group_name=parameters.name,
            backup_retention_period=BACKUP_RETENTION_DAYS,
            copy_tags_to_snapshot=True,
            # What destroy keeps (retainAccountingData): the instance cannot outlive the stack, as
            # its network interfaces hold the subnets and so the VPC (a retained instance would fail
            # destroy with DependencyViolation), so RDS takes a final snapshot of it and keeps its
            # automated backups for their retention; false, nothing is kept. No deletion protection:
            # with it RDS refuses the delete and `destroy` stops halfway.
            skip_final_snapshot=not args.retain_data,
            final_snapshot_identifier=self._final_snapshot() if args.retain_data else None,
            delete_automated_backups=not args.retain_data,
            deletion_protection=False,
            enabled_cloudwatch_logs_exports=list(LOG_EXPORTS),
            # A class or storage change takes effect in this `up`, as the key table says.
            apply_immediately=True,
            tags={"Name": f"{args.cluster.name}-accounting-db"},
            opts=pulumi.ResourceOptions(parent=self, depends_on=log_groups),
        )

    def _final_snapshot(self) -> pulumi.Output[str]:
        """The final snapshot's name: the cluster's, and a suffix drawn once per database, so the
        snapshot of a stack created again under the same name takes no name already taken (RDS
        refuses a snapshot identifier in use: DBSnapshotAlreadyExists)."""
        suffix = random.RandomString(
            f"{self._name}-snapshot-suffix",
            length=8,
            special=False,
            upper=False,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return pulumi.Output.concat(self._identifier, "-final-", suffix.result)

    def _password_secret(self) -> k8s.core.v1.Secret:
        # The operator reads it by reference (storageConfig.passwordKeyRef) into the slurmdbd.conf
        # Secret it owns (SlinkyProject/slurm-operator v1.2.1
        # internal/builder/accountingbuilder/accounting_config.go, BuildAccountingConfig).
        args = self._args
        return k8s.core.v1.Secret(
            f"{self._name}-password-secret",
            metadata={"name": ACCOUNTING_PASSWORD_SECRET, "namespace": SLURM_NAMESPACE},
            data={
                ACCOUNTING_PASSWORD_KEY: self._password.apply(lambda p: base64.b64encode(p.encode()).decode())
            },
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.cluster.provider, depends_on=list(args.secret_depends_on)
            ),
        )
