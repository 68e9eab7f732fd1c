"""The stack's configuration schema: every key, declared once, with its type, its default, the
rules that apply to it, its description and what changing it does (Pulumi.yaml's `config:` block
and the README's table are generated from it: `python -m devkit.project_docs`); then the
rules that look at several keys at once. `check` reads raw config strings into typed values and
returns every problem, errors and warnings alike; it never raises and never logs.
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from model.builders import scheduling
from model.checks import existing_cluster, gpu_pools, rules, users, vpc_subnets
from model.checks.problems import ERROR, NOT_SET, WARNING, Problem, Rule, applies, error, identify, warning
from model.facts import (
    audit_logs,
    capacity,
    eks_versions,
    image_builder,
    shared_addons,
    support_calendar,
    versions,
)
from model.facts.contract import SHARED_MOUNT
from model.facts.image_references import dlc_registry, reference_problem, registry_host

IMAGE_REFERENCE = identify(
    "image-reference", ERROR, "a container image reference (registry/name:tag or @digest)"
)
# Its keys are those the table gives no default (the catalogue reads them off it).
REQUIRED_KEY = identify("required", ERROR, "a key with no default is set")
SSH_CIDRS = identify(
    "ssh-cidrs",
    ERROR,
    "IPv4 blocks, at least one; 0.0.0.0/0 only with allowSshFromAnywhere",
    "sshAllowedCidrs",
)
API_CIDRS = identify(
    "api-cidrs", ERROR, "IPv4 blocks; 0.0.0.0/0 only with allowApiFromAnywhere", "apiAllowedCidrs"
)
SOMEONE_CAN_LOG_IN = identify(
    "someone-can-log-in", ERROR, "a root key or an admin user", "sshPublicKey", "users"
)
CHART_PAIRS_WITH_SLURM = identify(
    "chart-pairs-with-slurm",
    ERROR,
    "a Slinky chart with a known Slurm release, and slurmVersion of that release",
    "slinkyChartVersion",
    "slurmVersion",
)
IMAGE_TAG_NAMES_SLURM = identify(
    "image-tag-names-slurm", ERROR, "the slurmd image tag starts with slurmVersion", "slurmdImageTag"
)
DLC_REGISTRY_KNOWN = identify(
    "dlc-registry-known", ERROR, "a DLC registry known for the region, or a full reference", "dlcBaseImage"
)
SLURMD_BASE_IS_SLURM = identify(
    "slurmd-base-is-slurm", ERROR, "the slurmd base image is of slurmVersion", "slurmdBaseImage"
)
KUBERNETES_FOR_SLINKY = identify(
    "kubernetes-for-slinky", ERROR, "a Kubernetes version the Slinky operator supports", "kubernetesVersion"
)
POOLS_JSON = identify("pools-json", ERROR, "a list of pools as JSON", "gpuPools")
AUTOSCALING_NEEDS_METRICS = identify(
    "autoscaling-needs-metrics", ERROR, "metrics on where a pool autoscales", "metrics"
)
AUTOSCALER_FOR_KUBERNETES = identify(
    "autoscaler-for-kubernetes",
    ERROR,
    "a Kubernetes minor with a pinned cluster-autoscaler, where a pool autoscales",
    "kubernetesVersion",
)
KEDA_FOR_KUBERNETES = identify(
    "keda-for-kubernetes",
    WARNING,
    "a Kubernetes KEDA is tested on, where a pool autoscales",
    "kubernetesVersion",
)
USERS_JSON = identify("users-json", ERROR, "a list of users as JSON", "users")
OVERRIDDEN_BY_GPU_POOLS = identify(
    "overridden-by-gpu-pools",
    WARNING,
    "no single-pool key set beside gpuPools, which overrides it",
    "gpuInstanceType",
    "gpuNodeCount",
    "gpuMinNodes",
    "gpuMaxNodes",
    "gpuCapacityReservationId",
)
PREVIEW_BUILDS_LOCALLY = identify(
    "preview-builds-locally",
    WARNING,
    "buildImageOnPreview only where imageBuilder is local",
    "buildImageOnPreview",
    "imageBuilder",
)
RUNNER_PROVIDER_KEYS = identify(
    "runner-provider-keys",
    ERROR,
    "no AWS provider key the in-region build's runner cannot honour, with imageBuilder codebuild",
    "imageBuilder",
    "aws:*",
)
UNDECLARED_KEY = identify("undeclared-key", ERROR, "a key Pulumi.yaml declares", "slinky-eks:*")


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED = _Required()  # no default: the stack must set the key


@dataclass(frozen=True)
class Key:
    """A key, declared here once: Pulumi.yaml's `config:` block and the README's table are written
    from it (`python -m devkit.project_docs`), and StackConfig (stack/config.py) is built from it."""

    name: str  # the project's key, or namespace:key for another namespace's (aws:region)
    type: str  # as Pulumi.yaml declares it: string, integer, boolean or array
    default: Any = REQUIRED
    # Applied in order; once one finds an error the later ones (which assume it passed) are skipped.
    rules: tuple[Rule, ...] = ()
    # The one line Pulumi.yaml carries (`pulumi config` and the Pulumi Cloud console show it).
    description: str = field(kw_only=True)
    # The StackConfig attribute the key's value fills; None for a key only the rules and the
    # preflight read, or one folded into StackConfig.gpu_pools.
    attr: str | None = field(kw_only=True)
    # What an `up` does to a running stack when the value changes (the README's table says it).
    on_change: str = field(kw_only=True)
    # An array's item type, as Pulumi.yaml declares it (`items: {type: ...}`).
    items: str | None = field(default=None, kw_only=True)
    # What the default stands for where it is a placeholder ("" or []), in the README's table.
    unset_means: str = field(default="", kw_only=True)
    # Facts for the README's table beyond the description.
    doc: str = field(default="", kw_only=True)

    def __post_init__(self) -> None:
        # A key declared half is refused where it is declared, not found later in a stale doc.
        if self.type not in _TYPES:
            raise ValueError(f"key {self.name}: type {self.type!r}; allowed: {', '.join(_TYPES)}")
        if (self.type == "array") != (self.items is not None):
            raise ValueError(
                f"key {self.name}: items {self.items!r}; allowed: an item type for an array "
                "key, none for any other"
            )
        for what in ("description", "on_change"):
            if not getattr(self, what).strip():
                raise ValueError(f"key {self.name}: {what} {getattr(self, what)!r}; allowed: a sentence")


_TYPES = ("string", "integer", "boolean", "array")  # the types Pulumi.yaml's config declares
_REPLACES = "replaces"
_REBUILDS = (
    "rebuilds the slurmd image: a new digest, so the NodeSet rolls every slurmd pod (the GPU nodes stay)"
)
_RULES_ONLY = "nothing: only the rules read it"
# A change to slurm.conf: the operator rewrites it and restarts slurmctld (docs/slinky-chart.md in
# the reference data: "The controller restarts on changes to the generated slurm.conf"); running
# and queued jobs stay.
_RECONFIGURES = (
    "in place: slurm.conf changes, and the operator restarts slurmctld with it (jobs keep "
    "running; the queue is kept in its state)"
)


@applies(IMAGE_REFERENCE)
def image_reference(key: str, value: Any) -> list[Problem]:
    why = reference_problem(value)
    return [error(IMAGE_REFERENCE, key, value, why)] if why else []


_SLURM_VERSION = r"\d{2}\.\d{2}\.\d+"
_CHART_VERSION = r"\d+\.\d+\.\d+"
_IMAGE_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_PIN = versions.CONFIG_DEFAULTS  # the version keys' defaults: their pins
_whole, _boolean, _strings = rules.whole_number, (rules.true_or_false,), (rules.list_of_strings,)
# AMP's retention (WorkspaceConfiguration retentionPeriodInDays): AMP's default, and the range AMP
# accepts (AMP User Guide, "Amazon Managed Service for Prometheus service quotas": retention time
# for ingested data, 150 days by default, up to 1095).
METRICS_RETENTION_DEFAULT = 150
METRICS_RETENTION_DAYS = (1, 1095)
# The support calendar's facts the key table quotes: Slurm's security floors, the pinned
# cert-manager line's Kubernetes range, the Slinky releases with a known defect.
_FLOORS = "; ".join(
    f"{', '.join(a.fixed_in)} for {a.cves[0]} and {len(a.cves) - 1} more"
    for a in support_calendar.SLURM_ADVISORIES
)
_PINNED_CM = support_calendar.cert_manager_line(versions.CERT_MANAGER.version)
_SLINKY_DEFECTS = "; ".join(
    f"{support_calendar.minor(d.fixed_in)} before {d.fixed_in}, {d.source}"
    for d in support_calendar.SLINKY_DEFECTS
)


# on_change is read off the components: a node group's instance type and subnets force a new
# node group, a new launch template version is a rolling UpdateNodegroupVersion, and the scaling
# config an in-place UpdateNodegroupConfig (hashicorp/terraform-provider-aws, which pulumi-aws
# bridges: internal/service/eks/node_group.go at commit b11fc0fdd2efcc87bbff031692818008455bd048,
# instance_types and subnet_ids ForceNew, resourceNodeGroupUpdate).
def schema(day: datetime.date) -> tuple[Key, ...]:
    """Every key the program reads. The Kubernetes version's rules read EKS's calendar on `day`,
    the Slurm and DLC versions' the support calendar's (model/facts/support_calendar.py)."""
    return (
        Key(
            "aws:region",
            "string",
            attr="region",
            description="AWS region of every resource; dev: us-west-2.",
            on_change=f"{_REPLACES} everything: every resource is regional; deploy a new stack instead",
        ),
        Key(
            "availabilityZone",
            "string",
            attr="availability_zone",
            description="The AZ of the EFA GPU nodes (EFA does not cross AZs), and of every GPU pool that names "
            "none; it holds the NAT gateway. Must be in aws:region.",
            doc="A standard AZ of the region whose zone id EKS accepts (see [What your account needs]"
            "(#what-your-account-needs)).",
            on_change=f"{_REPLACES} the cluster's first zone: its subnets, NAT gateway and EFS mount target, and "
            "the node groups in them (the core nodes and every pool that names no zone); deploy a new "
            "stack instead",
        ),
        Key(
            "kubernetesVersion",
            "string",
            _PIN["kubernetesVersion"],
            (eks_versions.offered_on(day), eks_versions.standard_support_on(day)),
            attr="kubernetes_version",
            description="EKS Kubernetes version (one EKS offers; Slinky needs >= 1.29).",
            doc="Offered on the day of the run (`model/facts/eks_versions.py`: 1.32-1.36); one in extended "
            "support (six times the control-plane price: 1.32 and 1.33 on 2026-12-01, 1.34 from "
            "2026-12-03) deploys with a warning.",
            on_change="in place: EKS upgrades the control plane (one minor version per `up`); the node groups "
            "set no version and keep theirs",
        ),
        # Empty means slinky-eks-<stack>, which the rule checks too.
        Key(
            "clusterName",
            "string",
            "",
            (
                rules.matches(
                    r"[a-z][a-z0-9-]{0,37}",
                    "lower-case letters, digits and '-', starting with a letter, at most 38 characters",
                ),
            ),
            attr="cluster_name",
            unset_means="`slinky-eks-<stack>`",
            description="EKS cluster name; empty means slinky-eks-<stack>.",
            on_change=f"{_REPLACES} the EKS cluster and everything on it (node groups, add-ons, Helm releases) "
            "and the ECR repository `<clusterName>/slurmd`, whose image is built again",
        ),
        # Into an existing EKS cluster (model/checks/existing_cluster.py; README "Into an existing
        # EKS cluster"). EKS's form of a cluster name (EKS API Reference, CreateCluster, name:
        # 1-100 characters, "^[0-9A-Za-z][A-Za-z0-9\-_]*$",
        # https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html).
        Key(
            "existingClusterName",
            "string",
            "",
            (
                rules.unless_blank(
                    rules.matches(
                        r"[0-9A-Za-z][A-Za-z0-9_-]{0,99}",
                        "an EKS cluster name: letters, digits, '-' and '_', starting with a letter or "
                        "digit, at most 100 characters",
                    )
                ),
            ),
            attr="existing_cluster_name",
            unset_means="the stack creates its own EKS cluster",
            description="The name of an EKS cluster in aws:region to deploy into instead of creating one "
            "(needs vpcId and privateSubnetIds); empty means the stack creates its own.",
            doc="The stack reads the cluster and creates no cluster, never deletes one; it must be ACTIVE, "
            "in vpcId, on a Kubernetes version Slinky supports, run the VPC CNI and the Pod Identity agent (warned "
            "where they are no EKS add-ons), and the deployer must be its admin. clusterName still "
            "names the stack's own resources (IAM roles, ECR repository, tags).",
            on_change=f"{_REPLACES} every node group and everything in the cluster (a move between clusters or "
            "to or from a cluster of the stack's own); deploy a new stack instead",
        ),
        Key(
            "installSharedAddons",
            "array",
            [],
            (rules.each_one_of(shared_addons.KEYS),),
            items="string",
            attr="install_shared_addons",
            unset_means="the existing cluster's own add-ons",
            description="Beside existingClusterName: the shared add-ons the stack installs into the cluster "
            f"(any of {', '.join(shared_addons.KEYS)}); the others must be the cluster's own. Ignored "
            "without existingClusterName (the stack installs all of them).",
            doc="List one only where the cluster runs none: two cert-managers or load balancer controllers "
            "fight over the same objects. An autoscaling pool needs keda and clusterAutoscaler listed.",
            on_change="in place: a listed add-on is installed, an unlisted one deleted (the cluster's own "
            "must then serve the stack)",
        ),
        Key(
            "gpuInstanceType",
            "string",
            "g6.12xlarge",
            (rules.gpu_instance_type,),
            attr=None,
            description="EFA-capable NVIDIA GPU instance type of the Slurm workers (see model/facts/catalog.py); used "
            "when gpuPools is empty.",
            doc="The type of the one pool `slinky`.",
            on_change=f"{_REPLACES} the GPU node group of pool `slinky` (new nodes of the new type; drain first, "
            "see [Upgrading](docs/operations.md#upgrading-changes-that-replace-every-node)) and rolls its NodeSet (its "
            "GRES, GPU and EFA requests); ignored beside gpuPools",
        ),
        Key(
            "gpuNodeCount",
            "integer",
            2,
            (gpu_pools.pool_node_count,),
            attr=None,
            description="Number of GPU nodes, one Slurm worker (slurmd pod) each; used when gpuPools is empty.",
            doc="The node count of the one pool `slinky`.",
            on_change="in place: resizes the node group and the NodeSet of pool `slinky` (a removed node's jobs "
            "are killed: drain it first); ignored beside gpuPools",
        ),
        Key(
            "gpuRootVolumeGiB",
            "integer",
            400,
            (_whole(*gpu_pools.ROOT_VOLUME_GIB),),
            attr=None,
            description="Root volume of each GPU node (gp3), unless its pool sets rootVolumeGiB; holds the "
            "multi-GB slurmd image.",
            on_change="rolls the GPU nodes of every pool without its own rootVolumeGiB through a new launch "
            "template version: EKS terminates each before its replacement exists, so drain first (see "
            "[Upgrading](docs/operations.md#upgrading-changes-that-replace-every-node))",
        ),
        Key(
            "gpuPools",
            "array",
            [],
            items="object",
            attr=None,
            unset_means="one pool `slinky` from the three keys above",
            description="Several kinds of GPU node, each a Slurm partition named after it: a list of {name, "
            "instanceType, nodeCount, availabilityZone?, rootVolumeGiB?, minNodes?, maxNodes?, "
            "capacityReservationId?} (AZ and "
            "root volume default to availabilityZone and gpuRootVolumeGiB, the bounds to nodeCount). Empty means one pool named slinky of "
            "gpuInstanceType x gpuNodeCount; with several, the default partition 'all' spans every "
            "pool.",
            doc="Each pool is its own node group, placement group, NodeSet and Slurm partition `<name>` (see "
            "[GPU pools](#gpu-pools)).",
            on_change="an added pool creates its own resources and a removed pool deletes them (drain its "
            "partition first: see [How to add a pool](docs/extending.md#how-to-add-a-pool) and "
            "[How to remove a pool](docs/extending.md#how-to-remove-a-pool)); within a pool, as the "
            "key its field defaults from: "
            "instanceType replaces its node group, nodeCount resizes it, rootVolumeGiB rolls its "
            "nodes, availabilityZone replaces it, minNodes and maxNodes as gpuMinNodes and gpuMaxNodes, "
            "capacityReservationId rolls its nodes (to or from a Capacity Block it replaces the node "
            "group)",
        ),
        Key(
            "coreInstanceType",
            "string",
            "m6i.2xlarge",
            (rules.cpu_instance_type,),
            attr="core_instance_type",
            description="CPU instance type of the core nodes (slurmctld, restapi, login, operators, controllers).",
            on_change=f"{_REPLACES} the core node group: every controller, slurmctld and the login pod move to "
            "the new nodes",
        ),
        Key(
            "coreNodeCount",
            "integer",
            2,
            (_whole(1, 32),),
            attr="core_node_count",
            description="Number of core nodes.",
            on_change="in place: resizes the core node group",
        ),
        # Optional since named users: an admin user is the normal way in, root's login is opt-in.
        Key(
            "sshPublicKey",
            "string",
            "",
            (rules.unless_blank(rules.ssh_public_key), rules.unless_blank(rules.not_the_example_ssh_key)),
            attr="ssh_public_key",
            unset_means="no root login",
            description="OpenSSH public key authorised for root on the login node; empty means root cannot log "
            "in (then users must list an admin).",
            doc="Root SSH is opt-in: set it, or list at least one `admin` user in `users`, or both.",
            on_change="in place: the Slurm release's values set the LoginSet's rootSshAuthorizedKeys (slurm "
            "chart 1.2.1 templates/loginset/loginset-cr.yaml), which the operator reconciles; "
            "emptying it with named users also refuses root in sshd (the login pod restarts)",
        ),
        Key(
            "users",
            "array",
            [],
            items="object",
            attr=None,
            unset_means="no named users",
            description="The people who log in to the login node, each as themselves: a list of {name, uid, "
            "sshPublicKey (one key or a list), account?, admin?}. Each has the same UID (and a "
            "group of that GID) on the login node and every worker and a home on "
            f"{users.HOMES}/<name>; account defaults to '{users.DEFAULT_ACCOUNT}', admin gives "
            "Slurm's AdminLevel=Administrator.",
            doc=f"uid from {users.MIN_UID} to {users.MAX_UID}, each name and uid once; names are login names "
            "(lower-case letter first, then lower-case letters, digits, `_`, `-`; at most 32) that the "
            "images' own users and groups (`root`, `slurm`, ...: `model/checks/users.py`) do not have.",
            on_change="in place: a user added or removed changes the identities the login and slurmd pods "
            "read and the homes Job; a removed user's home and files on "
            f"{SHARED_MOUNT} stay",
        ),
        Key(
            "sshAllowedCidrs",
            "array",
            REQUIRED,
            _strings,
            items="string",
            attr="ssh_allowed_cidrs",
            description="IPv4 CIDR blocks that may reach SSH (port 22) on the login load balancer (IPv4-only; "
            "IPv6 blocks are refused).",
            doc="Dev: the documentation range 203.0.113.10/32.",
            on_change="in place: the login Service's loadBalancerSourceRanges, which the load balancer "
            "controller applies to the NLB's security group rules",
        ),
        Key(
            "allowSshFromAnywhere",
            "boolean",
            False,
            _boolean,
            attr=None,
            description="Must be true for sshAllowedCidrs to contain 0.0.0.0/0.",
            on_change=_RULES_ONLY,
        ),
        Key(
            "apiAllowedCidrs",
            "array",
            [],
            _strings,
            items="string",
            attr="api_allowed_cidrs",
            unset_means="the IPv4 blocks of `sshAllowedCidrs`",
            description="IPv4 CIDR blocks that may reach the EKS public API endpoint (pulumi up and kubectl "
            "must run from inside them); empty means the IPv4 blocks of sshAllowedCidrs. Nodes use "
            "the private endpoint.",
            on_change="in place: the cluster's public access CIDRs; run that `up` from inside both the old and "
            "the new blocks",
        ),
        Key(
            "allowApiFromAnywhere",
            "boolean",
            False,
            _boolean,
            attr=None,
            description="Must be true for apiAllowedCidrs (or the sshAllowedCidrs it defaults to) to contain "
            "0.0.0.0/0.",
            on_change=_RULES_ONLY,
        ),
        Key(
            "adminRoleArns",
            "array",
            [],
            (rules.list_of_strings, rules.role_arns),
            items="string",
            attr="admin_role_arns",
            description="Extra IAM role ARNs granted cluster admin (the deployer is admin already).",
            doc="Never the deployer's own role.",
            on_change="in place: an access entry added or deleted per role",
        ),
        # Prices: Amazon CloudWatch pricing (https://aws.amazon.com/cloudwatch/pricing/), Logs tab,
        # US East (N. Virginia), Standard log class; EKS bills its control-plane logs as standard
        # CloudWatch Logs ingestion and storage (EKS user guide, "Send control plane logs to
        # CloudWatch Logs": https://docs.aws.amazon.com/eks/latest/userguide/control-plane-logs.html).
        Key(
            "controlPlaneLogTypes",
            "array",
            list(audit_logs.DEFAULT_CONTROL_PLANE_LOG_TYPES),
            (rules.each_one_of(audit_logs.CONTROL_PLANE_LOG_TYPES),),
            items="string",
            attr="control_plane_log_types",
            description="EKS control-plane log types sent to CloudWatch Logs (any of api, audit, authenticator, "
            "controllerManager, scheduler); an empty list turns control-plane logging off.",
            doc="Written to the log group `/aws/eks/<clusterName>/cluster`, which the program creates with "
            "controlPlaneLogRetentionDays and deletes on destroy. Cost: CloudWatch Logs ingestion, $0.50 per "
            "GB, and storage, $0.03 per GB-month (US East, Standard class; 5 GB a month free), per "
            "[CloudWatch pricing](https://aws.amazon.com/cloudwatch/pricing/); api and audit grow with "
            "API traffic (every controller's watch and update), so measure the group's IncomingBytes "
            "metric after a day.",
            on_change="in place: EKS updates the cluster's logging config (UpdateClusterConfig); the log group "
            "stays, with the logs already in it, until destroy",
        ),
        Key(
            "controlPlaneLogRetentionDays",
            "integer",
            audit_logs.DEFAULT_RETENTION_DAYS,
            (rules.one_of(audit_logs.RETENTION_DAYS),),
            attr="control_plane_log_retention_days",
            description="Days CloudWatch Logs keeps the control-plane logs (a retention CloudWatch accepts).",
            doc="One of the values of CloudWatch Logs' PutRetentionPolicy.",
            on_change="in place: the log group's retention policy",
        ),
        Key(
            "flowLogsDestination",
            "string",
            audit_logs.FLOW_LOGS_CLOUDWATCH,
            (rules.one_of(audit_logs.FLOW_LOG_DESTINATIONS),),
            attr="flow_logs_destination",
            description="Where the VPC's flow logs (every accepted and rejected connection) go: cloud-watch-logs, "
            "s3 (a bucket of the stack's) or off.",
            doc="Cost, as vended logs: $0.50 per GB delivered to CloudWatch Logs plus its storage, or $0.25 per "
            "GB delivered to S3 plus S3 storage (US East, first 10 TB a month), per "
            "[CloudWatch pricing](https://aws.amazon.com/cloudwatch/pricing/); a record per flow per "
            "10-minute window, so the volume follows the number of connections, not their bytes.",
            on_change="in place: the flow log is replaced (its destination cannot change); the old "
            "destination's log group or bucket is deleted with its logs",
        ),
        Key(
            "flowLogsRetentionDays",
            "integer",
            audit_logs.DEFAULT_RETENTION_DAYS,
            (rules.one_of(audit_logs.RETENTION_DAYS),),
            attr="flow_logs_retention_days",
            description="Days the flow logs are kept (a retention CloudWatch accepts; for s3, the bucket's "
            "expiration).",
            on_change="in place: the log group's retention policy, or the bucket's lifecycle rule",
        ),
        Key(
            "slinkyChartVersion",
            "string",
            _PIN["slinkyChartVersion"],
            (
                rules.matches(_CHART_VERSION, f"a chart version such as {versions.SLINKY_CHART_VERSION}"),
                support_calendar.slinky_chart_defects,
            ),
            attr="slinky_chart_version",
            description="Version of the Slinky charts (slurm-operator-crds, slurm-operator, slurm).",
            doc=f"Pairs with Slurm {versions.slurm_release_for_chart(versions.SLINKY_CHART_VERSION)}.x "
            "(`model/facts/versions.py`). A release with a known defect (`model/facts/support_calendar.py`: "
            f"{_SLINKY_DEFECTS}) deploys with a warning naming it. The operator's and webhook's images of "
            "the version are resolved at preview to their digests and run by them; a version whose images "
            "ghcr.io does not hold is refused (`model/checks/image_digests.py`).",
            on_change="in place: upgrades the three Helm releases (CRDs, operator, Slurm cluster); change "
            "slurmVersion with it in the same `up`, as they must pair",
        ),
        Key(
            "slurmVersion",
            "string",
            _PIN["slurmVersion"],
            (
                rules.matches(
                    _SLURM_VERSION,
                    f"a full Slurm release such as {versions.SLURM_RELEASE} (pinned, so every "
                    "node runs one build)",
                ),
                support_calendar.slurm_supported_on(day),
            ),
            attr="slurm_version",
            description="Full Slurm release of the slurmd image; must pair with slinkyChartVersion.",
            doc=f"One under its line's security floor (`model/facts/support_calendar.py`: {_FLOORS}) or of a line "
            "SchedMD no longer supports deploys with a warning naming the CVEs and the fixed release.",
            on_change=_REBUILDS,
        ),
        Key(
            "certManagerVersion",
            "string",
            _PIN["certManagerVersion"],
            (
                rules.matches(
                    r"v\d+\.\d+\.\d+", f"a cert-manager chart version such as {versions.CERT_MANAGER.version}"
                ),
                support_calendar.cert_manager_serves_v1,
            ),
            attr="cert_manager_version",
            description="cert-manager chart version.",
            doc=f"{support_calendar.CERT_MANAGER_V1_API} or later (the Slinky operator's certificates are "
            "cert-manager.io/v1). One past its end of life, or whose supported Kubernetes range leaves out "
            f"kubernetesVersion ({_PINNED_CM.window.line}: {'-'.join(_PINNED_CM.kubernetes)}; "
            "`model/facts/support_calendar.py`), deploys with a warning naming the range and the release to use.",
            on_change="in place: upgrades the cert-manager Helm release",
        ),
        Key(
            "vpcCidr",
            "string",
            "10.0.0.0/16",
            (rules.private_vpc_cidr,),
            attr="vpc_cidr",
            description="IPv4 CIDR of the VPC (/16 to /20).",
            doc="A private block, in eighths: the cluster's two AZs take one private and one public eighth each, "
            "a pool AZ outside them half an eighth, by its zone id (`model/facts/node_zones.py`).",
            on_change=f"{_REPLACES} the VPC and everything in it: subnets, NAT gateway, the EKS cluster with its "
            "node groups and everything on it, the EFS mount targets (the file system and its data "
            "stay); deploy a new stack instead",
        ),
        Key(
            "vpcId",
            "string",
            "",
            (
                rules.unless_blank(
                    rules.matches(r"vpc-([0-9a-f]{8}|[0-9a-f]{17})", "a VPC id: vpc- and 8 or 17 hex digits")
                ),
            ),
            attr="vpc_id",
            unset_means="the stack creates its own VPC (vpcCidr)",
            description="An existing VPC to deploy into instead of creating one; needs privateSubnetIds, and "
            "vpcCidr and the flow log keys are ignored.",
            doc="The stack creates nothing of the network there (no subnet, route, NAT gateway, endpoint or flow "
            "log) and `destroy` leaves it as it was; checked at preview: the VPC and subnets exist, every private "
            "subnet routes 0.0.0.0/0 out, has the free addresses its nodes take, and every GPU pool's AZ has one "
            '(README, "Into an existing VPC").',
            on_change=f"{_REPLACES} the EKS cluster with its node groups and everything on it, the EFS mount "
            "targets and the accounting database's subnet group; deploy a new stack instead",
        ),
        Key(
            "privateSubnetIds",
            "array",
            [],
            (vpc_subnets.subnet_ids,),
            items="string",
            attr="private_subnet_ids",
            unset_means="the stack's own private subnets",
            description="With vpcId: its private subnets (at least two AZs, every GPU pool's AZ among them) for "
            "the nodes, the EFS mount targets and the accounting database.",
            doc="A GPU pool's nodes and its AZ's mount target go in the first subnet given in that AZ.",
            on_change=f"{_REPLACES} each node group whose subnets change (a node group's subnets force a new one) "
            "and the mount target of each AZ whose first subnet changes; the EKS cluster's, the accounting "
            "database's and the metrics scraper's subnets change with the list",
        ),
        Key(
            "publicSubnetIds",
            "array",
            [],
            (vpc_subnets.subnet_ids,),
            items="string",
            attr="public_subnet_ids",
            unset_means="with vpcId: an internal login load balancer in the private subnets",
            description="With vpcId: its public subnets for the login load balancer; empty makes that load "
            "balancer internal, reached from inside the VPC or networks routed to it.",
            on_change=f"{_REPLACES} the EKS cluster (its subnets) and the login load balancer (a new address)",
        ),
        Key(
            "slurmdImageTag",
            "string",
            _PIN["slurmdImageTag"],
            (rules.matches(_IMAGE_TAG, "a Docker tag (letters, digits, '_', '.', '-'; at most 128)"),),
            attr="slurmd_image_tag",
            description="Tag of the custom slurmd image pushed to ECR; starts with slurmVersion.",
            on_change="pushes the image under the new tag and rolls every slurmd pod (the NodeSet names the "
            "tag beside the digest)",
        ),
        Key(
            "dlcBaseImage",
            "string",
            _PIN["dlcBaseImage"],
            (image_reference, support_calendar.dlc_in_patch(day)),
            attr="dlc_base_image",
            description="AWS Deep Learning Container the accelerator stack is harvested from; without a registry "
            "host it is pulled from the DLC registry of aws:region. The default is a tag AWS re-pushes "
            "with each patch: pin it as <tag>@sha256:<digest> (image/README.md says how to read it).",
            doc="One whose PyTorch version AWS no longer patches (each version's end of patch: "
            "`model/facts/support_calendar.py`) deploys with a warning. Resolved at preview to the digest "
            "ECR holds for its tag, and built from that digest; a tag ECR does not hold is refused with the "
            "tags it does (`model/checks/image_digests.py`).",
            on_change=_REBUILDS,
        ),
        Key(
            "slurmdBaseImage",
            "string",
            _PIN["slurmdBaseImage"],
            (image_reference,),
            attr="slurmd_base_image",
            description="Slinky slurmd image of slurmVersion on the flavour the Slurm release pairs with "
            "(model/facts/versions.py SLURMD_BASE_FLAVOUR), the base of the final stage.",
            doc="Resolved at preview to the digest its registry holds, as are the Slinky slurmctld, slurmrestd, "
            "slurmdbd and login images of its tag, which the cluster then runs by digest; a tag a registry does "
            "not hold is refused (`model/checks/image_digests.py`).",
            on_change=f"{_REBUILDS}; its tag is also the tag of the Slinky controller, restapi and login images, "
            "whose pods restart when it changes",
        ),
        Key(
            "skipGpuQuotaCheck",
            "boolean",
            False,
            _boolean,
            attr=None,
            description="Skip the preflight check that the on-demand vCPU quota of the GPU family covers "
            "gpuNodeCount nodes (e.g. while an increase is pending).",
            on_change="nothing: only the preflight reads it",
        ),
        Key(
            "imageBuilder",
            "string",
            image_builder.DEFAULT_IMAGE_BUILDER,
            (rules.one_of(image_builder.IMAGE_BUILDERS),),
            attr="image_builder",
            description="Where the slurmd image is built: codebuild (AWS CodeBuild in aws:region; the deployer "
            "needs no Docker) or local (the deployer's Docker builds and pushes it).",
            doc="codebuild uploads image/ to a bucket of the stack's and builds it next to the DLC registry "
            "and the repository; a build starts only when the build context (image/, the base images, "
            "slurmVersion, the tag) changes ([decision](docs/decisions/image-builder.md)).",
            on_change="builds the image once with the other builder: a new digest, so the NodeSet rolls every "
            "slurmd pod (the GPU nodes stay); to codebuild it creates the build project, its role, bucket "
            "and log group, to local it deletes them",
        ),
        Key(
            "buildImageOnPreview",
            "boolean",
            False,
            _boolean,
            attr="build_image_on_preview",
            description="Build the slurmd image during pulumi preview too, with imageBuilder=local (needs Docker "
            "where preview runs); with codebuild a preview never builds, and true warns so.",
            on_change="nothing on `up`: only `pulumi preview` builds differently",
        ),
        Key(
            "retainSharedData",
            "boolean",
            False,
            _boolean,
            attr="retain_shared_data",
            description=f"Keep the EFS file system behind {SHARED_MOUNT} (and its data) when the stack is destroyed.",
            on_change="in place, in the stack's state only: the next `destroy` keeps or deletes the file system",
        ),
        # The accounting database (components/accounting_database.py; docs/decisions/accounting-database.md).
        # Prices: Amazon RDS for MariaDB pricing (https://aws.amazon.com/rds/mariadb/pricing/), US East
        # (N. Virginia), on demand.
        Key(
            "retainAccountingData",
            "boolean",
            True,
            _boolean,
            attr="retain_accounting_data",
            description="Keep the accounting records (every job, account and association) when the stack is "
            "destroyed: RDS takes a final snapshot of the database and keeps its automated backups.",
            doc="The instance itself cannot outlive the VPC it runs in; the snapshot "
            "`<clusterName>-accounting-final-<suffix>` stays, billed as RDS snapshot storage, until deleted "
            "by hand (see [Teardown](docs/operations.md#teardown)); false, destroy keeps nothing.",
            on_change="in place, in the stack's state only: the next `destroy` snapshots the database or not",
        ),
        Key(
            "accountingInstanceClass",
            "string",
            "db.t4g.small",
            (rules.matches(r"db\.[a-z0-9-]+\.[a-z0-9]+", "an RDS DB instance class such as db.t4g.small"),),
            attr="accounting_instance_class",
            description="RDS DB instance class of the accounting database (slurmdbd's MariaDB).",
            doc="The default (2 vCPU burstable, 2 GiB) holds a team's job records; SchedMD recommends an InnoDB "
            "buffer pool of at least 4 GiB for large databases (db.t4g.large or db.m7g.large and up). "
            "Cost: about $0.032 an hour for db.t4g.small, Single-AZ, per "
            "[RDS for MariaDB pricing](https://aws.amazon.com/rds/mariadb/pricing/).",
            on_change="in place: RDS moves the instance to the new class (minutes of downtime, during which "
            "slurmctld queues its records for slurmdbd)",
        ),
        Key(
            "accountingStorageGiB",
            "integer",
            20,
            (_whole(20, 1024),),
            attr="accounting_storage_gib",
            description="Allocated gp3 storage of the accounting database, in GiB (RDS for MariaDB's gp3 "
            "minimum is 20).",
            doc="Cost: $0.115 per GB-month (gp3, US East); backups up to the allocated size are free.",
            on_change="in place: RDS grows the volume online; it can never shrink",
        ),
        Key(
            "accountingMultiAz",
            "boolean",
            False,
            _boolean,
            attr="accounting_multi_az",
            description="Run the accounting database Multi-AZ: a standby in the cluster's second zone that RDS "
            "fails over to.",
            doc="Doubles the instance and storage price; without it an AZ outage stops accounting (slurmctld "
            "keeps scheduling and queues the records) until the zone returns.",
            on_change="in place: RDS adds or removes the standby without downtime",
        ),
        # The scheduling policy's weights (model/builders/scheduling.py says what each does and why its default).
        Key(
            "priorityWeightFairshare",
            "integer",
            scheduling.DEFAULT.weight_fairshare,
            (_whole(0, scheduling.MAX_WEIGHT),),
            attr="priority_weight_fairshare",
            description="Slurm's PriorityWeightFairshare: how much a job's priority falls as its user and account "
            "use more than their share.",
            doc="The term that decides by default: whoever has used the least recently runs first "
            "([Accounting and fair-share](docs/operations.md#accounting-and-fair-share)).",
            on_change=_RECONFIGURES,
        ),
        Key(
            "priorityWeightAge",
            "integer",
            scheduling.DEFAULT.weight_age,
            (_whole(0, scheduling.MAX_WEIGHT),),
            attr="priority_weight_age",
            description="Slurm's PriorityWeightAge: how much a job's priority grows while it waits (full after "
            "7 days).",
            on_change=_RECONFIGURES,
        ),
        Key(
            "priorityWeightQos",
            "integer",
            scheduling.DEFAULT.weight_qos,
            (_whole(0, scheduling.MAX_WEIGHT),),
            attr="priority_weight_qos",
            description="Slurm's PriorityWeightQOS: how much the priority of a job's QOS counts (the default QOS "
            "normal has priority 0).",
            on_change=_RECONFIGURES,
        ),
        Key(
            "priorityDecayHalfLifeDays",
            "integer",
            scheduling.DEFAULT.decay_half_life_days,
            (_whole(*scheduling.HALF_LIFE_DAYS),),
            attr="priority_decay_half_life_days",
            description="Slurm's PriorityDecayHalfLife, in days: past usage counts half after this long.",
            on_change=_RECONFIGURES,
        ),
        # Scaling: the default pool's bounds and the idle period of every autoscaling
        # pool (model/checks/gpu_pools.py, model/builders/autoscaling.py; docs/scaling.md).
        Key(
            "gpuMinNodes",
            "integer",
            gpu_pools.FROM_NODE_COUNT,
            (gpu_pools.default_bound(*gpu_pools.MIN_NODES),),
            attr=None,
            unset_means="gpuNodeCount",
            description="The fewest GPU nodes pool `slinky` scales down to (0: none while its partition has no "
            "pending work); -1 means gpuNodeCount. Used when gpuPools is empty.",
            doc="Below gpuMaxNodes the pool autoscales: it starts at gpuMinNodes and KEDA and cluster-autoscaler "
            "size it from its partition's pending jobs (see [Scaling](docs/scaling.md)).",
            on_change="in place: the node group's minimum and the pool's scaler; a pool that starts or stops "
            "autoscaling keeps its running nodes until the scaler or the next fixed nodeCount moves "
            "them; ignored beside gpuPools",
        ),
        Key(
            "gpuMaxNodes",
            "integer",
            gpu_pools.FROM_NODE_COUNT,
            (gpu_pools.default_bound(*gpu_pools.MAX_NODES),),
            attr=None,
            unset_means="gpuNodeCount",
            description="The most GPU nodes pool `slinky` scales up to; -1 means gpuNodeCount. Used when gpuPools "
            "is empty.",
            doc="The node group's maximum size, and the scaler's.",
            on_change="in place: the node group's maximum and the pool's scaler; ignored beside gpuPools",
        ),
        Key(
            "scaleDownIdleMinutes",
            "integer",
            15,
            (_whole(1, 1440),),
            attr="scale_down_idle_minutes",
            description="How long an autoscaling pool's partition must have no pending job before the pool "
            "scales down (to minNodes, and from 1 to 0).",
            doc="About as long as a scale-up from zero takes, so a pool never spends more idle node time than "
            "the wait it saves (see [Scaling](docs/scaling.md#the-idle-period)).",
            on_change="in place: every autoscaling pool's ScaledObject",
        ),
        # Capacity and cost (docs/capacity-and-cost.md): reserved capacity for the one pool of a stack without gpuPools.
        Key(
            "gpuCapacityReservationId",
            "string",
            "",
            (capacity.reservation_id,),
            attr=None,
            unset_means="none: plain on-demand capacity",
            description="The On-Demand Capacity Reservation or Capacity Block for ML (cr-...) the GPU nodes launch "
            "into; used when gpuPools is empty (a pool sets its own capacityReservationId).",
            doc="Checked at preview: the reservation exists, reserves gpuInstanceType in availabilityZone, and is "
            "active (see [Capacity and cost](docs/capacity-and-cost.md)).",
            on_change="rolls the GPU nodes of pool `slinky` through a new launch template version (drain first); "
            "to or from a Capacity Block it replaces the node group (its capacity type changes); ignored "
            "beside gpuPools",
        ),
        # Metrics: the metrics store and its alerts (components/metrics_store.py,
        # components/dcgm_exporter.py; docs/decisions/metrics-store.md). Prices: Amazon Managed
        # Service for Prometheus pricing (https://aws.amazon.com/prometheus/pricing/), US East.
        Key(
            "metrics",
            "boolean",
            True,
            _boolean,
            attr="metrics",
            description="Collect Slurm's and the GPUs' metrics: the DCGM exporter on the GPU nodes, an Amazon "
            "Managed Service for Prometheus workspace with its managed scraper, the alert rules and "
            "their SNS topic, and the dashboards.",
            doc="Costs per sample ingested and stored, per scraper hour and per sample queried (the decision "
            "page estimates the dev stack); false removes all of it, and its stored samples with it.",
            on_change="in place: false deletes the workspace (its samples), the scraper, the topic and the "
            "exporter; true creates them",
        ),
        Key(
            "metricsRetentionDays",
            "integer",
            METRICS_RETENTION_DEFAULT,
            (_whole(*METRICS_RETENTION_DAYS),),
            attr="metrics_retention_days",
            description="Days the metrics workspace keeps samples (Amazon Managed Service for Prometheus "
            "retention, 1 to 1095).",
            doc="Storage is billed per GB-month; 150 days is AMP's own default.",
            on_change="in place: the workspace's retention; samples older than it are dropped",
        ),
        Key(
            "alertEmails",
            "array",
            [],
            (rules.list_of_strings, rules.email_addresses),
            items="string",
            attr="alert_emails",
            unset_means="alerts go to the SNS topic only (`alertTopicArn`)",
            description="Email addresses mailed every firing alert, through the alert SNS topic.",
            doc="Each address gets a confirmation mail from SNS and receives nothing until it confirms.",
            on_change="in place: a subscription added or deleted per address",
        ),
    )


def read(key: Key, raw: str | None) -> Any:
    """The value of a raw config string as the key's type, or the raw string where it is not one
    (the key's rules then say what is allowed); NOT_SET where a required key has none."""
    if raw is None:
        return NOT_SET if key.default is REQUIRED else key.default
    if key.type == "string":
        # A blank value is no value, unless blank is the default (clusterName).
        return NOT_SET if raw.strip() == "" and key.default != "" else raw
    if key.type == "integer":
        try:
            return int(raw.strip(), 10)
        except ValueError:
            return raw
    if key.type == "boolean":
        return {"true": True, "false": False}.get(raw.strip().lower(), raw)
    try:  # an array, which the CLI hands over as JSON
        return json.loads(raw)
    except ValueError:
        return raw


def _key_problems(key: Key, raw: str | None, value: Any) -> list[Problem]:
    if value is NOT_SET:
        return [error(REQUIRED_KEY, key.name, NOT_SET, "it is required")]
    found: list[Problem] = []
    for rule in key.rules:
        found += rule(key.name, value)
        if any(p.is_error for p in found):
            break
    if key.type in ("integer", "boolean") and raw is not None:
        # Say the value as it was given ('2.5', 'yes'), not as it was read.
        found = [dataclasses.replace(p, value=raw) if p.value == value else p for p in found]
    return found


# Rules over several keys. Each takes the values that passed their own rules (a key whose value
# was refused is absent, so no value is reported twice) and returns its problems.
CrossRule = Callable[[Mapping[str, Any]], list[Problem]]

_SSH_IPV6 = (
    "is an IPv6 block; the login load balancer is IPv4-only, so it would admit nobody: give the "
    "IPv4 address you connect from as a /32 (`curl -4 https://checkip.amazonaws.com` prints it)"
)


def ssh_cidrs(ok: Mapping[str, Any]) -> list[Problem]:
    """At least one IPv4 block; 0.0.0.0/0 only with allowSshFromAnywhere."""
    # The login NLB is IPv4-only: the load balancer controller's ip-address-type defaults to ipv4
    # and the VPC has no IPv6 block, so an IPv6 source range admits nobody
    # (https://kubernetes-sigs.github.io/aws-load-balancer-controller/v2.17/guide/service/annotations/#ip-address-type).
    if "sshAllowedCidrs" not in ok:
        return []
    cidrs = ok["sshAllowedCidrs"]
    if not cidrs:
        return [
            error(
                SSH_CIDRS,
                "sshAllowedCidrs",
                cidrs,
                "the list is empty: give at least one CIDR that may reach SSH on the login node",
            )
        ]
    world = (
        None
        if ok.get("allowSshFromAnywhere") is True
        else ("opens SSH to the whole internet; set allowSshFromAnywhere=true to allow that on purpose")
    )
    return [
        error(SSH_CIDRS, "sshAllowedCidrs", cidrs, why)
        for why in rules.cidr_blocks(cidrs, ipv6=_SSH_IPV6, world=world)
    ]


def api_cidrs(ok: Mapping[str, Any]) -> list[Problem]:
    """IPv4 blocks only; 0.0.0.0/0 only with allowApiFromAnywhere. Unset, the SSH blocks, checked
    as the API endpoint's (an invalid SSH list is reported once, as sshAllowedCidrs)."""
    # The public endpoint of an IPv4 cluster takes IPv4 blocks only (EKS API reference,
    # VpcConfigRequest.publicAccessCidrs:
    # https://docs.aws.amazon.com/eks/latest/APIReference/API_VpcConfigRequest.html).
    cidrs, defaulted = ok.get("apiAllowedCidrs"), ok.get("apiAllowedCidrs") == []
    if defaulted:
        cidrs = ok.get("sshAllowedCidrs") if not ssh_cidrs(ok) else None
    world = (
        None
        if ok.get("allowApiFromAnywhere") is True
        else (
            "opens the Kubernetes API endpoint to the whole internet; set allowApiFromAnywhere=true to "
            "allow that on purpose"
        )
    )
    found = rules.cidr_blocks(
        cidrs or [], world=world, ipv6="is IPv6; the API endpoint of this IPv4 cluster takes IPv4 blocks only"
    )
    if defaulted:
        found = [
            why + "; apiAllowedCidrs is unset and defaults to sshAllowedCidrs: set it to the IPv4 "
            "blocks `pulumi up` and kubectl run from"
            for why in found
        ]
    return [error(API_CIDRS, "apiAllowedCidrs", cidrs, why) for why in found]


def someone_can_log_in(ok: Mapping[str, Any]) -> list[Problem]:
    """A root key or an admin user: without either the login node admits nobody who can manage
    the cluster. Checked on the raw `users` value (its own rules report what is wrong in it)."""
    if "sshPublicKey" not in ok or ok["sshPublicKey"].strip():
        return []
    listed = ok.get("users")
    admins = (
        [u for u in listed if isinstance(u, dict) and u.get("admin") is True]
        if isinstance(listed, list)
        else []
    )
    if admins:
        return []
    return [
        error(
            SOMEONE_CAN_LOG_IN,
            "sshPublicKey",
            "",
            "a root key, or at least one user with admin: true in users; with "
            "neither, nobody could log in to manage the cluster (set it with `pulumi config set "
            'sshPublicKey "$(cat ~/.ssh/id_ed25519.pub)"`)',
        )
    ]


def _pairings() -> str:
    return ", ".join(f"{c}.x <-> {s}.x" for c, s in versions.SLINKY_PAIRING.items())


def chart_pairs_with_slurm(ok: Mapping[str, Any]) -> list[Problem]:
    """The Slinky chart's Slurm release (model/facts/versions.py SLINKY_PAIRING) is slurmVersion's."""
    chart, slurm = ok.get("slinkyChartVersion"), ok.get("slurmVersion")
    if chart is None or slurm is None:
        return []
    paired = versions.slurm_release_for_chart(chart)
    if paired is None:
        return [
            error(
                CHART_PAIRS_WITH_SLURM,
                "slinkyChartVersion",
                chart,
                f"a Slinky chart with a known Slurm pairing: {_pairings()}",
            )
        ]
    if not slurm.startswith(paired + "."):
        return [
            error(
                CHART_PAIRS_WITH_SLURM,
                "slurmVersion",
                slurm,
                f"Slinky chart {chart} runs Slurm {paired}.x; the slurmd image "
                f"must be built on the same release as slurmctld (pairings: {_pairings()})",
            )
        ]
    return []


def image_tag_names_slurm(ok: Mapping[str, Any]) -> list[Problem]:
    tag, slurm = ok.get("slurmdImageTag"), ok.get("slurmVersion")
    if tag is None or slurm is None or tag.startswith(slurm + "-"):
        return []
    return [
        error(
            IMAGE_TAG_NAMES_SLURM,
            "slurmdImageTag",
            tag,
            f"a tag that starts with the Slurm version '{slurm}-' so the "
            f"image and slurmctld pair up (e.g. {slurm}-torch2.13-cu133-mpi)",
        )
    ]


def dlc_registry_known(ok: Mapping[str, Any]) -> list[Problem]:
    dlc, region = ok.get("dlcBaseImage"), ok.get("aws:region")
    if dlc is None or region is None or registry_host(dlc) is not None or dlc_registry(region) is not None:
        return []
    return [
        error(
            DLC_REGISTRY_KNOWN,
            "dlcBaseImage",
            dlc,
            f"no Deep Learning Containers registry is known for {region}: give "
            "the full reference with its registry host",
        )
    ]


def slurmd_base_is_slurm(ok: Mapping[str, Any]) -> list[Problem]:
    """The slurmd base image is of slurmVersion, on the flavour the release pairs with
    (model/facts/versions.py SLURMD_BASE_FLAVOUR)."""
    base, slurm = ok.get("slurmdBaseImage"), ok.get("slurmVersion")
    if base is None or slurm is None:
        return []
    flavour = versions.slurmd_base_flavour(slurm)
    if flavour and f":{slurm}-{flavour}" not in base.split("@")[0]:
        return [
            error(
                SLURMD_BASE_IS_SLURM,
                "slurmdBaseImage",
                base,
                f"a Slinky slurmd image of Slurm {slurm} on {flavour}, the "
                "flavour the image's CUDA toolchain builds on "
                f"(e.g. ghcr.io/slinkyproject/slurmd:{slurm}-{flavour})",
            )
        ]
    if not flavour and f":{slurm}" not in base:
        return [
            error(
                SLURMD_BASE_IS_SLURM,
                "slurmdBaseImage",
                base,
                f"a Slinky slurmd image of Slurm {slurm} "
                f"(e.g. ghcr.io/slinkyproject/slurmd:{slurm}-ubuntu24.04)",
            )
        ]
    return []


def kubernetes_for_slinky(ok: Mapping[str, Any]) -> list[Problem]:
    """At least the Kubernetes the Slinky operator needs (model/facts/versions.py SLINKY_MIN_KUBERNETES)."""
    version, minimum = ok.get("kubernetesVersion"), versions.SLINKY_MIN_KUBERNETES
    if version is None or tuple(map(int, version.split("."))) >= tuple(map(int, minimum.split("."))):
        return []
    return [
        error(KUBERNETES_FOR_SLINKY, "kubernetesVersion", version, f"Slinky needs Kubernetes >= {minimum}")
    ]


def preview_builds_locally(ok: Mapping[str, Any]) -> list[Problem]:
    """With the in-region builder a preview never builds: the build runs in a Pulumi dynamic
    resource, and the engine sends a provider that does not support previews no Create or Update
    during a preview (pulumi/pulumi pkg/resource/plugin/provider_plugin.go at v3.272.0, Create and
    Update with req.Preview; the Python dynamic provider answers Configure without
    supportsPreview: sdk/python/lib/pulumi/dynamic/__main__.py). Nor could it: the build reads its
    context from the stack's bucket, which only `up` uploads; and building from the program itself
    at preview would write to the account outside the state (docs/decisions/image-builder.md)."""
    if not ok.get("buildImageOnPreview") or ok.get("imageBuilder") != image_builder.CODEBUILD:
        return []
    return [
        warning(
            PREVIEW_BUILDS_LOCALLY,
            "buildImageOnPreview",
            True,
            "buildImageOnPreview = true builds at preview only with imageBuilder = local: with "
            "codebuild a preview starts no build and `up` builds in the region when the image's inputs "
            "change (why a preview cannot build in the region: docs/decisions/image-builder.md); set "
            "imageBuilder to local to build at preview, or remove buildImageOnPreview",
        )
    ]


def runner_provider_keys(given: Mapping[str, str], builder: Any) -> list[Problem]:
    """With the in-region builder, each AWS provider key the build's runner would not honour
    (image_builder.RUNNER_IGNORED_PROVIDER_KEYS), given as `given` shows it (secrets withheld)."""
    if builder != image_builder.CODEBUILD:
        return []
    return [
        error(
            RUNNER_PROVIDER_KEYS,
            key,
            given[key],
            "not with imageBuilder = codebuild: the in-region build's runner calls CodeBuild with "
            "aws:region and aws:profile only, not as this key says; put the credentials, role or "
            "endpoints in an AWS profile and set aws:profile, or set imageBuilder to local",
        )
        for key in sorted(given)
        if key in image_builder.RUNNER_IGNORED_PROVIDER_KEYS
    ]


CROSS_RULES: tuple[CrossRule, ...] = (
    ssh_cidrs,
    api_cidrs,
    someone_can_log_in,
    chart_pairs_with_slurm,
    image_tag_names_slurm,
    dlc_registry_known,
    slurmd_base_is_slurm,
    kubernetes_for_slinky,
    vpc_subnets.keys_fit,
    preview_builds_locally,
)


def cross_rules(day: datetime.date) -> tuple[CrossRule, ...]:
    """CROSS_RULES and those that read the support calendar on `day`."""
    return CROSS_RULES + (support_calendar.cert_manager_fits(day),)


def pools(ok: Mapping[str, Any], values: Mapping[str, Any]) -> tuple[list[gpu_pools.GpuPool], list[Problem]]:
    """gpuPools, or the one pool of gpuInstanceType and gpuNodeCount when it is empty. Only pools
    whose own values are valid come back (the account checks skip the rest)."""
    zone, root_gib, raw = values["availabilityZone"], values["gpuRootVolumeGiB"], values["gpuPools"]
    zone = zone if isinstance(zone, str) else ""
    if isinstance(raw, str):  # not JSON
        return [], [error(POOLS_JSON, "gpuPools", raw, "a list of pools as JSON")]
    if raw:
        return gpu_pools.pools_from_config(raw, zone, root_gib)
    if raw != []:
        return [], [error(POOLS_JSON, "gpuPools", raw, "a list of pools")]
    found = gpu_pools.default_pool(
        ok.get("gpuInstanceType"),
        values["gpuNodeCount"],
        zone,
        root_gib,
        ok.get("gpuMinNodes", gpu_pools.FROM_NODE_COUNT),
        ok.get("gpuMaxNodes", gpu_pools.FROM_NODE_COUNT),
        values["gpuCapacityReservationId"],
    )
    return found, gpu_pools.default_pool_problems(
        ok.get("gpuNodeCount"), ok.get("gpuMinNodes"), ok.get("gpuMaxNodes")
    )


def autoscaling_fits(ok: Mapping[str, Any], found: list[gpu_pools.GpuPool]) -> list[Problem]:
    """Where a pool autoscales: a cluster-autoscaler release of the cluster's Kubernetes minor
    (model/facts/versions.py CLUSTER_AUTOSCALER_FOR_KUBERNETES), and a warning below the Kubernetes
    KEDA's release is tested on (versions.KEDA_MIN_KUBERNETES)."""
    version = ok.get("kubernetesVersion")
    scaled = [p for p in found if p.autoscales]
    if not scaled or version is None:
        return []
    key = scaled[0].key("maxNodes")
    # The scalers read the pools' pending work from the metrics store (model/builders/autoscaling.py): with
    # no store a pool would stay at minNodes whatever is queued.
    if ok.get("metrics") is False:
        return [
            error(
                AUTOSCALING_NEEDS_METRICS,
                "metrics",
                False,
                f"true, since {key} makes a pool autoscale and its scaler reads the "
                "metrics store (or set the pool's minNodes equal to its maxNodes)",
            )
        ]
    if versions.cluster_autoscaler_tag(version) is None:
        return [
            error(
                AUTOSCALER_FOR_KUBERNETES,
                "kubernetesVersion",
                version,
                f"a Kubernetes minor with a pinned cluster-autoscaler release "
                f"({', '.join(versions.CLUSTER_AUTOSCALER_FOR_KUBERNETES)}), since {key} makes a pool "
                "autoscale",
            )
        ]
    minimum = versions.KEDA_MIN_KUBERNETES
    if tuple(map(int, version.split("."))) < tuple(map(int, minimum.split("."))):
        return [
            warning(
                KEDA_FOR_KUBERNETES,
                "kubernetesVersion",
                version,
                f"kubernetesVersion {version}: KEDA {versions.KEDA.version}, "
                f"which scales the autoscaling pools, is supported and tested on Kubernetes {minimum} or "
                "higher (its chart's NOTES.txt); upgrade the cluster",
            )
        ]
    return []


def named_users(values: Mapping[str, Any]) -> tuple[list[users.User], list[Problem]]:
    """The users of `users`; a value that is not JSON is refused as such."""
    raw = values["users"]
    if isinstance(raw, str):  # not JSON
        return [], [error(USERS_JSON, "users", raw, "a list of users as JSON")]
    return users.users_from_config(raw)


# The keys that make the one pool of a stack without gpuPools, each with the pool field that
# replaces it in gpuPools. (availabilityZone and gpuRootVolumeGiB stay the pools' defaults.)
OVERRIDDEN_BY_POOLS = {
    "gpuInstanceType": "instanceType",
    "gpuNodeCount": "nodeCount",
    "gpuMinNodes": "minNodes",
    "gpuMaxNodes": "maxNodes",
    "gpuCapacityReservationId": "capacityReservationId",
}


def overridden_by_pools(
    values: Mapping[str, Any], defaults: Mapping[str, Any], raw: Mapping[str, str | None]
) -> list[Problem]:
    """A warning for each key of OVERRIDDEN_BY_POOLS set to other than its default beside a
    gpuPools list: the program reads each pool's own field instead, so the value is ignored. Set
    or not, the key always has a value: the CLI hands the program Pulumi.yaml's default for a key
    the stack leaves unset (pulumi/pulumi pkg/workspace/config.go, mergeConfig),
    so only a value other than the default can be the stack's own."""
    if not isinstance(values["gpuPools"], list) or not values["gpuPools"]:
        return []
    return [
        warning(
            OVERRIDDEN_BY_GPU_POOLS,
            key,
            raw[key],
            f"{key} = {raw[key]!r} is ignored: gpuPools overrides it (each pool "
            f"sets its own {field}); remove it with `pulumi config rm {key}`",
        )
        for key, field in OVERRIDDEN_BY_POOLS.items()
        if raw.get(key) is not None and values[key] != defaults[key]
    ]


@dataclass(frozen=True)
class Checked:
    values: dict[str, Any]  # every key's value, defaults applied (clusterName, apiAllowedCidrs)
    accepted: dict[str, Any]  # the values that passed their own key's rules
    pools: list[gpu_pools.GpuPool]
    problems: list[Problem]  # errors and warnings, in schema order
    users: list[users.User] = field(default_factory=list)  # the valid entries of `users`


def check(raw: Mapping[str, str | None], stack: str, day: datetime.date) -> Checked:
    """Every key of schema(day) read from `raw` (key name -> config string, None when unset) and
    its rules applied whatever the other keys' found, then the rules over several keys on the
    values that passed: every problem at once, none twice."""
    values: dict[str, Any] = {}
    ok: dict[str, Any] = {}
    problems: list[Problem] = []
    keys = schema(day)
    for key in keys:
        values[key.name] = value = read(key, raw.get(key.name))
        if key.name == "clusterName" and value == "":
            values[key.name] = value = f"slinky-eks-{stack}"
        found = _key_problems(key, raw.get(key.name), value)
        problems += found
        if not any(p.is_error for p in found):
            ok[key.name] = value
    for rule in cross_rules(day):
        problems += rule(ok)
    if values["apiAllowedCidrs"] == []:
        values["apiAllowedCidrs"] = values["sshAllowedCidrs"] if not ssh_cidrs(ok) else []
    found_pools, pool_problems = pools(ok, values)
    pool_problems += autoscaling_fits(ok, found_pools)
    pool_problems += overridden_by_pools(values, {k.name: k.default for k in keys}, raw)
    pool_problems += existing_cluster.mode_rules(values, raw, {k.name: k.default for k in keys}, found_pools)
    pool_problems += vpc_subnets.own_network_keys_ignored(values, {k.name: k.default for k in keys})
    found_users, user_problems = named_users(values)
    return Checked(values, ok, found_pools, problems + pool_problems + user_problems, found_users)


def undeclared_keys(project: str, given: Mapping[str, str], declared: list[str]) -> list[Problem]:
    """Keys under the project's namespace that the schema does not declare (a misspelling the
    program would otherwise ignore), each with the closest declared key. `given` maps each key to
    its value as shown (secrets withheld)."""
    out = []
    for key in sorted(given):
        namespace, _, name = key.partition(":")
        if namespace != project or name in declared:
            continue
        close = difflib.get_close_matches(name, declared, n=1, cutoff=0.6)
        hint = f"did you mean {project}:{close[0]}? " if close else ""
        out.append(
            error(
                UNDECLARED_KEY,
                key,
                given[key],
                f"not a key of this project (Pulumi.yaml declares the keys): "
                f"{hint}Remove it with `pulumi config rm {name}`",
            )
        )
    return out


def project_keys(day: datetime.date) -> list[str]:
    """The keys of the project's own namespace."""
    return [k.name for k in schema(day) if ":" not in k.name]
