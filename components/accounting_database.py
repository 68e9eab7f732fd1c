"""Slurm's accounting database: RDS for MariaDB in the VPC's private subnets, reachable on its port
from the cluster's nodes and pods only and over TLS only, encrypted, backed up, kept by `destroy` as
a final snapshot unless retainAccountingData is false (docs/decisions/accounting-database.md).

slurmdbd connects as a user of its own with every privilege on its database and none elsewhere,
whose generated password reaches it only through the Kubernetes Secret that the release's
accounting.storageConfig.passwordKeyRef names. A one-shot Job (cluster_programs/
accounting_database_user.py) creates that user, as the RDS master user, before slurmdbd starts;
the master password is in a Secret of its own that only that Job mounts. Both verify the server
against the region's RDS CA bundle, which `pulumi up` fetches and keeps in a ConfigMap."""

from __future__ import annotations

import base64
import hashlib
import re
import urllib.request
from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pulumi_random as random

from components._parts.jobs_await import job_annotations
from components._parts.program_code import program_code
from components.cluster import ClusterContext
from model.builders.program_job import program_pod
from model.facts import audit_logs, versions
from model.facts.contract import (
    ACCOUNTING_ADMIN_SECRET,
    ACCOUNTING_ADMIN_USER,
    ACCOUNTING_CA_CONFIGMAP,
    ACCOUNTING_CA_DIR,
    ACCOUNTING_CA_KEY,
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
    # Every connection over TLS; RDS for MariaDB 11.4 has it off by default. Dynamic: "You don't
    # need to reboot your DB instance for the change to take effect" (Amazon RDS User Guide,
    # "Requiring SSL/TLS for all connections to a MariaDB DB instance on Amazon RDS",
    # https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/mariadb-ssl-connections.require-ssl.html).
    "require_secure_transport": "1",
}
# The RDS CA bundle of a region: the root and intermediate CAs that sign its DB instances' server
# certificates, served over HTTPS only (Amazon RDS User Guide, "Using SSL/TLS to encrypt a
# connection to a DB instance or cluster", Certificate bundles by AWS Region:
# https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/UsingWithRDS.SSL.html).
CA_BUNDLE_URL = "https://truststore.pki.rds.amazonaws.com/{region}/{region}-bundle.pem"
PEM_CERTIFICATE = "-----BEGIN CERTIFICATE-----"
# Letters and digits only: slurmdbd.conf, which the operator writes the password into
# (StoragePass=...), treats '#' as the start of a comment, and RDS refuses '/', '@', '"' and
# spaces in a master password (RDS API reference, CreateDBInstance MasterUserPassword).
PASSWORD_LENGTH = 40
# The MariaDB log RDS publishes to CloudWatch Logs: the server's errors (a failed login, a crash,
# an aborted connection). The general and slow query logs stay off: they record every statement.
LOG_EXPORTS = ("error",)
# The database user Job: its code (shipped as every program Job's is: components/_parts/program_code.py),
# its service account (no Kubernetes API access: no token), and how long it may take, mostly a new
# instance's DNS name not resolving yet.
USER_JOB_MODULES = ("accounting_database_user.py",)
USER_JOB_ACCOUNT = "slurm-accounting-database-user"
USER_JOB_TIMEOUT_SECONDS = 600


def rds_ca_bundle(region: str) -> str:
    """The region's RDS CA bundle (CA_BUNDLE_URL), fetched when the program runs: in state it is
    the ConfigMap's data, so an `up` that finds the same bundle changes nothing; one that finds a
    CA AWS added updates the ConfigMap in place. Offline runs answer for it
    (devkit/offline_account.py rds_ca_bundle)."""
    url = CA_BUNDLE_URL.format(region=region)
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            text = response.read().decode()
    except (OSError, UnicodeDecodeError) as e:
        raise RuntimeError(
            f"cannot fetch the RDS CA bundle for the accounting database's TLS, {url}: {e}"
        ) from None
    if PEM_CERTIFICATE not in text:
        raise RuntimeError(f"{url} holds no PEM certificate: not an RDS CA bundle")
    return text


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


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
    # The security group of the stack's nodes (NodeGroups.security_group_id): the only source the
    # database admits.
    node_security_group_id: pulumi.Input[str]
    # The cluster's two zones' private subnets (Network.private_subnet_ids): the DB subnet group
    # (RDS wants two AZs, and a Multi-AZ standby goes to the other one). Never the public subnets.
    private_subnet_ids: Sequence[pulumi.Input[str]]
    instance_class: str  # accountingInstanceClass
    storage_gib: int  # accountingStorageGiB
    multi_az: bool  # accountingMultiAz
    # Keep every record when the stack is destroyed, as a final snapshot (retainAccountingData).
    retain_data: bool
    # What the Secrets and the ConfigMap wait for, and are deleted before: the slurm Namespace
    # (SharedStorage.namespace_ready).
    secret_depends_on: Sequence[pulumi.Resource]
    # What the database user Job waits for besides: the core nodes it runs on (NodeGroups.core_ready).
    job_depends_on: Sequence[pulumi.Resource]
    # The region's RDS CA bundle (rds_ca_bundle), PEM.
    ca_bundle: str


class AccountingDatabase(pulumi.ComponentResource):
    address: pulumi.Output[str]  # the instance's DNS name, as slurmdbd's StorageHost
    port: pulumi.Output[int]  # its port (ACCOUNTING_PORT)
    arn: pulumi.Output[str]  # its ARN (arn:aws:rds:<region>:<account>:db:<identifier>)
    resource_id: pulumi.Output[str]  # RDS's own id of the instance (db-...): new on every replacement
    password_secret: str  # the Secret holding slurmdbd's password, in the slurm namespace
    # What slurmdbd's release waits for: the instance available, its ingress rule, slurmdbd's
    # Secret, the CA bundle and slurmdbd's user made (the Job complete).
    ready: list[pulumi.Resource]

    def __init__(
        self, name: str, args: AccountingDatabaseArgs, opts: Optional[pulumi.ResourceOptions] = None
    ):
        super().__init__("slinky-eks:accounting:AccountingDatabase", name, None, opts)
        self._name, self._args = name, args
        # The master user's, drawn anew (not the first release's `<name>-password`, which slurmdbd
        # used and its slurmdbd.conf held): a slurmdbd.conf read before the upgrade gives no
        # power over the instance. RDS changes a master password in place (ModifyDBInstance,
        # MasterUserPassword; applied at once below).
        self._admin_password = self._generated_password(f"{name}-admin-password")
        self._password = self._generated_password(f"{name}-slurmdbd-password")
        self._identifier = instance_identifier(args.cluster.name)
        security_group, rule = self._security_group()
        instance = self._instance(security_group, self._log_groups())
        secret = self._secret("password-secret", ACCOUNTING_PASSWORD_SECRET, self._password)
        admin_secret = self._secret("admin-secret", ACCOUNTING_ADMIN_SECRET, self._admin_password)
        ca = self._ca_bundle()
        job = self._user_job(instance, rule, admin_secret, secret, ca)
        self.address, self.port, self.arn = instance.address, instance.port, instance.arn
        self.resource_id = instance.resource_id
        self.password_secret = ACCOUNTING_PASSWORD_SECRET
        self.ready = [instance, rule, secret, ca, job]
        self.register_outputs({"address": self.address, "port": self.port, "arn": self.arn})

    def _generated_password(self, resource: str) -> pulumi.Output[str]:
        # Drawn once and kept in the state (as the Slurm keys are); RandomPassword marks `result`
        # secret already, said again here so no refactor loses it.
        password = random.RandomPassword(
            resource,
            length=PASSWORD_LENGTH,
            special=False,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return pulumi.Output.secret(password.result)

    def _security_group(self) -> tuple[aws.ec2.SecurityGroup, aws.vpc.SecurityGroupIngressRule]:
        """A group with no rule of its own (the provider removes AWS's default egress rule: the
        database opens no connection), and one ingress rule from the nodes' security group."""
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
            referenced_security_group_id=args.node_security_group_id,
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
            username=ACCOUNTING_ADMIN_USER,
            password=self._admin_password,
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

    def _secret(self, resource: str, name: str, password: pulumi.Output[str]) -> k8s.core.v1.Secret:
        """A password's Secret in the slurm namespace. slurmdbd's: the operator reads it by
        reference (storageConfig.passwordKeyRef) into the slurmdbd.conf Secret it owns
        (SlinkyProject/slurm-operator v1.2.1 internal/builder/accountingbuilder/accounting_config.go,
        BuildAccountingConfig). The master user's: mounted by the database user Job only."""
        args = self._args
        return k8s.core.v1.Secret(
            f"{self._name}-{resource}",
            metadata={"name": name, "namespace": SLURM_NAMESPACE},
            data={ACCOUNTING_PASSWORD_KEY: password.apply(lambda p: base64.b64encode(p.encode()).decode())},
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.cluster.provider, depends_on=list(args.secret_depends_on)
            ),
        )

    def _ca_bundle(self) -> k8s.core.v1.ConfigMap:
        """The RDS CA bundle, where slurmdbd and the Job mount it (ACCOUNTING_CA_DIR). Not
        immutable: a bundle AWS extends is updated in place, and the kubelet refreshes the mounted
        file; slurmdbd reads it on each connection."""
        args = self._args
        return k8s.core.v1.ConfigMap(
            f"{self._name}-ca-bundle",
            metadata={"name": ACCOUNTING_CA_CONFIGMAP, "namespace": SLURM_NAMESPACE},
            data={ACCOUNTING_CA_KEY: args.ca_bundle},
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.cluster.provider, depends_on=list(args.secret_depends_on)
            ),
        )

    def _user_job(
        self,
        instance: aws.rds.Instance,
        rule: aws.vpc.SecurityGroupIngressRule,
        admin_secret: k8s.core.v1.Secret,
        secret: k8s.core.v1.Secret,
        ca: k8s.core.v1.ConfigMap,
    ) -> k8s.batch.v1.Job:
        """The Job that makes slurmdbd's user (cluster_programs/accounting_database_user.py), run
        again for a new database (its resource id), a new slurmdbd password or new code: named by
        their digest. The password goes into the name only as 12 hex digits of its SHA-256, which
        say nothing of a 40-character random password, so the name is not secret."""
        args = self._args
        in_namespace = pulumi.ResourceOptions(
            parent=self, provider=args.cluster.provider, depends_on=list(args.secret_depends_on)
        )
        account = k8s.core.v1.ServiceAccount(
            f"{self._name}-user-account",
            metadata={"name": USER_JOB_ACCOUNT, "namespace": SLURM_NAMESPACE},
            automount_service_account_token=False,
            opts=in_namespace,
        )
        code = program_code(
            f"{self._name}-user-code",
            f"{USER_JOB_ACCOUNT}-code",
            USER_JOB_MODULES,
            SLURM_NAMESPACE,
            in_namespace,
        )
        name = pulumi.Output.unsecret(
            pulumi.Output.all(instance.resource_id, self._password, code.metadata.name).apply(
                lambda v: (
                    f"{USER_JOB_ACCOUNT}-{_digest(v[0], hashlib.sha256(v[1].encode()).hexdigest(), v[2])}"
                )
            )
        )
        secrets_dir = "/etc/slinky-eks/accounting-passwords"
        return k8s.batch.v1.Job(
            f"{self._name}-user-job",
            metadata={
                "name": name,
                "namespace": SLURM_NAMESPACE,
                # A failed run is run again by the next `pulumi up`.
                "annotations": job_annotations(USER_JOB_TIMEOUT_SECONDS),
            },
            spec={
                "backoffLimit": 2,
                "activeDeadlineSeconds": USER_JOB_TIMEOUT_SECONDS,
                "template": {
                    # It calls no Kubernetes API: no token in the pod either.
                    "spec": {
                        "automountServiceAccountToken": False,
                        **program_pod(
                            "database-user",
                            "accounting_database_user",
                            [
                                "--host",
                                instance.address,
                                "--port",
                                str(ACCOUNTING_PORT),
                                "--ca-file",
                                f"{ACCOUNTING_CA_DIR}/{ACCOUNTING_CA_KEY}",
                                "--database",
                                ACCOUNTING_DATABASE,
                                "--user",
                                ACCOUNTING_USER,
                                "--password-file",
                                f"{secrets_dir}/slurmdbd/{ACCOUNTING_PASSWORD_KEY}",
                                "--admin-user",
                                ACCOUNTING_ADMIN_USER,
                                "--admin-password-file",
                                f"{secrets_dir}/admin/{ACCOUNTING_PASSWORD_KEY}",
                                "--timeout",
                                str(USER_JOB_TIMEOUT_SECONDS - 60),
                            ],
                            USER_JOB_ACCOUNT,
                            code.metadata.name,
                            mounts=[
                                {"name": "ca", "mountPath": ACCOUNTING_CA_DIR, "readOnly": True},
                                {
                                    "name": "slurmdbd",
                                    "mountPath": f"{secrets_dir}/slurmdbd",
                                    "readOnly": True,
                                },
                                {"name": "admin", "mountPath": f"{secrets_dir}/admin", "readOnly": True},
                            ],
                            volumes=[
                                {"name": "ca", "configMap": {"name": ACCOUNTING_CA_CONFIGMAP}},
                                {"name": "slurmdbd", "secret": {"secretName": ACCOUNTING_PASSWORD_SECRET}},
                                {"name": "admin", "secret": {"secretName": ACCOUNTING_ADMIN_SECRET}},
                            ],
                        ),
                    }
                },
            },
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.cluster.provider,
                depends_on=[instance, rule, admin_secret, secret, ca, account, code, *args.job_depends_on],
            ),
        )
